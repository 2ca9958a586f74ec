"""Generated subclassed models: compat_clone is never worse than the native recipe, and never silently wrong.

Each example is a `keras.Model` or `keras.Sequential` subclass drawn by
tests/clone/strategies_subclassed.py and defined per example from its own source
(layers made in ``__init__`` or ``build()``, held in attributes, lists,
dicts, tuples and nested models; constructor arguments kept or not; a layer
passed to the constructor; shared layers, a weight of the model, frozen
parts; ``training`` and ``mask`` in ``call``). Each is cloned two ways:

* the native recipe: ``K.models.clone_model(m)``, called on the inputs, then
  ``set_weights(m.get_weights())``;
* ``compat_clone.clone_model(m, copy_weights=True)``.

A clone is *right* when it has the source's class, its outputs on the same
inputs (``training=False``), its weights' shapes and ``trainable`` flags
(per weight, per drawn layer, the model's own), each drawn layer's class and
config (``units``, ``rate``...) at the same path, and variables of its own
(writing the clone's weights leaves the source as it was). The native recipe
*works* when its clone is right save for its class (the native Sequential
clone returns a plain Sequential: recorded as its own event).

The rules (the golden rule of compat_clone):

* where the native recipe works, compat_clone returns a clone;
* a clone compat_clone returns is right (never silently wrong);
* where compat_clone refuses, ``str(exc)`` is not empty and the reason is
  compat_clone's: its own error, or the native exception with a
  ``compat_clone: ...`` reason in its message (in a note where its arguments
  are structured: `errors.with_reason`), never an exception escaped from the
  middle of a clone;
* compat_clone leaves the source as it was (it clones first; a change the native
  recipe makes is noted with the native outcomes).

Why the test goes on after a broken rule: today's library is expected to
break some, and the engineer fixing them wants every kind at once. Each
example's outcome (native ok / wrong / failed, compat ok / refused / wrong)
and what it holds is an `event`, counted by the sweep as well (the given is
nested in the test, for its `K`, so pytest prints no Hypothesis statistics):
the table is printed (``-s``), is the head of the failure message, and goes
into the run's summary and ``<env>.generated.json``
(tests/clone/generated_report.py). The broken rules are collected by kind,
each with its count and the smallest source that breaks it (a runnable
reproducer: define ``K``, run the source, ``make(x)``), and the test fails
once at the end with that list.

Examples per family and test: as tests/clone/strategies.py's profiles say (`ci`
200, `dev` 20, which `make test` sets in the matrix, `nightly` 2000), and at
least 200 with COMPAT_CLONE_WIDE=1 (`make test-wide`).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections import Counter
from typing import Any, Dict, List

import numpy as np
from hypothesis import event, given, settings

import compat_clone
from tests.clone.features import family_name, skip_without_subclassed_models
from tests.clone.generated_report import GENERATED
from tests.clone.model_state import assert_unchanged, snapshot
from tests.clone.strategies import SETTINGS
from tests.clone.strategies_subclassed import Generated, Spec, build, family_caps, labels, model_specs, resolve, sequential_specs

WIDE_EXAMPLES = 200
RUN = (
    settings(SETTINGS, max_examples=max(SETTINGS.max_examples, WIDE_EXAMPLES))
    if os.environ.get("COMPAT_CLONE_WIDE") == "1"
    else SETTINGS
)


# -- running and comparing -----------------------------------------------------


def run(K: Any, model: Any, built: Generated) -> np.ndarray:
    """The model's output on the example's inputs (and mask), training=False, as NumPy."""
    family = family_name(K)
    if family == "keras2":  # graph mode: predict
        return np.asarray(model.predict(built.x))
    kwargs = {"mask": built.mask} if built.mask is not None else {}
    out = model(built.x, training=False, **kwargs)
    if family == "keras3":
        return np.asarray(K.ops.convert_to_numpy(out))
    return np.asarray(out)


def _config(layer: Any) -> Dict[str, Any]:
    config = dict(layer.get_config())
    config.pop("name", None)
    config.pop("trainable", None)  # compared on its own
    return config


def _weight_facts(model: Any) -> List[Any]:
    trainable = {id(v) for v in model.trainable_weights}
    return [(tuple(int(d) for d in v.shape), id(v) in trainable) for v in model.weights]


def wrongs(K: Any, built: Generated, clone: Any, expected: np.ndarray) -> List[str]:
    """How `clone` differs from the source (empty: right). Its weights are overwritten last."""
    source, found = built.model, []
    if type(clone) is not type(source):
        found.append(f"class: {type(clone).__module__}.{type(clone).__qualname__}, the source's is {type(source).__qualname__}")
    ours, theirs = _weight_facts(clone), _weight_facts(source)
    if [s for s, _ in ours] != [s for s, _ in theirs]:
        found.append(f"weights: shapes {[s for s, _ in ours]}, the source's {[s for s, _ in theirs]}")
    elif [t for _, t in ours] != [t for _, t in theirs]:
        found.append(f"trainable: per weight {[t for _, t in ours]}, the source's {[t for _, t in theirs]}")
    if bool(clone.trainable) != bool(source.trainable):
        found.append(f"trainable: model {clone.trainable}, the source's {source.trainable}")
    for path, _cls in built.paths:
        try:
            theirs_layer, ours_layer = resolve(source, path), resolve(clone, path)
        except Exception as exc:
            found.append(f"structure: no {path} ({type(exc).__name__}: {exc})")
            continue
        if type(ours_layer) is not type(theirs_layer):
            found.append(f"structure: {path} is a {type(ours_layer).__name__}, the source's a {type(theirs_layer).__name__}")
            continue
        if bool(ours_layer.trainable) != bool(theirs_layer.trainable):
            found.append(f"trainable: {path} {ours_layer.trainable}, the source's {theirs_layer.trainable}")
        if not hasattr(theirs_layer, "layers"):  # a model's own config is its class's business
            a, b = _config(ours_layer), _config(theirs_layer)
            if a != b:
                diff = {k: (a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}
                found.append(f"config {'/'.join(diff)}: {path} (clone, source) {diff}")
    try:
        got = run(K, clone, built)
    except Exception as exc:
        found.append(f"outputs: the clone cannot run ({type(exc).__name__}: {_first_line(exc)})")
    else:
        if got.shape != expected.shape or not np.allclose(got, expected, rtol=1e-6, atol=1e-6):
            found.append(
                f"outputs: {got.ravel()[:4]}..., the source's {expected.ravel()[:4]}... (shapes {got.shape}, {expected.shape})"
            )
    shared = {id(v) for v in source.weights} & {id(v) for v in clone.weights}
    if shared:
        found.append(f"independence: {len(shared)} variable(s) shared with the source")
    before = snapshot(source)
    try:
        clone.set_weights([np.zeros_like(np.asarray(w)) - 1.0 for w in clone.get_weights()])
        assert_unchanged(before, source)
    except Exception as exc:
        found.append(f"independence: writing the clone's weights changed the source ({_first_line(exc)})")
    return found


def native_recipe(K: Any, built: Generated) -> Any:
    """``clone_model(m)``, called on the inputs, the source's weights set."""
    clone = K.models.clone_model(built.model)
    run(K, clone, built)
    clone.set_weights(built.model.get_weights())
    return clone


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else ""


