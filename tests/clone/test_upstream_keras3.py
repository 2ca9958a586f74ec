"""Keras's own cloning tests, run from the installed wheel, natively and through compat_clone.

Keras 3 wheels ship `keras/src/models/cloning_test.py`. This module runs it
from the installed package (nothing is copied into this repository) in two
pytest subprocesses: once as it is, once with `compat_clone.clone_model`
substituted for the native `clone_model` by `tests/clone/upstream_plugin.py`.
Every upstream test that passes natively must pass through compat_clone,
except the rows of `tests/clone/upstream_expected.py` that apply here, and each
of those rows must still differ.

Outside Keras 3 (standalone Keras 2, tf.keras, tf_keras environments) the
module skips: those packages ship no tests, and `tests/clone/test_native_guarantees.py`
with `test_native_behaviours.py` and `test_native_input_tensors.py` cover what
their native clone guarantees.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Sequence

import pytest

from tests.clone.upstream_expected import EXPECTED_DIFFERENCES, ExpectedDifference
from tests.support.families import families_under_test

HERE = Path(__file__).resolve().parent
UPSTREAM_MODULE = ("src", "models", "cloning_test.py")
SUBPROCESS_TIMEOUT_S = 900  # a hang guard, not a timing assertion


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
    # the parent's pytest settings are not the child's
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONSTARTUP"))}
    env["COMPAT_CLONE_UPSTREAM_SIDE"] = side
    env["COMPAT_CLONE_UPSTREAM_REPORT"] = str(report)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    # the plugin (tests/) and compat_clone (the checkout) importable in the child
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), str(HERE.parent), env.get("PYTHONPATH", "")) if p)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(module),
        "-p",
        "upstream_plugin",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "-c",
        str(ini),
        "--rootdir",
        str(site),
        "--confcutdir",
        str(module.parent),
        "-q",
        "-rfE",
        "-W",
        "ignore::DeprecationWarning",
    ]
    proc = subprocess.run(cmd, cwd=str(workdir), env=env, capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT_S)
    (workdir / f"{side}.log").write_text(proc.stdout + proc.stderr, encoding="utf-8")
    assert report.exists(), (
        f"the {side} run of {module} wrote no report (exit {proc.returncode}):\n{(proc.stdout + proc.stderr)[-3000:]}"
    )
    data: Dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    data["returncode"] = proc.returncode
    data["tail"] = (proc.stdout + proc.stderr)[-3000:]
    return data


def _run_upstream(workdir: Path) -> Dict[str, Any]:
    package = _keras3_package()
    module = package.joinpath(*UPSTREAM_MODULE)
    if not module.is_file():
        shipped = sorted(package.glob("src/**/*_test.py"))
        if not shipped:
            import keras

            pytest.skip(
                f"the Keras {keras.__version__} wheel ships no tests at all (no *_test.py under "
                f"{package / 'src'}): no upstream cloning_test.py to run; "
                "tests/test_native_*.py cover this version"
            )
        raise AssertionError(f"this Keras 3 wheel ships {len(shipped)} test modules but no {module}")
    site = package.parent
    native = _run_side("native", module, site, workdir)
    compat = _run_side("compat", module, site, workdir)
    return {"module": module, "native": native, "compat": compat, "workdir": workdir}


def _outcome(run: Dict[str, Any], test: str) -> str:
    return str(run["outcomes"].get(test, ["not run", ""])[0])


def _detail(run: Dict[str, Any], test: str) -> str:
    return str(run["outcomes"].get(test, ["", "not collected"])[1])


def _counts(run: Dict[str, Any]) -> Dict[str, int]:
    counts: Dict[str, int] = {}
    for outcome, _ in run["outcomes"].values():
        counts[outcome] = counts.get(outcome, 0) + 1
    return counts


def judge(native: Dict[str, Any], compat: Dict[str, Any], rows: Sequence[ExpectedDifference]) -> List[str]:
    """Every problem with a pair of runs of the upstream module, as lines to report (none: all good).

    `native` / `compat` are the plugin's reports (outcomes, calls, patched,
    keras, backend, exitstatus); `rows` the expected differences.
    """
    problems: List[str] = []
    for run in (native, compat):
        if run["exitstatus"] not in (0, 1):  # 0 all passed, 1 some failed; else it did not run
            problems.append(f"the {run['side']} run exited {run['exitstatus']}:\n{run.get('tail', '')}")
    if not any(outcome == "passed" for outcome, _ in native["outcomes"].values()):
        problems.append("no upstream test passed natively")
    if sorted(compat["outcomes"]) != sorted(native["outcomes"]):
        problems.append(
            f"the runs collected different tests: native {sorted(native['outcomes'])}, compat_clone {sorted(compat['outcomes'])}"
        )
    # the substitution was reached: compat_clone stood in for every name and was called
    patched = compat.get("patched", [])
    if not any(p.endswith("cloning_test.clone_model") for p in patched):
        problems.append(f"the test module's clone_model was not replaced (replaced: {patched})")
    missed = sorted(
        test
        for test, calls in native.get("calls", {}).items()
        if calls and _outcome(compat, test) == "passed" and not compat.get("calls", {}).get(test)
    )
    if missed:
        problems.append(f"tests that called clone_model natively but never compat_clone: {missed}")
    applicable = [row for row in rows if row.applies(native["keras"], native["backend"])]
    excused = {row.test for row in applicable if row.fails == "compat"}
    for test in sorted(native["outcomes"]):
        if _outcome(native, test) == "passed" and _outcome(compat, test) != "passed" and test not in excused:
            problems.append(f"passes natively, {_outcome(compat, test)} through compat_clone: {test}: {_detail(compat, test)}")
    for row in applicable:
        if row.test not in native["outcomes"]:
            problems.append(f"expected difference names no upstream test here: {row.test}")
            continue
        failing, passing = (compat, native) if row.fails == "compat" else (native, compat)
        if not (_outcome(passing, row.test) == "passed" and _outcome(failing, row.test) == "failed"):
            problems.append(
                f"expected difference no longer differs (remove the row): {row.test} "
                f"(fails={row.fails!r}: {row.reason}): native {_outcome(native, row.test)}, "
                f"compat_clone {_outcome(compat, row.test)}"
            )
    return problems


@pytest.mark.keras3
def test_upstream_cloning_tests_pass_through_compat_clone(tmp_path: Path) -> None:
    """Every upstream test that passes natively passes through compat_clone (one test: two subprocess runs)."""
    runs = _run_upstream(tmp_path)
    native, compat = runs["native"], runs["compat"]
    for run in (native, compat):  # shown with -rP: what ran where
        print(f"Keras {run['keras']} ({run['backend']}) {UPSTREAM_MODULE[-1]}, {run['side']}: {_counts(run)}")
    problems = judge(native, compat, EXPECTED_DIFFERENCES)
    assert not problems, (
        f"Keras {native['keras']} ({native['backend']}), {runs['module']}:\n"
        + "\n".join(problems)
        + f"\n(full logs: {runs['workdir']})"
    )


def test_expected_differences_are_well_formed() -> None:
    for row in EXPECTED_DIFFERENCES:
        assert row.fails in ("compat", "native"), row
        assert "::" in row.test and row.reason.strip(), row


# -- the judge itself, on run reports written out by hand (no framework involved) --------


def _report(side: str, outcomes: Dict[str, str], calls: int = 1) -> Dict[str, Any]:
    return {
        "side": side,
        "exitstatus": 0 if all(o == "passed" for o in outcomes.values()) else 1,
        "outcomes": {t: [o, "detail"] for t, o in outcomes.items()},
        "calls": {t: calls for t in outcomes},
        "patched": ["keras.src.models.cloning_test.clone_model"],
        "keras": "3.15.1",
        "backend": "jax",
    }


def test_judge_flags_a_native_pass_that_fails_through_compat_clone() -> None:
    native = _report("native", {"T::a": "passed", "T::b": "passed", "T::c": "failed"})
    compat = _report("compat", {"T::a": "passed", "T::b": "failed", "T::c": "failed"})
    problems = judge(native, compat, ())
    assert len(problems) == 1 and "T::b" in problems[0], problems


def test_judge_excuses_an_applicable_row_and_flags_a_stale_one() -> None:
    native = _report("native", {"T::a": "passed", "T::b": "passed"})
    compat = _report("compat", {"T::a": "passed", "T::b": "failed"})
    row_b = ExpectedDifference("T::b", "compat", "asserts a native bug we fix")
    assert judge(native, compat, (row_b,)) == []
    elsewhere = ExpectedDifference("T::b", "compat", "only on torch", backends=("torch",))
    assert len(judge(native, compat, (elsewhere,))) == 1
    stale = ExpectedDifference("T::a", "compat", "no longer differs")
    problems = judge(native, compat, (row_b, stale))
    assert len(problems) == 1 and "no longer differs" in problems[0], problems
    unknown = ExpectedDifference("T::gone", "native", "renamed upstream")
    assert any("names no upstream test" in p for p in judge(native, compat, (row_b, unknown)))


def test_judge_flags_a_substitution_that_was_not_reached() -> None:
    native = _report("native", {"T::a": "passed"})
    compat = _report("compat", {"T::a": "passed"}, calls=0)
    assert any("never compat_clone" in p for p in judge(native, compat, ()))
    compat = _report("compat", {"T::a": "passed"})
    compat["patched"] = []
    assert any("was not replaced" in p for p in judge(native, compat, ()))
