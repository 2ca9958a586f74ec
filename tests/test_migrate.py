"""`compat-clone migrate`: the codemod on fixtures and snippets, and the migrated code run.

Fixtures live in `tests/migrate_fixtures/<case>/before` (old code) and
`.../after` (what `compat-clone migrate --write` must make of it), with
`reports.txt` listing the uses the tool must report instead of rewriting
(`PATH:LINE:COL: fragment of the message`). The file names there do not match
`test_*.py`, so pytest does not collect them.

The codemod tests need libcst (in `requirements/default.txt`): they fail in the
default environment without it and skip in a matrix environment
(`COMPAT_CLONE_ENV` set) that does not install it. The run tests execute each
migrated fixture with the real Keras of the environment; they need no libcst.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import numpy as np
import pytest

from compat_clone.tools import migrate as _migrate
from conftest import families_under_test

FIXTURES = Path(__file__).parent / "migrate_fixtures"
CASES = sorted(p.name for p in FIXTURES.iterdir() if (p / "before").is_dir())

_HAS_LIBCST = importlib.util.find_spec("libcst") is not None
needs_libcst = pytest.mark.skipif(
    not _HAS_LIBCST and bool(os.environ.get("COMPAT_CLONE_ENV")),
    reason="libcst is not installed in this matrix environment",
)


def _files(root: Path) -> Dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*.py"))
        if "__pycache__" not in p.parts
    }


def _cli(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(prog="compat-clone migrate")
    _migrate.add_arguments(parser)
    return _migrate.run(parser.parse_args(argv))


def _copy_before(case: str, tmp_path: Path) -> Path:
    dest = tmp_path / case
    shutil.copytree(FIXTURES / case / "before", dest)
    return dest


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
    assert _cli(["--write", str(root)]) == _migrate.EXIT_OK
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
    _cli(["--check", str(root)])
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
    assert _cli(["--write", str(root)]) == _migrate.EXIT_OK
    assert _files(root) == before
    for path in _migrate.iter_python_files([str(root)]):
        assert not _migrate.migrate_path(path).changed, path


@needs_libcst
def test_diff_mode_prints_a_unified_diff_and_writes_nothing(tmp_path: Path, capsys: Any) -> None:
    root = _copy_before("keras3_script", tmp_path)
    before = _files(root)
    assert _cli([str(root)]) == _migrate.EXIT_OK
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
    new = _apply_unified_diff(before["finetune.py"].decode(), out)
    assert new == (FIXTURES / "keras3_script" / "after" / "finetune.py").read_text()


def _apply_unified_diff(old: str, diff: str) -> str:
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
    assert _cli(["--check", str(root)]) == _migrate.EXIT_CHANGES
    captured = capsys.readouterr()
    assert captured.out == f"would migrate {root / 'transfer.py'}\n"
    assert _files(root) == before, "--check must not write"
    assert _cli(["--write", str(root)]) == _migrate.EXIT_OK
    assert _cli(["--check", str(root)]) == _migrate.EXIT_OK
    capsys.readouterr()


@needs_libcst
def test_check_fails_on_a_use_to_fix_by_hand(tmp_path: Path, capsys: Any) -> None:
    # already migrated, but multi_gpu_model and the alias remain: CI must still fail
    root = tmp_path / "legacy"
    shutil.copytree(FIXTURES / "keras2_legacy" / "after", root)
    assert _cli(["--check", str(root)]) == _migrate.EXIT_CHANGES
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "multi_gpu_model" in captured.err


@needs_libcst
def test_write_and_check_are_exclusive(capsys: Any) -> None:
    with pytest.raises(SystemExit) as exc:
        _cli(["--write", "--check", "x.py"])
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
    assert _cli(["--write", str(tmp_path)]) == _migrate.EXIT_ERROR
    err = capsys.readouterr().err
    assert f"{bad}:2:1: does not parse, skipped (Missing parentheses" in err
    assert f"{unrelated}:1:" in err
    assert bad.read_bytes() == bad_source
    assert unrelated.read_text() == "def f(:\n    pass\n"
    assert good.read_text() == "import compat_clone\nc = compat_clone.clone_model(m)\n"


@needs_libcst
def test_missing_path_is_an_error(tmp_path: Path, capsys: Any) -> None:
    assert _cli([str(tmp_path / "nope.py")]) == _migrate.EXIT_ERROR
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
    assert _cli(["x.py"]) == _migrate.EXIT_ERROR
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


# ---------------------------------------------------------------------------
# Snippets: one rule each

SNIPPETS = {
    "attribute call through import keras": (
        "import keras\nc = keras.models.clone_model(m)\n",
        "import compat_clone\nc = compat_clone.clone_model(m)\n",
    ),
    "clone_and_build_model: compiled by default": (
        "import tensorflow as tf\nc = tf.keras.models.clone_and_build_model(m)\n",
        "import compat_clone\nc = compat_clone.clone_model(m, compile=True)\n",
    ),
    "clone_and_build_model: positional, None and False dropped": (
        "import tf_keras\nc = tf_keras.models.clone_and_build_model(m, x, None, None, True, False, None, None)\n",
        "import compat_clone\nc = compat_clone.clone_model(m, x, compile=True)\n",
    ),
    "clone_and_build_model: compile_clone=False": (
        "import keras\nc = keras.models.clone_and_build_model(model=m, compile_clone=False)\nd = keras.layers.Dense(1)\n",
        "import keras\nimport compat_clone\nc = compat_clone.clone_model(model=m)\nd = keras.layers.Dense(1)\n",
    ),
    "clone_and_build_model: compile_clone an expression, input_tensors keyword": (
        "from tensorflow import keras\nc = keras.models.clone_and_build_model(m, input_tensors=i, compile_clone=flag)\n",
        "import compat_clone\nc = compat_clone.clone_model(m, input_tensors=i, compile=flag)\n",
    ),
    "import keras.models": (
        "import keras.models\n\nc = keras.models.clone_model(m)\n",
        "import compat_clone\n\nc = compat_clone.clone_model(m)\n",
    ),
    "from tensorflow import keras, still used": (
        "from tensorflow import keras\n\nc = keras.models.clone_model(m)\nd = keras.layers.Dense(2)\n",
        "from tensorflow import keras\nimport compat_clone\n\n"
        "c = compat_clone.clone_model(m)\nd = keras.layers.Dense(2)\n",
    ),
    "import tf_keras as keras": (
        "import tf_keras as keras\nc = keras.models.clone_model(m)\n",
        "import compat_clone\nc = compat_clone.clone_model(m)\n",
    ),
    "tensorflow.compat.v1": (
        "import tensorflow.compat.v1 as tf\nc = tf.keras.models.clone_model(m)\n",
        "import compat_clone\nc = compat_clone.clone_model(m)\n",
    ),
    "one name dropped from a multi-name import": (
        "import os, keras, sys\nc = keras.models.clone_model(m)\nprint(os, sys)\n",
        "import os, sys\nimport compat_clone\nc = compat_clone.clone_model(m)\nprint(os, sys)\n",
    ),
    "last name dropped from a multi-name import": (
        "import os, keras\nc = keras.models.clone_model(m)\nprint(os)\n",
        "import os\nimport compat_clone\nc = compat_clone.clone_model(m)\nprint(os)\n",
    ),
    "from-import split, comments kept": (
        "from keras.models import (\n    Model,  # the class\n    clone_model  # the function\n)\n",
        "from keras.models import (\n    Model,  # the class\n)\n"
        "from compat_clone import clone_model  # the function\n",
    ),
    "from-import split, clone_model first": (
        "from keras.models import clone_model, Model\n",
        "from keras.models import Model\nfrom compat_clone import clone_model\n",
    ),
    "from-import with alias; fold through it": (
        "from keras.models import clone_model as cm\nc = cm(m)\nc.set_weights(m.get_weights())\n",
        "from compat_clone import clone_model as cm\nc = cm(m, copy_weights=True)\n",
    ),
    "no fold when the clone rebinds the source": (
        "import keras\nm = keras.models.clone_model(m)\nm.set_weights(m.get_weights())\n",
        "import compat_clone\nm = compat_clone.clone_model(m)\nm.set_weights(m.get_weights())\n",
    ),
    "no fold from another model: a hard update instead": (
        "import keras\nc = keras.models.clone_model(a)\nc.set_weights(b.get_weights())\n",
        "import compat_clone\nc = compat_clone.clone_model(a)\ncompat_clone.copy_weights(b, c)\n",
    ),
    "no fold when not immediately following: a hard update instead": (
        "import keras\nc = keras.models.clone_model(m)\nc.compile('sgd', 'mse')\n"
        "c.set_weights(m.get_weights())\n",
        "import compat_clone\nc = compat_clone.clone_model(m)\nc.compile('sgd', 'mse')\n"
        "compat_clone.copy_weights(m, c)\n",
    ),
    "no fold with *args: a hard update instead": (
        "import keras\nc = keras.models.clone_model(*args)\nc.set_weights(m.get_weights())\n",
        "import compat_clone\nc = compat_clone.clone_model(*args)\ncompat_clone.copy_weights(m, c)\n",
    ),
    "fold with model= keyword": (
        "import keras\nc = keras.models.clone_model(model=m, clone_function=f)\n"
        "c.set_weights(m.get_weights())\n",
        "import compat_clone\nc = compat_clone.clone_model(model=m, clone_function=f, copy_weights=True)\n",
    ),
    "fold onto attributes, on one line": (
        "import keras\nself.t = keras.models.clone_model(self.m); self.t.set_weights(self.m.get_weights())\n",
        "import compat_clone\nself.t = compat_clone.clone_model(self.m, copy_weights=True)\n",
    ),
    "fold into a call whose ) has its own line": (
        "import keras\nc = keras.models.clone_model(\n    m,\n    clone_function=f\n)\n"
        "c.set_weights(m.get_weights())  # same start\n",
        "import compat_clone\nc = compat_clone.clone_model(\n    m,\n    clone_function=f,\n"
        "    copy_weights=True  # same start\n)\n",
    ),
    "fold keeps comments of the set_weights line": (
        "import keras\n# the twin\nc = keras.models.clone_model(m)  # clone\n"
        "# copy weights\nc.set_weights(m.get_weights())  # sync\nprint(c)\n",
        "import compat_clone\n# the twin\n# copy weights\n# sync\n"
        "c = compat_clone.clone_model(m, copy_weights=True)  # clone\nprint(c)\n",
    ),
    "annotated assignment": (
        "import keras\nc: keras.Model = keras.models.clone_model(m)\nc.set_weights(m.get_weights())\n",
        "import keras\nimport compat_clone\nc: keras.Model = compat_clone.clone_model(m, copy_weights=True)\n",
    ),
    "import only inside a function": (
        "def f(m):\n    from keras import models\n    return models.clone_model(m)\n",
        "import compat_clone\n\n\ndef f(m):\n    return compat_clone.clone_model(m)\n",
    ),
    "import placed after docstring, __future__ and imports": (
        '"""Doc."""\nfrom __future__ import annotations\nimport os\nimport tensorflow as tf\n\n'
        "os.environ['X'] = '1'\nc = tf.keras.models.clone_model(m)\nd = tf.constant(1)\n",
        '"""Doc."""\nfrom __future__ import annotations\nimport os\nimport tensorflow as tf\n'
        "import compat_clone\n\nos.environ['X'] = '1'\nc = compat_clone.clone_model(m)\n"
        "d = tf.constant(1)\n",
    ),
    "a removed import becomes import compat_clone in place": (
        '"""Doc."""\nx = 1\nimport keras  # framework\ny = 2\nc = keras.models.clone_model(m)\n',
        '"""Doc."""\nx = 1\nimport compat_clone\ny = 2\nc = compat_clone.clone_model(m)\n',
    ),
    "compat_clone already imported": (
        "import compat_clone\nimport keras\nc = keras.models.clone_model(m)\n",
        "import compat_clone\nc = compat_clone.clone_model(m)\n",
    ),
    "try/except fallback imports are rewritten, never removed": (
        "try:\n    from tensorflow.keras.models import clone_model\nexcept ImportError:\n"
        "    from keras.models import clone_model\nc = clone_model(m)\n",
        "try:\n    from compat_clone import clone_model\nexcept ImportError:\n"
        "    from compat_clone import clone_model\nc = clone_model(m)\n",
    ),
    "try/except module imports are kept": (
        "try:\n    import tensorflow.keras as K\nexcept ImportError:\n    import keras as K\n"
        "c = K.models.clone_model(m)\n",
        "try:\n    import tensorflow.keras as K\nexcept ImportError:\n    import keras as K\n"
        "import compat_clone\nc = compat_clone.clone_model(m)\n",
    ),
    "a name in __all__ is kept": (
        "import keras\n__all__ = ['keras']\nc = keras.models.clone_model(m)\n",
        "import keras\nimport compat_clone\n__all__ = ['keras']\nc = compat_clone.clone_model(m)\n",
    ),
    "no newline at the end": (
        "import keras\nc = keras.models.clone_model(m)",
        "import compat_clone\nc = compat_clone.clone_model(m)",
    ),
    "CRLF newlines are kept": (
        "import keras\r\nc = keras.models.clone_model(m)\r\nc.set_weights(m.get_weights())\r\n",
        "import compat_clone\r\nc = compat_clone.clone_model(m, copy_weights=True)\r\n",
    ),
}

UNCHANGED = {
    "relative imports are the user's own": (
        "from .models import clone_model\nfrom . import models\nc = clone_model(m)\n"
        "d = models.clone_model(m)\n"
    ),
    "a method of the user's class": (
        "class A:\n    def clone_model(self, m):\n        return self.clone_model(m)\n"
    ),
    "already migrated": (
        "import compat_clone\nfrom compat_clone import clone_model\n"
        "c = compat_clone.clone_model(m, copy_weights=True)\nd = clone_model(m)\n"
    ),
    "clone_model of another library": "import mylib\nc = mylib.models.clone_model(m)\n",
}


@needs_libcst
@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_snippet(name: str) -> None:
    before, after = SNIPPETS[name]
    result = _migrate.migrate_source(before.encode(), "snippet.py")
    assert result.error is None
    assert result.migrated.decode() == after
    assert not _migrate.migrate_source(result.migrated, "snippet.py").changed, "not idempotent"


@needs_libcst
@pytest.mark.parametrize("name", sorted(UNCHANGED))
def test_snippet_unchanged(name: str) -> None:
    result = _migrate.migrate_source(UNCHANGED[name], "snippet.py")
    assert not result.changed
    assert result.reports == []


@needs_libcst
def test_package_init_keeps_imports() -> None:
    source = "from tensorflow import keras\nc = keras.models.clone_model(m)\n"
    result = _migrate.migrate_source(source, "pkg/__init__.py")
    assert result.migrated.decode() == (
        "from tensorflow import keras\nimport compat_clone\nc = compat_clone.clone_model(m)\n"
    )


REPORTED = {
    "alias through a variable": (
        "import keras\nf = keras.models.clone_model\nc = f(m)\n",
        (2, 5, "used as a value"),
    ),
    "passed as a callback": (
        "import functools, keras\np = functools.partial(keras.models.clone_model, clone_function=f)\n",
        (2, 23, "used as a value"),
    ),
    "getattr by name": (
        'from keras import models\nc = getattr(models, "clone_model")(m)\n',
        (2, 5, '`getattr(..., "clone_model")`'),
    ),
    "module held in a variable": (
        "import keras\nmodels = keras.models\nc = models.clone_model(m)\n",
        (3, 5, "cannot tell which module `models` is"),
    ),
    "a parameter shadows the import": (
        "import keras.models\ndef f(keras, m):\n    return keras.models.clone_model(m)\n",
        (3, 12, "cannot tell which module `keras.models` is"),
    ),
    "star import": (
        "from tensorflow.keras.models import *\nc = clone_model(m)\n",
        (2, 5, "star import `from tensorflow.keras.models import *` (line 1)"),
    ),
    "multi_gpu_model with cpu_relocation": (
        "import keras\np = keras.utils.multi_gpu_model(m, gpus=2, cpu_relocation=True)\n",
        (2, 5, "With `cpu_relocation=True`: `multi_gpu_model` was removed"),
    ),
    "multi_gpu_model imported": (
        "from tensorflow.keras.utils import multi_gpu_model\n",
        (1, 36, 'compat_clone.clone_model(model, device="/cpu:0")'),
    ),
    "clone_and_build_model with custom_objects": (
        "import tensorflow as tf\nc = tf.keras.models.clone_and_build_model(m, custom_objects=d)\n",
        (2, 5, "has no `custom_objects`; not rewritten. Call `compat_clone.clone_model(model, compile=True)`"),
    ),
    "clone_and_build_model with target_tensors": (
        "import tensorflow as tf\nc = tf.keras.models.clone_and_build_model(m, None, [t])\n",
        (2, 5, "has no `target_tensors`; not rewritten"),
    ),
    "clone_and_build_model with in_place_reset=True": (
        "import tf_keras\nc = tf_keras.models.clone_and_build_model(m, in_place_reset=True)\n",
        (2, 5, "has no `in_place_reset`; not rewritten"),
    ),
    "clone_and_build_model with optimizer_config": (
        "import keras\nc = keras.models.clone_and_build_model(m, optimizer_config=cfg)\n",
        (2, 5, "has no `optimizer_config`; not rewritten"),
    ),
    "clone_and_build_model with *args": (
        "import keras\nc = keras.models.clone_and_build_model(*args)\n",
        (2, 5, "the arguments cannot be read; not rewritten"),
    ),
    "clone_and_build_model imported by name": (
        "from tensorflow.keras.models import clone_and_build_model\n",
        (1, 37, "`clone_and_build_model` (tf.keras 2.x; gone in Keras 3)"),
    ),
    "split import in a one-line block": (
        "if True: from keras.models import clone_model, Model\n",
        (1, 10, "not rewritten"),
    ),
}


@needs_libcst
@pytest.mark.parametrize("name", sorted(REPORTED))
def test_report(name: str) -> None:
    source, (line, column, fragment) = REPORTED[name]
    result = _migrate.migrate_source(source, "old.py")
    assert not result.changed, result.migrated.decode()
    assert len(result.reports) == 1, result.reports
    report = result.reports[0]
    assert (report.path, report.line, report.column) == ("old.py", line, column)
    assert fragment in report.why
    assert str(report).startswith(f"old.py:{line}:{column}: ")


# ---------------------------------------------------------------------------
# The migrated fixtures run with the real Keras of this environment


def _run_script(path: Path, init_globals: Any = None) -> Dict[str, Any]:
    return runpy.run_path(str(path), init_globals=init_globals, run_name="__fixture__")


def _same_weights(a: Any, b: Any) -> bool:
    wa, wb = a.get_weights(), b.get_weights()
    return len(wa) == len(wb) and all(
        x.shape == y.shape and np.array_equal(x, y) for x, y in zip(wa, wb)
    )


@pytest.mark.keras3
def test_migrated_keras3_script_runs() -> None:
    import compat_clone

    g = _run_script(FIXTURES / "keras3_script" / "after" / "finetune.py")
    base, student, baseline = g["base"], g["student"], g["baseline"]
    assert compat_clone.family_of(student).family == "keras3"
    assert student is not base
    assert _same_weights(student, base)  # BatchNormalization statistics included
    assert not _same_weights(baseline, base)
    assert [layer.trainable for layer in student.layers if layer.weights] == [False, False, True]


@pytest.mark.keras3
def test_migrated_notebook_runs() -> None:
    import compat_clone

    class _Shell:
        def run_line_magic(self, *args: Any) -> None:
            pass

    g = _run_script(
        FIXTURES / "notebook" / "after" / "transfer.py", {"get_ipython": lambda: _Shell()}
    )
    assert compat_clone.family_of(g["twin"]).family == "keras3"
    assert _same_weights(g["twin"], g["model"])
    assert tuple(g["wide"].output_shape) == (None, 3)


def test_migrated_tf_script_runs() -> None:
    # tf.keras is Keras 3 (TF >= 2.16) or Keras 2 (TF <= 2.15): never standalone Keras 2
    if not {"keras3", "tf_keras"} & set(families_under_test()):
        pytest.skip("tf.keras serves keras3 or tf_keras, neither tested in this environment")
    tf = pytest.importorskip("tensorflow")
    import compat_clone

    family = compat_clone.family_of(tf.keras.Sequential([tf.keras.Input((1,))])).family
    if family not in families_under_test():
        pytest.skip(f"tf.keras is served by {family}, not tested in this environment")
    g = _run_script(FIXTURES / "tf_script" / "after" / "target_network.py")
    agent, snapshot = g["agent"], g["snapshot"]
    assert compat_clone.family_of(agent.target).family == family
    assert agent.target is not agent.online
    # copied at clone time, so the soft update mixes equal weights
    assert all(
        np.allclose(x, y) for x, y in zip(agent.target.get_weights(), agent.online.get_weights())
    )
    assert _same_weights(snapshot, agent.online)
    assert snapshot.trainable is False


@pytest.mark.tf_keras
def test_migrated_tf_keras_package_runs(monkeypatch: Any) -> None:
    pytest.importorskip("tf_keras")
    import compat_clone

    root = FIXTURES / "tf_keras_pkg" / "after"
    monkeypatch.syspath_prepend(str(root))
    for name in [m for m in sys.modules if m == "zoo" or m.startswith("zoo.")]:
        monkeypatch.delitem(sys.modules, name)
    try:
        g = _run_script(root / "run_zoo.py")
        assert sys.modules["zoo"].__file__.startswith(str(root))
    finally:
        for name in [m for m in sys.modules if m == "zoo" or m.startswith("zoo.")]:
            del sys.modules[name]
    base, members = g["base"], g["members"]
    assert compat_clone.family_of(base).family == "tf_keras"
    assert len(members) == 3 and all(_same_weights(m, base) for m in members)
    assert not _same_weights(g["fresh"], base)
    assert g["wide"].layers[1].units == 16
    assert all(np.array_equal(p, g["predictions"][0]) for p in g["predictions"])


@pytest.mark.keras2
def test_migrated_keras2_script_runs() -> None:
    import compat_clone
    import keras

    if not hasattr(keras.utils, "multi_gpu_model"):
        pytest.skip(f"keras {keras.__version__} has no keras.utils.multi_gpu_model (2.0.9 brought it): "
                    "the fixture script imports it")

    g = _run_script(FIXTURES / "keras2_legacy" / "after" / "train_multi_gpu.py")
    assert compat_clone.family_of(g["ema"]).family == "keras2"
    assert _same_weights(g["ema"], g["model"])


@needs_libcst
def test_no_fold_through_an_import_left_alone() -> None:
    # the import is reported, not rewritten: the call still goes to Keras, which has
    # no copy_weights, so the set_weights line is not folded (it is a hard update)
    source = (
        "if True: from keras.models import clone_model, Model\n"
        "c = clone_model(m)\nc.set_weights(m.get_weights())\n"
    )
    result = _migrate.migrate_source(source, "old.py")
    assert result.migrated.decode() == (
        "import compat_clone\n\nif True: from keras.models import clone_model, Model\n"
        "c = clone_model(m)\ncompat_clone.copy_weights(m, c)\n"
    )
    assert [r.note for r in result.reports] == [False]  # a clone of m: no note