def _from_compat_clone(exc: BaseException) -> bool:
    """Whether compat_clone gave its reason: its own error, or the native one with a ``compat_clone: ...``
    reason in its message (or, where its arguments are structured, in a note)."""
    from compat_clone.errors import CompatCloneError

    notes = getattr(exc, "__notes__", None) or []
    return isinstance(exc, CompatCloneError) or any("compat_clone:" in str(text) for text in [str(exc), *notes])


def _general(text: str) -> str:
    """A message's first line with the example's own names and numbers taken out, to group examples by kind."""
    text = re.sub(r"Gen\d+", "Gen#", text.strip().splitlines()[0] if text.strip() else "")
    return re.sub(r"\d+", "#", text)[:160]


# -- the findings --------------------------------------------------------------


@dataclasses.dataclass
class Finding:
    """One kind of broken rule: how many examples, and the smallest source that shows it."""

    rule: str
    count: int = 0
    detail: str = ""
    code: str = ""

    def add(self, detail: str, code: str) -> None:
        self.count += 1
        if not self.code or len(code) < len(self.code):
            self.detail, self.code = detail, code


class Findings:
    """Broken rules by kind, and every example's outcome."""

    def __init__(self, family: str) -> None:
        self.family = family
        self.broken: Dict[str, Finding] = {}
        self.outcomes: Counter = Counter()
        self.refusals: Dict[str, Finding] = {}
        self.native: Dict[str, Finding] = {}
        self.mix: Counter = Counter()  # the events, counted here too: the given is nested, so pytest shows no statistics

    def breaks(self, rule: str, kind: str, detail: str, code: str) -> None:
        key = f"{rule}: {kind}"
        self.broken.setdefault(key, Finding(key)).add(detail, code)

    def refused(self, kind: str, detail: str, code: str) -> None:
        self.refusals.setdefault(kind, Finding(kind)).add(detail, code)

    def native_fell_short(self, kind: str, detail: str, code: str) -> None:
        self.native.setdefault(kind, Finding(kind)).add(detail, code)

    def record(self) -> Dict[str, Any]:
        """What the run's summary and ``$COMPAT_CLONE_RESULTS/<env>.generated.json`` show of this sweep."""
        return {
            "family": self.family,
            "examples": sum(self.outcomes.values()),
            "outcomes": {f"native {n}, compat_clone {c}": k for (n, c), k in sorted(self.outcomes.items())},
            "mix": dict(sorted(self.mix.items())),
            "broken": {f.rule: f.count for f in self.broken.values()},
            "refusals": {f.rule: f.count for f in self.refusals.values()},
            "native_fell_short": {f.rule: f.count for f in self.native.values()},
        }

    def report(self) -> str:
        lines = [f"{self.family}: outcomes (native, compat_clone): {dict(sorted(self.outcomes.items()))}"]
        lines.append("mix: " + ", ".join(f"{label} {n}" for label, n in sorted(self.mix.items())))
        for finding in sorted(self.broken.values(), key=lambda f: -f.count):
            lines += ["", f"== {finding.rule} ({finding.count} example(s)); the smallest:", finding.detail, finding.code]
        for title, found in (
            ("refusals where the native recipe fails too (allowed)", self.refusals),
            ("the native recipe", self.native),
        ):
            if found:
                lines += ["", f"{title}:"]
                lines += [f"  {f.count} x {f.rule}" for f in sorted(found.values(), key=lambda f: -f.count)]
        return "\n".join(lines)


