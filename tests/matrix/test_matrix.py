"""`compat-clone matrix`: the table, summary, command line, and one real run.

The unit tests need no framework and build no environment. The end-to-end test
builds one real environment with uv and runs the sample user project's tests
in it (`-m "not slow"` deselects it). Stamps, runs and timeouts are in
tests/matrix/test_matrix_runs.py.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict

import pytest
from packaging.version import Version

from compat_clone.tools import matrix as _matrix
from compat_clone_matrix import summary
from compat_clone_matrix.overlay import apply_overlay
from tests.matrix.matrix_support import one_env_table

# Framework-free: one matrix environment per Python version runs them (tests/conftest.py).
pytestmark = pytest.mark.tooling

REPO = Path(__file__).resolve().parents[2]
SAMPLE = Path(__file__).resolve().parent / "sample_project"


# --------------------------------------------------------------------------- table


def test_builtin_table_covers_oldest_and_newest_of_every_line() -> None:
    envs = {e.name: e for e in _matrix.load_table()}
    claims = {name: dict(e.expect) for name, e in envs.items()}
    for name, claim in claims.items():
        assert {"family", "version", "backend"} <= set(claim), f"{name} claims {claim}"
    enabled = [e for e in envs.values() if e.enabled]
    versions = {(dict(e.expect)["family"], dict(e.expect)["version"]) for e in enabled}
    assert {("keras2", "2.1.6"), ("keras2", "2.2.4"), ("keras2", "2.3.1")} <= versions
    # standalone Keras 2 where its users run it: TF 1.15 / Python 3.7, in the default run
    tf1 = [e for e in enabled if e.name.endswith("-tf1")]
    assert tf1 and all(e.python == "3.7" and "tensorflow==1.15.5" in e.packages for e in tf1)
    # the Keras 2 soak runs in the wide matrix (keras-2.2.4 on TF 2.15): the
    # default run's time budget has no room for it on TF 1.15 (our overlay sets it)
    ours = apply_overlay(list(envs.values()), Path(__file__).resolve().parents[1] / "matrix-overlay.toml")
    assert any(dict(e.env).get("COMPAT_CLONE_SOAK") == "1" and dict(e.expect)["family"] == "keras2" for e in ours)
    assert {("tf_keras", "2.12"), ("tf_keras", "2.15"), ("tf_keras", "2.16"), ("tf_keras", "2.21")} <= versions
    assert {("keras3", "3.0"), ("keras3", "3.15")} <= versions
    backends = {dict(e.expect)["backend"] for e in enabled if dict(e.expect)["family"] == "keras3"}
    assert backends == {"tensorflow", "jax", "torch"}


_CI_ENVS = [
    "keras-2.3.1",
    "keras-2.1.6-tf1",
    "keras-2.2.4-tf1",
    "tf.keras-2.4",
    "tf.keras-2.12",
    "tf.keras-2.15",
    "tf_keras-2.16",
    "tf_keras-2.21",
    "keras-3.0-tf",
    "keras-3.2-tf",
    "keras-3.6-tf",
    "keras-3.15-tf",
    "keras-3.15-jax",
    "keras-3.15-torch",
]


def _pins(env: Any) -> Dict[str, str]:
    """``{"keras": "3.15.1", "tensorflow": "2.21.0", ...}`` from the exact pins."""
    pins = {}
    for req in env.packages + env.no_deps:
        name, sep, version = req.partition("==")
        if sep:
            pins[name.replace("-cpu", "").replace("-", "_")] = version.split("+")[0]
    return pins


def test_builtin_wide_matrix_covers_every_minor() -> None:
    envs = _matrix.load_table()
    wide = _matrix.select_envs(envs, None, ["wide"])
    assert wide == envs  # the wide group is the whole table
    k3_tf = {
        _pins(e)["keras"] for e in wide if dict(e.expect)["family"] == "keras3" and dict(e.expect)["backend"] == "tensorflow"
    }
    newest = [
        "3.0.5",
        "3.1.1",
        "3.2.1",
        "3.3.3",
        "3.4.1",
        "3.5.0",
        "3.6.0",
        "3.7.0",
        "3.8.0",
        "3.9.2",
        "3.10.0",
        "3.11.3",
        "3.12.4",
        "3.13.2",
        "3.14.1",
        "3.15.1",
    ]
    assert k3_tf == {"3.0.0", *newest}
    tf_keras = sorted(_pins(e)["tf_keras"] for e in wide if "tf_keras" in _pins(e) and dict(e.expect)["family"] == "tf_keras")
    assert [v.rsplit(".", 1)[0] for v in tf_keras] == [f"2.{m}" for m in range(16, 22)]
    tf_dot_keras = sorted(_pins(e)["tensorflow"] for e in wide if e.name.startswith("tf.keras-"))
    # 2.4: TensorFlow 2.4's own SavedModels (Keras metadata inside saved_model.pb), a conversion source
    assert sorted(v.rsplit(".", 1)[0] for v in tf_dot_keras) == ["2.12", "2.13", "2.14", "2.15", "2.4"]
    assert {_pins(e)["keras"] for e in wide if dict(e.expect)["family"] == "keras2"} == {
        "2.0.8",
        "2.1.6",
        "2.2.4",
        "2.2.5",
        "2.3.1",
    }
    for env in wide:
        pins = _pins(env)
        if "keras" in pins and "tensorflow" in pins and Version(pins["tensorflow"]) >= Version("2.20"):
            assert Version(pins["keras"]) >= Version("3.10"), env.name  # TF 2.20+ requires keras >= 3.10
        if "tensorflow" in pins and Version(pins["tensorflow"]) < Version("2.18"):
            assert "numpy<2" in env.packages or dict(env.expect)["family"] != "keras3", env.name


def test_default_run_is_the_ci_set() -> None:
    assert [e.name for e in _matrix.select_envs(_matrix.load_table(), None)] == _CI_ENVS


def test_builtin_table_pins_are_exact_and_safe() -> None:
    from compat_clone.families.registry import family_for

    for env in _matrix.load_table():
        claim = dict(env.expect)
        family = claim["family"]
        pins = _pins(env)
        # the package that defines the models is pinned exactly, and compat_clone's own
        # version -> family rule gives the claimed family for it
        package = "keras" if family != "tf_keras" else ("tf_keras" if "tf_keras" in pins else "tensorflow")
        assert package in pins, (env.name, env.packages, env.no_deps)
        assert family_for(package, pins[package]) == family, (env.name, package, pins[package])
        assert (pins[package] + ".").startswith(claim["version"] + "."), (env.name, pins[package], claim)
        # every environment gets pytest (the rest of our suite's tools: tests/matrix-overlay.toml)
        assert any(p.startswith("pytest>=") for p in env.packages), env.name
        if family == "keras2" and pins.get("tensorflow", "").startswith("1."):
            # where its users run it: TF 1.15, installed with its own metadata, no fix-up
            assert env.fixup is None and env.python == "3.7" and any(p.startswith("keras==2.") for p in env.packages)
        elif family == "keras2":
            assert env.fixup == "keras2_on_tf2" and any(p.startswith("keras==2.") for p in env.no_deps)
        if family == "tf_keras" and Version(claim["version"]) >= Version("2.16"):
            assert dict(env.env).get("TF_USE_LEGACY_KERAS") == "1", env.name
            assert any(p.startswith("tf_keras==") for p in env.no_deps), env.name
        # A portable table: no path of one machine (a local wheel folder goes in
        # $COMPAT_CLONE_PIP_ARGS), no local version label only such a folder serves.
        for item in env.packages + env.no_deps + env.pip_args:
            assert not item.startswith(("/", "~")) and "/opt/" not in item and "+cpu" not in item, (env.name, item)
        if family == "keras3":
            assert dict(env.env).get("KERAS_BACKEND") == claim["backend"], env.name


def test_defaults_merge_into_every_env() -> None:
    (env,) = _matrix.parse_table(one_env_table(env={"Y": "2"}, no_deps=["tf_keras==2.21.0"]))
    assert env.packages == ("keras==3.15.1", "pytest")
    assert dict(env.env) == {"X": "1", "Y": "2"}
    assert env.no_deps == ("tf_keras==2.21.0",)
    assert env.enabled and env.install_compat_clone


@pytest.mark.parametrize(
    "change, message",
    [
        ({"pacakges": ["x"]}, "Unknown key(s) 'pacakges'"),
        ({"name": "../up"}, "folder-safe name"),
        ({"packages": "keras==3.15.1"}, "list of strings"),
        ({"expect": {"family": "keras4"}}, "keras3, tf_keras, keras2"),
        ({"expect": {"famly": "keras3"}}, "Unknown key(s) 'famly'"),
        ({"env": {"KERAS_BACKEND": 1}}, "table of strings"),
        ({"enabled": "no"}, "true or false"),
        ({"python": 3.11}, "Expected `python` in environment 'a' of my.toml to be a string"),
        ({"tags": "wide"}, "Received: tags='wide'"),
        ({"expect": {"family": "keras2", "version": "3.15"}}, "a keras2 model cannot have version '3.15'"),
        ({"expect": {"family": "keras3", "version": "2.15"}}, "(that version is tf_keras)"),
        ({"expect": {"family": "keras3", "module": "tf"}}, "one of keras, tf_keras, tensorflow.keras, tf.keras"),
        ({"expect": {"module": "keras"}}, "names a module but no family"),
        ({"expect": {"family": "keras3", "module": "tf_keras"}}, "`tf_keras` never serves a keras3 model"),
        ({"expect": {"family": "keras2", "module": "tensorflow.keras"}}, "never serves a keras2 model"),
    ],
)
def test_bad_tables_are_rejected_with_the_value(change: Dict[str, Any], message: str) -> None:
    with pytest.raises(_matrix.TableError) as info:
        _matrix.parse_table(one_env_table(**change), "my.toml")
    assert message in str(info.value) and "my.toml" in str(info.value)


def test_schema_is_one_table_of_keys() -> None:
    from compat_clone_matrix.table import _FIELDS as table_fields

    # every Env attribute is a key of the schema, and nothing else is
    assert set(table_fields) == {f.name for f in dataclasses.fields(_matrix.Env)}
    with pytest.raises(_matrix.TableError, match=r"Unknown key\(s\) 'no_deps' in \[defaults\] of my.toml"):
        _matrix.parse_table({"defaults": {"no_deps": []}, "env": [{"name": "a", "packages": []}]}, "my.toml")
    with pytest.raises(_matrix.TableError, match="Expected `packages` in \\[defaults\\] of t.toml to be a list"):
        _matrix.parse_table({"defaults": {"packages": "x"}, "env": [{"name": "a", "packages": []}]}, "t.toml")


def test_the_module_a_project_imports_is_claimed_once_for_every_env() -> None:
    data = {
        "defaults": {"expect": {"module": "tensorflow.keras"}},
        "env": [
            {"name": "a", "packages": [], "expect": {"family": "tf_keras", "version": "2.21"}},
            {"name": "b", "packages": [], "expect": {"family": "keras3", "module": "keras"}},
        ],
    }
    a, b = _matrix.parse_table(data)
    assert a.expect_vars() == {
        "COMPAT_CLONE_EXPECT_FAMILY": "tf_keras",
        "COMPAT_CLONE_EXPECT_VERSION": "2.21",
        "COMPAT_CLONE_EXPECT_MODULE": "tensorflow.keras",
    }
    assert dict(b.expect)["module"] == "keras"  # an environment's own key wins


def test_tags_merge_and_select() -> None:
    data = {
        "defaults": {"tags": ["wide"], "pip_args": ["-q"]},
        "env": [
            {"name": "ci", "packages": [], "pip_args": ["--x"]},
            {"name": "extra-1", "packages": [], "enabled": False, "tags": ["k3"]},
            {"name": "extra-2", "packages": [], "enabled": False},
        ],
    }
    envs = _matrix.parse_table(data)
    assert [e.tags for e in envs] == [("wide",), ("wide", "k3"), ("wide",)]
    assert envs[0].pip_args == ("-q", "--x")
    names = lambda *a: [e.name for e in _matrix.select_envs(envs, *a)]  # noqa: E731
    assert names(None) == ["ci"]
    assert names(None, ["wide"]) == ["ci", "extra-1", "extra-2"]
    assert names(["extra-*"], ["wide"]) == ["extra-1", "extra-2"]  # --env narrows the tagged group
    assert names(["extra-1"]) == ["extra-1"]  # a disabled env runs when named exactly
    with pytest.raises(_matrix.TableError, match="No environment matches --env 'extra-\\*'"):
        names(["extra-*"])  # without a tag a glob sees enabled environments only
    with pytest.raises(_matrix.TableError, match="No environment has --tag 'nope'. Known tags: k3, wide"):
        names(None, ["k3,nope"])


def test_duplicate_and_missing_fields() -> None:
    data = one_env_table()
    data["env"].append(dict(data["env"][0]))
    with pytest.raises(_matrix.TableError, match="Duplicate environment name 'a'"):
        _matrix.parse_table(data)
    with pytest.raises(_matrix.TableError, match="Missing `packages`"):
        _matrix.parse_table({"env": [{"name": "a"}]})
    with pytest.raises(_matrix.TableError, match="at least one environment"):
        _matrix.parse_table({"defaults": {}})


def test_table_file_errors(tmp_path: Path) -> None:
    with pytest.raises(_matrix.TableError, match="Cannot read the matrix table"):
        _matrix.load_table(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[[env]\nname=", encoding="utf-8")
    with pytest.raises(_matrix.TableError, match="not valid TOML"):
        _matrix.load_table(bad)
    good = tmp_path / "good.toml"
    good.write_text((SAMPLE / "matrix.toml").read_text(encoding="utf-8"), encoding="utf-8")
    assert [e.name for e in _matrix.load_table(good)] == ["keras3-jax"]


def test_select_by_name_glob_and_disabled() -> None:
    envs = _matrix.load_table()
    (table,) = _matrix.parse_table(one_env_table(enabled=False))
    assert _matrix.select_envs([table], None) == []  # a disabled env runs only when named
    assert [e.name for e in _matrix.select_envs([table], [table.name])] == [table.name]
    assert [e.name for e in _matrix.select_envs(envs, ["keras-2.3.1"])] == ["keras-2.3.1"]
    picked = [e.name for e in _matrix.select_envs(envs, ["keras-3.15-*", "tf_keras-2.21"])]
    assert picked == ["tf_keras-2.21", "keras-3.15-tf", "keras-3.15-jax", "keras-3.15-torch"]  # table order
    assert [e.name for e in _matrix.select_envs(envs, ["keras-2.2.4,keras-2.2.5"])] == ["keras-2.2.4", "keras-2.2.5"]
    with pytest.raises(_matrix.TableError, match="No environment matches --env 'keras-9'"):
        _matrix.select_envs(envs, ["keras-9"])


# --------------------------------------------------------------------------- summary and command line


@pytest.mark.parametrize(
    "text, expected",
    [
        ("..\n=== 3 passed, 1 skipped, 2 warnings in 2.10s ===", {"passed": 3, "skipped": 1}),
        ("1 failed, 10 passed, 2 xfailed, 1 error in 1.00s", {"failed": 1, "passed": 10, "xfailed": 2, "errors": 1}),
        ("== 2 errors in 0.5s ==", {"errors": 2}),
        ("no tests ran in 0.01s", {}),
        ("5 passed, 3 deselected in 3.2s (0:00:03)", {"passed": 5, "deselected": 3}),
        ("5 passed in 1.0s\nteardown noise\n", {"passed": 5}),
    ],
)
def test_parse_pytest_summary(text: str, expected: Dict[str, int]) -> None:
    counts = _matrix.parse_pytest_summary(text)
    assert counts is not None
    assert {k: v for k, v in counts.items() if v} == expected


def test_parse_pytest_summary_without_pytest() -> None:
    assert _matrix.parse_pytest_summary("hello\nTraceback ...\nImportError: x") is None


def test_summary_table_names_failing_envs() -> None:
    ok = summary.Outcome(
        "a",
        build="reused",
        status="ok",
        counts=_matrix.parse_pytest_summary("3 passed in 1s"),
        loaded="keras 3.15.1 on jax via keras",
    )
    bad = summary.Outcome("b", build="FAILED", status="BUILD FAILED")
    text = _matrix.format_summary([ok, bad], 61.0)
    # the proof of what each environment's tests ran on closes its row
    assert re.search(r"^a\s+reused\s+3\s+0\s+0\s+ok\s+0s\s+-\s+keras 3.15.1 on jax via keras$", text, re.M), text
    assert re.search(r"^b\s+FAILED\s+-\s+-\s+-\s+BUILD FAILED\s+0s\s+-\s+-$", text, re.M), text
    assert text.splitlines()[-1] == "matrix: 1 of 2 environments FAILED: b (3 passed, 0 failed, 0 skipped in 1m01s)"
    # The tests that failed are named under the table, before the verdict (the line .ci/run repeats last).
    log = "..F.\nFAILED tests/t.py::test_x - AssertionError: assert 1 == 2\nERROR tests/t.py::test_y\n1 failed, 1 error in 2s"
    broke = summary.Outcome(
        "d", build="reused", status="FAILED", counts=_matrix.parse_pytest_summary(log), failures=summary.failed_tests(log)
    )
    text = _matrix.format_summary([ok, broke], 5.0).splitlines()
    assert text[-3:] == [
        "d: FAILED tests/t.py::test_x - AssertionError: assert 1 == 2",
        "d: ERROR tests/t.py::test_y",
        "matrix: 1 of 2 environments FAILED: d (3 passed, 2 failed, 0 skipped in 5s)",
    ], text
    many = dataclasses.replace(broke, failures=[f"FAILED t.py::test_{i}" for i in range(7)], log=Path("x/last.log"))
    text = _matrix.format_summary([many], 5.0).splitlines()
    assert text[-3:-1] == ["d: FAILED t.py::test_4", "d: ... and 2 more in x/last.log"], text
    liar = summary.Outcome("c", build="reused", status="MISLABELED", loaded="tf_keras 2.21.0 on tensorflow via tf_keras")
    text = _matrix.format_summary([ok, liar], 5.0)
    assert re.search(r"^c\s+reused\s+-\s+-\s+-\s+MISLABELED\s+.*tf_keras 2.21.0 on tensorflow via tf_keras$", text, re.M)
    assert text.splitlines()[-1] == (
        "matrix: 1 environment(s) MISLABELED, not what the table claims: c (exit status 3; the reason is in their last.log)"
    )


def test_progress_redraws_one_live_line_on_a_terminal() -> None:
    import io

    from compat_clone_matrix.progress import Progress

    stream = io.StringIO()
    progress = Progress(stream, live=True, interval=60)
    progress.begin("a")
    time.sleep(1.3)
    progress.say("b", "building")
    progress.end("a")
    progress.close()
    text = stream.getvalue()
    assert "running 1: a 1s" in text  # drawn in place (no newline) ...
    assert "\r\x1b[K[" in text and "] b: building\n" in text  # ... and cleared before a plain line
    assert not text.endswith("running 1: a 1s")  # nothing left on screen after close


def test_default_jobs_is_at_least_one() -> None:
    assert 1 <= _matrix.default_jobs() <= (os.cpu_count() or 1)


def test_cli_list_and_bad_env(capsys: pytest.CaptureFixture[str]) -> None:
    assert _matrix.main(["--list", "--env", "tf_keras-*"]) == 0
    out = capsys.readouterr().out
    assert "tf_keras-2.16" in out and "TF_USE_LEGACY_KERAS=1" in out and "keras-2.2.4" not in out
    assert _matrix.main(["--env", "nope", "--", "true"]) == 2
    assert "No environment matches --env 'nope'" in capsys.readouterr().err
    assert _matrix.main([]) == 2


# --------------------------------------------------------------------------- end to end

# Runs in the default .venv, and in the one matrix environment whose pins the
# sample table shares (so nested, it only reuses the warm uv cache).
_E2E_HOSTS = (None, "keras-3.15-jax")


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("COMPAT_CLONE_ENV") not in _E2E_HOSTS,
    reason="the end-to-end matrix run happens in the default env and in keras-3.15-jax only",
)
def test_matrix_runs_a_user_project_end_to_end(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(SAMPLE, project, ignore=shutil.ignore_patterns(".matrix", "__pycache__", ".pytest_cache"))
    environ = dict(os.environ)
    local_uv = REPO / ".tools" / "bin" / "uv"
    if "COMPAT_CLONE_UV" not in environ and local_uv.exists():
        environ["COMPAT_CLONE_UV"] = str(local_uv)
    cli = [sys.executable, "-m", "compat_clone", "matrix", "--table", "matrix.toml", "--jobs", "1"]

    # The command `--emit github` gives the CI job of this environment, run here.
    emitted = subprocess.run(
        cli + ["--emit", "github", "--", "pytest"], cwd=project, env=environ, capture_output=True, text=True, timeout=120
    )
    (entry,) = json.loads(emitted.stdout)["include"]
    assert entry["command"] == "compat-clone matrix --env keras3-jax --table matrix.toml -- pytest"
    environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environ.get('PATH', '')}"
    first = subprocess.run(
        ["bash", "-c", entry["command"]], cwd=project, env=environ, capture_output=True, text=True, timeout=1200
    )
    log = project / ".matrix" / "keras3-jax" / "last.log"
    detail = first.stdout + first.stderr + (log.read_text() if log.exists() else "")
    assert first.returncode == 0, detail
    assert re.search(r"^keras3-jax\s+built\s+4\s+0\s+0\s+ok", first.stdout, re.M), detail
    assert "matrix: all 1 environments passed" in first.stdout
    assert "4 passed" in log.read_text()
    # compat_clone's pytest plugin checked the claim and named the environment
    assert (
        "compat-clone matrix env: keras3-jax (backend=jax family=keras3 version=3.15; loaded keras 3.15.1 on jax "
        "via keras)" in log.read_text()
    ), log.read_text()
    assert "compat-clone matrix: keras3-jax loaded keras 3.15.1 on jax via keras" in log.read_text()

    # The same environment under a false claim (TensorFlow): the plugin stops it before any test;
    # its status is MISLABELED, the run's exit status 3.
    liar = subprocess.run(
        cli[:4] + ["--table", "mislabeled.toml", "--", "pytest"],
        cwd=project,
        env=environ,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert liar.returncode == 3, liar.stdout + liar.stderr
    assert re.search(r"^keras3-jax\s+reused(\s+\S+){3}\s+MISLABELED", liar.stdout, re.M), liar.stdout
    assert "environment 'keras3-jax' is not what it claims" in log.read_text()
    assert "`keras` runs on backend 'jax', the table claims 'tensorflow'" in log.read_text()

    # Same pins: the environment is reused. A command that collects nothing fails.
    second = subprocess.run(
        cli + ["--", "pytest", "-q", "-k", "no_such_test"], cwd=project, env=environ, capture_output=True, text=True, timeout=1200
    )
    assert second.returncode == 1, second.stdout + second.stderr
    assert re.search(r"^keras3-jax\s+reused\s+0\s+0\s+0\s+NO TESTS", second.stdout, re.M), second.stdout
