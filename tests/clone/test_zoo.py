"""The model zoo (tests/clone/zoo.py), natively and through compat_clone, side by side.

Every case is cloned with the family's native `clone_model` and with
`compat_clone.clone_model`, each without and with weights, and judged on four
aspects (class, outputs, trainable, source). Both sides' verdicts go to
``$COMPAT_CLONE_RESULTS/<env>.jsonl`` as features ``zoo_<case>.<aspect>``,
the format `compat-clone matrix --report` renders into COMPATIBILITY.md.

compat_clone must pass every aspect. The native verdicts are asserted too:
an aspect the native clone is known to fail (the case's `native_fails`) must
fail, every other must pass, so the table's native column cannot rot. A case
with `refused` holds a layer the native clone cannot rebuild: the native
clone must fail, and compat_clone must either refuse the model (with
`UnsupportedModelError`, or with the exception type the native call lets
through, explained in a note) naming that layer and the `clone_function`
escape, or clone it passing every aspect.
"""

from __future__ import annotations

from typing import Any, Dict, List

import pytest

import compat_clone
from tests.clone.feature_records import write_records
from tests.clone.features import NotApplicable, backend_name, family_name, native_clone
from tests.clone.zoo import ASPECTS, CASES, Case, SideResult, run_side, side_context
from tests.support.families import WIDE

_ASPECT_TEXT = {
    "class": "both clones, and every layer inside them, of the source's classes",
    "outputs": "the source's outputs (values with weights copied; shapes and dtypes without)",
    "trainable": "the source's trainable set: flags of every layer and sub-layer, trainable variables",
    "source": "source untouched, clones independent of it",
}


def _record(case: Case, K: Any, side: str, verdicts: Dict[str, Any]) -> None:
    write_records(
        K,
        [
            {
                "feature": f"zoo_{case.name}.{aspect}",
                "description": f"{case.description}: {_ASPECT_TEXT[aspect]}",
                "side": side,
                "outcome": outcome,
                "detail": detail,
            }
            for aspect, (outcome, detail) in verdicts.items()
        ],
    )


def _judge_refusal(case: Case, native: SideResult, compat: SideResult) -> List[str]:
    """A layer the native clone cannot rebuild: compat_clone refuses it clearly, or clones it right."""
    problems = []
    if native.clone_error is None:
        problems.append(f"the native clone now rebuilds {case.name}: drop `refused` and check it fully")
    err = compat.clone_error
    if err is None:  # compat_clone rebuilt it: then every aspect must hold
        problems += [
            f"compat_clone fails {aspect}: {detail}" for aspect, (outcome, detail) in compat.aspects.items() if outcome != "pass"
        ]
    elif not isinstance(err, compat_clone.UnsupportedModelError) and (
        native.clone_error is None or type(err) is not type(native.clone_error)
    ):
        # `native-exception-type`: a failed native round trip goes on as the
        # native call's own exception type, explained in a note.
        native_type = type(native.clone_error).__name__ if native.clone_error is not None else None
        problems.append(
            f"compat_clone was expected to refuse {case.name} with UnsupportedModelError "
            f"or the native {native_type}; it raised {type(err).__name__}: {err}"
        )
    else:
        message = "\n".join([str(err), *getattr(err, "__notes__", [])])
        for needed in (repr(case.refused), "clone_function"):
            if needed not in message:
                problems.append(f"the refusal does not name {needed}: {message[:300]}")
    return problems


def _judge(case: Case, K: Any, native: SideResult, compat: SideResult) -> List[str]:
    problems = []
    for aspect in ASPECTS:
        outcome, detail = compat.aspects[aspect]
        if outcome != "pass":
            problems.append(f"compat_clone fails {aspect}: {detail}")
        known = case.native_fails.get(aspect)
        expected = "fail" if known is not None and known[1](K) else "pass"
        outcome, detail = native.aspects[aspect]
        if outcome != expected:
            why = f" (recorded: {known[0]})" if known is not None and expected == "fail" else ""
            problems.append(
                f"the native clone was expected to {expected} {aspect}{why}, it did {outcome}{': ' + detail if detail else ''}"
            )
    return problems


def _slow_key(K: Any) -> str:
    """The key of `Case.too_slow_on` for Keras `K`: a Keras 3 backend, or "tf1" for standalone Keras 2 on TF 1.x."""
    if family_name(K) == "keras3":
        return backend_name(K)
    if family_name(K) == "keras2":
        import tensorflow as tf

        return "tf1" if tf.__version__.startswith("1.") else ""
    return ""


@pytest.mark.parametrize("name", sorted(CASES))
def test_zoo(name: str, K: Any) -> None:
    case = CASES[name]
    where = _slow_key(K)
    if where in case.too_slow_on and not WIDE:
        # `make test` keeps its 30 minutes; `make test-wide` sets
        # COMPAT_CLONE_WIDE=1 and runs every case on every backend.
        pytest.skip(case.too_slow_on[where] + " (COMPAT_CLONE_WIDE=1 runs it: make test-wide)")
    if family_name(K) == "keras2":
        # One TF1 graph holds every model built in it, and each session call
        # initializes over all of them: each case starts in a new graph.
        K.backend.clear_session()
    try:
        with side_context(case, K):
            native, source = run_side(case, K, native_clone(K), weights_by_set=True)
            # The native side left the source untouched: compat_clone clones the
            # same model (one build less); else it gets a fresh one.
            reuse = source if native.aspects["source"][0] == "pass" else None
            compat, _ = run_side(case, K, compat_clone.clone_model, reuse)
    except NotApplicable as exc:
        for side in ("native", "compat_clone"):
            _record(case, K, side, {aspect: ("n/a", str(exc)) for aspect in ASPECTS})
        pytest.skip(str(exc))
    _record(case, K, "native", native.aspects)
    _record(case, K, "compat_clone", compat.aspects)
    problems = _judge_refusal(case, native, compat) if case.refused else _judge(case, K, native, compat)
    assert not problems, f"{name}:\n  " + "\n  ".join(problems)