def check_example(K: Any, spec: Spec, findings: Findings) -> None:
    """Clones one drawn model both ways and holds compat_clone to the rules."""
    if family_name(K) == "keras2":
        K.backend.clear_session()  # graph mode: one graph per example
    built = build(K, spec, eager="eager" in family_caps(K))
    for label in labels(spec):
        event(label)
        findings.mix[label] += 1
    expected = run(K, built.model, built)
    before = snapshot(built.model)
    # compat_clone first: the source it is given is as its user made it, whatever the native recipe does
    compat = compat_clone_outcome(K, built, expected, findings)
    try:
        assert_unchanged(before, built.model)
    except AssertionError as exc:
        findings.breaks("compat_clone changed the source", "", str(exc), built.code)
        return
    native = native_outcome(K, built, expected, findings)
    try:
        assert_unchanged(before, built.model)
    except AssertionError as exc:  # the native recipe's own bug: noted, not failed
        findings.native_fell_short("changes the source", str(exc), built.code)
    if not isinstance(compat, str):  # refused
        kind = f"{type(compat).__name__}: {_general(str(compat))}"
        if native == "ok":
            findings.breaks("refused where the native recipe works", kind, _explained(compat), built.code)
        else:
            findings.refused(kind, _explained(compat), built.code)
    compat_state = compat if isinstance(compat, str) else f"refused ({type(compat).__name__})"
    event(f"native: {native}")
    event(f"compat_clone: {compat_state}")
    findings.outcomes[(native.split(" (")[0], compat_state.split(" (")[0])] += 1


def compat_clone_outcome(K: Any, built: Generated, expected: np.ndarray, findings: Findings) -> Any:
    """``"ok"`` or ``"silently wrong"`` (a broken rule), or the exception of a refusal (its message checked)."""
    try:
        clone = compat_clone.clone_model(built.model, copy_weights=True)
    except Exception as exc:
        if not str(exc).strip():
            findings.breaks("a refusal must say why (str(exc) is empty)", type(exc).__name__, _explained(exc), built.code)
        elif not _from_compat_clone(exc):
            rule = "a refusal must say why (an exception escaped, no compat_clone reason)"
            findings.breaks(rule, type(exc).__name__, _explained(exc), built.code)
        return exc
    wrong = wrongs(K, built, clone, expected)
    if wrong:
        findings.breaks("silently wrong", ", ".join(sorted({w.split(":")[0] for w in wrong})), "\n".join(wrong), built.code)
        return "silently wrong"
    return "ok"


def native_outcome(K: Any, built: Generated, expected: np.ndarray, findings: Findings) -> str:
    """``"ok"``, ``"wrong (<what>)"`` or ``"fails (<exception type>)"``: the native recipe, its class aside."""
    try:
        native = native_recipe(K, built)
    except Exception as exc:
        findings.native_fell_short(f"fails: {type(exc).__name__}: {_general(str(exc))}", str(exc), built.code)
        return f"fails ({type(exc).__name__})"
    wrong = wrongs(K, built, native, expected)
    if any(w.startswith("class") for w in wrong):
        event("native: loses the class")
        findings.native_fell_short("loses the class", "", built.code)
    rest = [w for w in wrong if not w.startswith("class")]
    if not rest:
        return "ok"
    state = f"wrong ({', '.join(sorted({w.split(':')[0] for w in rest}))})"
    findings.native_fell_short(state, "\n".join(rest), built.code)
    return state


def _explained(exc: BaseException) -> str:
    """The exception's type and message, then its notes."""
    return "\n".join([f"{type(exc).__name__}: {exc}", *getattr(exc, "__notes__", [])])


def _sweep(K: Any, strategy: Any, record_property: Any) -> None:
    findings = Findings(f"{family_name(K)} {K.__version__}")

    @RUN
    @given(spec=strategy)
    def check(spec: Spec) -> None:
        check_example(K, spec, findings)

    check()
    print(findings.report())
    record_property(GENERATED, findings.record())
    assert not findings.broken, findings.report()


def test_model_subclasses(K: Any, record_property: Any) -> None:
    skip_without_subclassed_models(K)  # standalone Keras 2.0-2.1: Model() needs inputs and outputs
    _sweep(K, model_specs(family_caps(K)), record_property)


def test_sequential_subclasses(K: Any, record_property: Any) -> None:
    _sweep(K, sequential_specs(family_caps(K)), record_property)
