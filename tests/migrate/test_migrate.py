"""`compat-clone migrate`: the codemod on fixtures and snippets, and the migrated code run.

Fixtures live in `tests/migrate/migrate_fixtures/<case>/before` (old code) and
`.../after` (what `compat-clone migrate --write` must make of it), with
`reports.txt` listing the uses the tool must report instead of rewriting
(`PATH:LINE:COL: fragment of the message`) and `args.txt` the options a case
is migrated with (`--to keras3` for `keras3_rules`). The file names there do not match
`test_*.py`, so pytest does not collect them.

The codemod tests need libcst (in `requirements/default.txt`): they fail in the
default environment without it and skip in a matrix environment
(`COMPAT_CLONE_ENV` set) that does not install it. The run tests execute each
migrated fixture with the real Keras of the environment; they need no libcst.

This module holds the fixture tests (--write, diff, --check, idempotence,
reports) and the command line; one rule per snippet is in
tests/migrate/test_migrate_snippets.py, and the migrated fixtures run with the real
Keras of the environment in tests/migrate/test_migrate_runs.py.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

from compat_clone.tools import migrate as _migrate

FIXTURES = Path(__file__).parent / "migrate_fixtures"
CASES = sorted(p.name for p in FIXTURES.iterdir() if (p / "before").is_dir())

_HAS_LIBCST = importlib.util.find_spec("libcst") is not None
needs_libcst = pytest.mark.skipif(
    not _HAS_LIBCST and bool(os.environ.get("COMPAT_CLONE_ENV")),
    reason="libcst is not installed in this matrix environment",
)


def _files(root: Path) -> Dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.py")) if "__pycache__" not in p.parts}


def run_cli(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(prog="compat-clone migrate")
    _migrate.add_arguments(parser)
    return _migrate.run(parser.parse_args(argv))


def _copy_before(case: str, tmp_path: Path) -> Path:
    dest = tmp_path / case
    shutil.copytree(FIXTURES / case / "before", dest)
    return dest


def _case_args(case: str) -> List[str]:
    """The options a case is migrated with (`args.txt`, e.g. `--to keras3`), none by default."""
    path = FIXTURES / case / "args.txt"
    return path.read_text().split() if path.exists() else []


def _expected_reports(case: str) -> List[str]:
    path = FIXTURES / case / "reports.txt"
    if not path.exists():
        return []
    return [line for line in path.read_text().splitlines() if line and not line.startswith("#")]


# ---------------------------------------------------------------------------
# The fixtures: --write, diff, --check, idempotence, reports


@needs_libcst
@pytest.mark.parametrize("case", CASES)
def test_write_gives_expected_files(case: str, tmp_path: Path, capsys: Any) -> None:
    root = _copy_before(case, tmp_path)
    assert run_cli(["--write", *_case_args(case), str(root)]) == _migrate.EXIT_OK
    got = _files(root)
    expected = _files(FIXTURES / case / "after")
    assert sorted(got) == sorted(expected)
    for name in expected:
        assert got[name].decode() == expected[name].decode(), name
    assert got != _files(FIXTURES / case / "before"), "the fixture must need a migration"


@needs_libcst
@pytest.mark.parametrize("case", CASES)
def test_reports_uses_it_cannot_rewrite(case: str, tmp_path: Path, capsys: Any) -> None:
    root = _copy_before(case, tmp_path)
    run_cli(["--check", *_case_args(case), str(root)])
    err = capsys.readouterr().err
    prefix = str(root) + os.sep
    reported = [line[len(prefix) :] for line in err.splitlines() if line.startswith(prefix)]
    expected = _expected_reports(case)
    assert len(reported) == len(expected), err
    for want in expected:
        location, _, fragment = want.partition(": ")
        matches = [r for r in reported if r.startswith(location + ": ")]
        assert matches, f"no report at {location}:\n{err}"
        assert fragment in matches[0], matches[0]


@needs_libcst
@pytest.mark.parametrize("case", CASES)
def test_second_run_changes_nothing(case: str, tmp_path: Path) -> None:
    root = tmp_path / case
    shutil.copytree(FIXTURES / case / "after", root)
    before = _files(root)
    args = _case_args(case)
    assert run_cli(["--write", *args, str(root)]) == _migrate.EXIT_OK
    assert _files(root) == before
    to = args[args.index("--to") + 1] if "--to" in args else None
    for path in _migrate.iter_python_files([str(root)]):
        assert not _migrate.migrate_path(path, to=to).changed, path


@needs_libcst
def test_diff_mode_prints_a_unified_diff_and_writes_nothing(tmp_path: Path, capsys: Any) -> None:
    root = _copy_before("keras3_script", tmp_path)
    before = _files(root)
    assert run_cli([str(root)]) == _migrate.EXIT_OK
    out = capsys.readouterr().out
    assert _files(root) == before
    path = root / "finetune.py"
    assert f"--- a/{path}\n+++ b/{path}\n" in out
    assert "-student = keras.models.clone_model(\n" in out
    assert "+student = compat_clone.clone_model(\n" in out
    assert "+    copy_weights=True,  # start from the trained weights\n" in out
    assert "-student.set_weights(base.get_weights())  # start from the trained weights\n" in out
    assert "+import compat_clone\n" in out
    # the diff applies: rebuilding the new file from the old one and the hunks
    new = apply_unified_diff(before["finetune.py"].decode(), out)
    assert new == (FIXTURES / "keras3_script" / "after" / "finetune.py").read_text()


def apply_unified_diff(old: str, diff: str) -> str:
    """A minimal `patch` for one file's unified diff (enough to check ours)."""
    old_lines = old.splitlines(keepends=True)
    out: List[str] = []
    i = 0
    lines = diff.splitlines(keepends=True)
    k = 0
    while k < len(lines):
        line = lines[k]
        if line.startswith("@@"):
            start = int(line.split()[1].split(",")[0][1:]) - 1
            out.extend(old_lines[i:start])
            i = start
            k += 1
            while k < len(lines) and not lines[k].startswith(("@@", "--- ")):
                tag, text = lines[k][0], lines[k][1:]
                if tag == " ":
                    out.append(old_lines[i])
                    i += 1
                elif tag == "-":
                    i += 1
                elif tag == "+":
                    out.append(text)
                k += 1
        else:
            k += 1
    out.extend(old_lines[i:])
    return "".join(out)


