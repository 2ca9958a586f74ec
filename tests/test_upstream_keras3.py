"""Keras's own cloning tests, run from the installed wheel, natively and through compat_clone.

Keras 3 wheels ship `keras/src/models/cloning_test.py`. This module runs it
from the installed package (nothing is copied into this repository) in two
pytest subprocesses: once as it is, once with `compat_clone.clone_model`
substituted for the native `clone_model` by `tests/upstream_plugin.py`.
Every upstream test that passes natively must pass through compat_clone,
except the rows of `tests/upstream_expected.py` that apply here, and each
of those rows must still differ.

Outside Keras 3 (standalone Keras 2, tf.keras, tf_keras environments) the
module skips: those packages ship no tests, and `tests/test_native_guarantees.py`
covers what their native clone guarantees.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

from conftest import families_under_test
from upstream_expected import EXPECTED_DIFFERENCES, ExpectedDifference

HERE = Path(__file__).resolve().parent
UPSTREAM_MODULE = ("src", "models", "cloning_test.py")
SUBPROCESS_TIMEOUT_S = 900  # a hang guard, not a timing assertion

pytestmark = pytest.mark.keras3


def _keras3_package() -> Path:
    if "keras3" not in families_under_test():
        pytest.skip("Keras 3 is not tested in this environment: only Keras 3 wheels ship cloning_test.py")
    spec = importlib.util.find_spec("keras")
    assert spec is not None and spec.origin, "Keras 3 is under test but `keras` cannot be found"
    return Path(spec.origin).resolve().parent


def _run_side(side: str, module: Path, site: Path, workdir: Path) -> Dict[str, Any]:
    report = workdir / f"{side}.json"
    ini = workdir / "pytest.ini"
    ini.write_text("[pytest]\naddopts =\n", encoding="utf-8")
    env = dict(os.environ)
    env["COMPAT_CLONE_UPSTREAM_SIDE"] = side
    env["COMPAT_CLONE_UPSTREAM_REPORT"] = str(report)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    # the plugin (tests/) and compat_clone (the checkout) importable in the child
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(HERE), str(HERE.parent), env.get("PYTHONPATH", "")) if p
    )
    cmd = [
        sys.executable, "-m", "pytest", str(module),
        "-p", "upstream_plugin", "-p", "no:cacheprovider", "-p", "no:randomly",
        "-c", str(ini), "--rootdir", str(site), "--confcutdir", str(module.parent),
        "-q", "-rfE", "-W", "ignore::DeprecationWarning",
    ]
    proc = subprocess.run(cmd, cwd=str(workdir), env=env, capture_output=True, text=True,
                          timeout=SUBPROCESS_TIMEOUT_S)
    (workdir / f"{side}.log").write_text(proc.stdout + proc.stderr, encoding="utf-8")
    assert report.exists(), (
        f"the {side} run of {module} wrote no report (exit {proc.returncode}):\n"
        f"{(proc.stdout + proc.stderr)[-3000:]}"
    )
    data: Dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    data["returncode"] = proc.returncode
    data["tail"] = (proc.stdout + proc.stderr)[-3000:]
    return data


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: Any) -> Dict[str, Any]:
    package = _keras3_package()
    module = package.joinpath(*UPSTREAM_MODULE)
    if not module.is_file():
        shipped = sorted(package.glob("src/**/*_test.py"))
        if not shipped:
            import keras

            pytest.skip(
                f"the Keras {keras.__version__} wheel ships no tests at all (no *_test.py under "
                f"{package / 'src'}): no upstream cloning_test.py to run; "
                "tests/test_native_guarantees.py covers this version"
            )
        raise AssertionError(f"this Keras 3 wheel ships {len(shipped)} test modules but no {module}")
    workdir = tmp_path_factory.mktemp("upstream_cloning")
    site = package.parent
    native = _run_side("native", module, site, workdir)
    compat = _run_side("compat", module, site, workdir)
    return {"module": module, "native": native, "compat": compat, "workdir": workdir}


def _applicable(run: Dict[str, Any]) -> List[ExpectedDifference]:
    return [row for row in EXPECTED_DIFFERENCES if row.applies(run["keras"], run["backend"])]


def _outcome(run: Dict[str, Any], test: str) -> str:
    return str(run["outcomes"].get(test, ["not run", ""])[0])


def _detail(run: Dict[str, Any], test: str) -> str:
    return str(run["outcomes"].get(test, ["", "not collected"])[1])


def test_upstream_module_runs_natively(upstream: Dict[str, Any]) -> None:
    native = upstream["native"]
    passed = [t for t, (o, _) in native["outcomes"].items() if o == "passed"]
    assert native["exitstatus"] in (0, 1), f"native run exited {native['exitstatus']}:\n{native['tail']}"
    assert passed, f"no upstream test passed natively in {upstream['module']}:\n{native['tail']}"


def test_both_runs_collect_the_same_tests(upstream: Dict[str, Any]) -> None:
    native, compat = upstream["native"], upstream["compat"]
    assert compat["exitstatus"] in (0, 1), f"compat run exited {compat['exitstatus']}:\n{compat['tail']}"
    assert sorted(compat["outcomes"]) == sorted(native["outcomes"])


def test_compat_clone_was_substituted(upstream: Dict[str, Any]) -> None:
    """The upstream tests really called compat_clone (not the native function under our name)."""
    native, compat = upstream["native"], upstream["compat"]
    patched = compat["patched"]
    assert any(p.endswith("cloning_test.clone_model") for p in patched), patched
    assert "keras.src.models.cloning.clone_model" in patched, patched
    missed = [
        test for test, calls in native["calls"].items()
        if calls and _outcome(compat, test) == "passed" and not compat["calls"].get(test)
    ]
    assert not missed, f"these tests called clone_model natively but never compat_clone: {missed}"
    assert sum(compat["calls"].values()) > 0


def test_every_native_pass_passes_through_compat_clone(upstream: Dict[str, Any]) -> None:
    native, compat = upstream["native"], upstream["compat"]
    for run in (native, compat):  # shown with -s / -rP: what ran where
        counts: Dict[str, int] = {}
        for outcome, _ in run["outcomes"].values():
            counts[outcome] = counts.get(outcome, 0) + 1
        print(f"Keras {run['keras']} ({run['backend']}) cloning_test.py, {run['side']}: {counts}")
    excused = {row.test for row in _applicable(native) if row.fails == "compat"}
    regressions = [
        f"{test}: {_outcome(compat, test)}: {_detail(compat, test)}"
        for test in sorted(native["outcomes"])
        if _outcome(native, test) == "passed" and _outcome(compat, test) != "passed" and test not in excused
    ]
    assert not regressions, (
        f"Keras {native['keras']} ({native['backend']}): upstream tests that pass natively fail "
        f"through compat_clone:\n" + "\n".join(regressions)
        + f"\n(full logs: {upstream['workdir']})"
    )


def test_expected_differences_still_differ(upstream: Dict[str, Any]) -> None:
    native, compat = upstream["native"], upstream["compat"]
    stale = []
    for row in _applicable(native):
        failing, passing = (compat, native) if row.fails == "compat" else (native, compat)
        if not (_outcome(passing, row.test) == "passed" and _outcome(failing, row.test) == "failed"):
            stale.append(
                f"{row.test} (fails={row.fails!r}: {row.reason}): native {_outcome(native, row.test)}, "
                f"compat_clone {_outcome(compat, row.test)}"
            )
    assert not stale, "expected differences that no longer differ (remove the rows):\n" + "\n".join(stale)


def test_expected_differences_name_real_tests(upstream: Dict[str, Any]) -> None:
    native = upstream["native"]
    unknown = [row.test for row in _applicable(native) if row.test not in native["outcomes"]]
    assert not unknown, f"rows of upstream_expected.py name no upstream test here: {unknown}"


def test_expected_differences_are_well_formed() -> None:
    for row in EXPECTED_DIFFERENCES:
        assert row.fails in ("compat", "native"), row
        assert "::" in row.test and row.reason.strip(), row