@needs_libcst
def test_check_exit_status(tmp_path: Path, capsys: Any) -> None:
    root = _copy_before("notebook", tmp_path)
    before = _files(root)
    assert run_cli(["--check", str(root)]) == _migrate.EXIT_CHANGES
    captured = capsys.readouterr()
    assert captured.out == f"would migrate {root / 'transfer.py'}\n"
    assert _files(root) == before, "--check must not write"
    assert run_cli(["--write", str(root)]) == _migrate.EXIT_OK
    assert run_cli(["--check", str(root)]) == _migrate.EXIT_OK
    capsys.readouterr()


@needs_libcst
def test_check_fails_on_a_use_to_fix_by_hand(tmp_path: Path, capsys: Any) -> None:
    # already migrated, but multi_gpu_model and the alias remain: CI must still fail
    root = tmp_path / "legacy"
    shutil.copytree(FIXTURES / "keras2_legacy" / "after", root)
    assert run_cli(["--check", str(root)]) == _migrate.EXIT_CHANGES
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "multi_gpu_model" in captured.err


@needs_libcst
def test_write_and_check_are_exclusive(capsys: Any) -> None:
    with pytest.raises(SystemExit) as exc:
        run_cli(["--write", "--check", "x.py"])
    assert exc.value.code == 2


@needs_libcst
def test_unparsable_file_is_reported_and_skipped(tmp_path: Path, capsys: Any) -> None:
    bad = tmp_path / "py2_script.py"
    bad_source = b'import keras\nprint "clone:", keras.models.clone_model(m)\n'
    bad.write_bytes(bad_source)
    unrelated = tmp_path / "unrelated.py"
    unrelated.write_text("def f(:\n    pass\n")
    good = tmp_path / "good.py"
    good.write_text("import keras\nc = keras.models.clone_model(m)\n")
    assert run_cli(["--write", str(tmp_path)]) == _migrate.EXIT_ERROR
    err = capsys.readouterr().err
    assert f"{bad}:2:1: does not parse, skipped (Missing parentheses" in err
    assert f"{unrelated}:1:" in err
    assert bad.read_bytes() == bad_source
    assert unrelated.read_text() == "def f(:\n    pass\n"
    assert good.read_text() == "import compat_clone\nc = compat_clone.clone_model(m)\n"


@needs_libcst
def test_missing_path_is_an_error(tmp_path: Path, capsys: Any) -> None:
    assert run_cli([str(tmp_path / "nope.py")]) == _migrate.EXIT_ERROR
    assert "no such file or folder" in capsys.readouterr().err


@needs_libcst
def test_folders_are_walked_for_py_files_only(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("")
    (tmp_path / "pkg" / "notes.txt").write_text("keras.models.clone_model(m)")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "b.py").write_text("")
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "pyvenv.cfg").write_text("")
    (tmp_path / "env" / "c.py").write_text("")
    (tmp_path / "pkg" / "__pycache__").mkdir()
    (tmp_path / "pkg" / "__pycache__" / "d.py").write_text("")
    (tmp_path / "z.py").write_text("")
    found = list(_migrate.iter_python_files([str(tmp_path)]))
    # a folder's files (sorted) before its subfolders (sorted)
    assert found == [str(tmp_path / "z.py"), str(tmp_path / "pkg" / "a.py")]


def test_missing_libcst_gives_install_hint(monkeypatch: Any, capsys: Any) -> None:
    monkeypatch.setitem(sys.modules, "libcst", None)
    assert run_cli(["x.py"]) == _migrate.EXIT_ERROR
    err = capsys.readouterr().err
    assert "needs libcst" in err and "pip install 'libcst>=1.0'" in err and "`compat-clone[migrate]` extra" in err
    with pytest.raises(ImportError, match="needs libcst"):
        _migrate.migrate_source("x = 1\n")


def test_importing_migrate_imports_no_libcst_and_no_framework() -> None:
    code = (
        "import sys, compat_clone.tools.migrate, compat_clone.tools.cli\n"
        "bad = [m for m in ('libcst', 'keras', 'tensorflow', 'tf_keras', 'jax', 'torch')"
        " if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@needs_libcst
def test_command_line_entry_point(tmp_path: Path) -> None:
    script = tmp_path / "old.py"
    script.write_text("from tensorflow.keras.models import clone_model\nc = clone_model(m)\n")
    run = subprocess.run(
        [sys.executable, "-m", "compat_clone", "migrate", "--check", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1, run.stderr
    assert run.stdout == f"would migrate {script}\n"
    run = subprocess.run(
        [sys.executable, "-m", "compat_clone", "migrate", str(script)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert "+from compat_clone import clone_model\n" in run.stdout
