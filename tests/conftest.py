"""Shared test set-up: which Keras family this environment serves.

The matrix runner (`compat-clone matrix`) sets, per environment:

* ``COMPAT_CLONE_ENV``              the environment's name in the matrix table;
* ``COMPAT_CLONE_EXPECT_FAMILY``    ``keras3`` | ``tf_keras`` | ``keras2``;
* ``COMPAT_CLONE_EXPECT_VERSION``   the version the family's package must have
                                    (prefix match: ``2.2.4``, ``3.15``);
* ``COMPAT_CLONE_EXPECT_BACKEND``   Keras 3 backend (``tensorflow``/``jax``/``torch``);
* ``COMPAT_CLONE_RESULTS``          folder where feature results are written;
* ``COMPAT_CLONE_SOAK``             ``1`` where soak tests (marker ``soak``) run
                                    (set by our overlay, tests/matrix-overlay.toml,
                                    as are ``COMPAT_CLONE_SUITE``, ``HYPOTHESIS_PROFILE`` and
                                    ``COMPAT_CLONE_WIDE_PROFILE``: tests/clone/strategies.py);
* ``COMPAT_CLONE_WIDE``             ``1`` in ``make test-wide``: the tests ``make test``
                                    runs in fewer environments run in all.

Without them (plain ``pytest`` in the default ``.venv``) every family the
environment can import is tested: Keras 3 and ``tf_keras``.

The ``K`` fixture is the Keras module of the family under test, so one test
body runs on every family: ``K.Input``, ``K.layers``, ``K.Model``,
``K.models.clone_model``.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Set, Tuple

import pytest

from tests.support import cpu_time
from tests.support.cache import cache_dir
from tests.support.families import FAMILIES, WIDE, families_under_test, keras_module, matrix_dir

# On a GPU, JAX preallocates most of the GPU's memory in every process that
# initializes its backend, and TensorFlow takes it all on its first GPU op:
# with pytest-xdist workers (and the placement tests' worker interpreters,
# which inherit this environment) the second process then fails to allocate.
# Set before any framework is imported: this module is imported before any
# test module, and `families_under_test()` below imports Keras.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")

# JAX compiles every jitted program with XLA, and on a CPU the compiles are
# most of a JAX test's time: the same tiny programs (initializers, predict and
# train steps of the same small models) again in each xdist worker and in each
# interpreter a test starts. Two settings, measured on keras-3.15-jax with the
# conversion zoo, test_zoo, holdings, native guarantees and random models
# (126 tests, `-n 2`, quiet 2-core machine): 263 s wall / 478 CPU s as JAX
# ships; 198 s / 350 s with the compilation cache alone (a fresh folder, shared
# by the workers and every interpreter they start); 143 s / 237 s with both.
# - The persistent compilation cache, in the suite's cache folder outside the
#   checkout (tests/support/cache.py: ~/.cache/compat-clone/jax), so that a fresh
#   clone reads what an earlier run compiled. JAX names an entry
#   by the program's HLO, the jax/jaxlib versions, the device and the compile
#   options and XLA flags, so an entry of another version or setting is never
#   read (it is another name). Capped: JAX drops the least recently used.
# - XLA's backend optimization level 0: LLVM compiles without its optimizing
#   passes. It changes how fast a program runs, not what it computes, and the
#   suite's models are a few kilobytes. A source and its clone run under the
#   same flags, and the conversion proofs compare with Keras 2 files' outputs
#   within their tolerances.
# Both are defaults: a value set outside wins (XLA_FLAGS set outside keeps
# the optimization level XLA defaults to). The flag is set where JAX is the
# backend only: TensorFlow reads XLA_FLAGS too, for its `jit_compile` models.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(cache_dir("jax", matrix_dir() / ".jax-cache")))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
os.environ.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", str(512 * 2**20))
if os.environ.get("KERAS_BACKEND") == "jax":
    os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0")


# The package's artifacts and the clean-venv check run once per `make test`,
# from the developer environment, before the matrix (`make packaging`): the
# environments themselves import the wheel it checked. The structure check
# (dev/structure_check.py) reads the source tree: once, from the developer
# environment (`make lint` and the default suite), and so is the test index's check
# (dev/test_index.py, docs/tests.md), which needs Python 3.9's `ast` as the structure check does.
collect_ignore = (
    ["tools/test_packaging.py", "tools/test_structure.py", "tools/test_structure_exports.py", "tools/test_test_index.py"]
    if os.environ.get("COMPAT_CLONE_ENV")
    else []
)


def pytest_configure(config: Any) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: Any) -> None:
    cpu_time.start(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: Any) -> Iterator[None]:
    yield
    cpu_time.finish(item)  # before the teardown report is made, which carries it


@pytest.fixture(params=families_under_test())
def K(request: Any) -> Any:
    """The Keras module of the family under test."""
    return keras_module(request.param)


@pytest.fixture(autouse=True)
def _keras2_fresh_graph(request: Any) -> None:
    """Standalone Keras 2 (TF1 graph mode): every test on it starts in a new graph.

    One graph holds every model built in it, and each session call
    initializes and runs over all of them: in one pytest worker each test
    costs more than the one before (measured on keras-2.1.6-tf1:
    test_concurrency's eight-thread test 4 s alone, 60 s at the end of the
    suite). Autouse fixtures run before the test's own, so a model fixture
    builds in the new graph.
    """
    params = getattr(getattr(request.node, "callspec", None), "params", {})
    if params.get("K") == "keras2":
        keras_module("keras2").backend.clear_session()


@pytest.fixture
def family(K: Any) -> str:
    import compat_clone

    inputs = K.Input((2,))
    model = K.models.Model(inputs, K.layers.Dense(1)(inputs))
    return compat_clone.family_of(model).family


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The cases sweeps skipped, each with why (tests/clone/sweeps.py), the layer catalogue's table
    (tests/clone/catalogue.py), the generated models' outcomes (tests/clone/generated_report.py), and where
    the CPU went (tests/support/cpu_time.py), after the run's summary."""
    from tests.clone.sweeps import summary_lines

    reports = [report for reports in terminalreporter.stats.values() for report in reports]
    lines = summary_lines(reports)
    if lines:
        terminalreporter.section("cases skipped by sweeps")
        for line in lines:
            terminalreporter.line(line)
    _catalogue_summary(terminalreporter, reports)
    _generated_summary(terminalreporter, reports)
    lines = cpu_time.summary_lines(reports)
    if lines:
        terminalreporter.section("CPU time")
        for line in lines:
            terminalreporter.line(line)


def _section(terminalreporter: Any, title: str, lines: List[str], kind: str, payload: Dict[str, Any]) -> bool:
    """Prints `lines` under `title` and writes ``{"env": ..., **payload}`` to ``$COMPAT_CLONE_RESULTS/<env>.<kind>.json``;
    whether it was written (no results folder: printed only)."""
    terminalreporter.section(title)
    for line in lines:
        terminalreporter.line(line)
    folder = os.environ.get("COMPAT_CLONE_RESULTS")
    if not folder:
        return False
    import json

    os.makedirs(folder, exist_ok=True)
    env = os.environ.get("COMPAT_CLONE_ENV", "default")
    with open(os.path.join(folder, f"{env}.{kind}.json"), "w", encoding="utf-8") as fh:
        json.dump({"env": env, **payload}, fh, indent=1, sort_keys=True)
    return True


def _catalogue_summary(terminalreporter: Any, reports: List[Any]) -> None:
    """The layer catalogue's per-family table, printed, and written to ``$COMPAT_CLONE_RESULTS/<env>.catalogue.json``."""
    if not any(getattr(report, "user_properties", None) and "test_catalogue.py" in report.nodeid for report in reports):
        return
    from tests.clone.catalogue import gather, summary_lines

    families = gather(reports)
    if families and _section(terminalreporter, "layer catalogue", summary_lines(families), "catalogue", {"families": families}):
        _catalogue_records(families)


def _generated_summary(terminalreporter: Any, reports: List[Any]) -> None:
    """The generated subclassed models' outcomes, printed, and written to ``$COMPAT_CLONE_RESULTS/<env>.generated.json``."""
    from tests.clone.generated_report import gather, summary_lines

    sweeps = gather(reports)
    if sweeps:
        _section(terminalreporter, "generated subclassed models", summary_lines(sweeps), "generated", {"sweeps": sweeps})


def _catalogue_records(families: Dict[str, Any]) -> None:
    """COMPATIBILITY.md's row group for the catalogue: per container, native and compat_clone, "N of M classes"."""
    import types

    from tests.clone.feature_records import write_records

    for fam in families.values():
        package, _, version = str(fam.get("keras", "? ?")).partition(" ")
        keras = types.SimpleNamespace(__name__=package, __version__=version)
        exported = fam["exported"]
        for container, n in fam["containers"].items():
            if not n["built"]:
                continue
            of = f" of {n['built']} classes built ({exported} exported)" if exported is not None else f" of {n['built']} classes"
            records = [
                {
                    "feature": f"catalogue_{container}",
                    "description": f"catalogue, every exported layer class in a {container} container: N of M classes pass",
                    "side": side,
                    "outcome": "pass" if n[key] == n["built"] else "fail",
                    "detail": f"{n[key]}{of}",
                }
                for side, key in (("native", "native_pass"), ("compat_clone", "compat_clone_pass"))
            ]
            write_records(keras, records)


def _run_envs(here: str | None, run: Optional[Iterable[str]]) -> Optional[Tuple[List[Any], Set[str]]]:
    """The built-in table and the names of this matrix run's environments (`here` among them).

    The run is `run`, or ``COMPAT_CLONE_MATRIX_ENVS`` (and `here` itself).
    None outside the matrix, for an environment of another table, or where
    the table cannot be read: there, `here` runs every marker's tests.
    """
    if here is None or os.environ.get("COMPAT_CLONE_TABLE", "built-in") != "built-in":
        return None
    try:
        from compat_clone_matrix.table import load_table

        table = load_table(None)
    except Exception:
        return None
    if here not in {env.name for env in table}:
        return None
    names = set(os.environ.get("COMPAT_CLONE_MATRIX_ENVS", here).split(",") if run is None else run) | {here}
    return table, names


def _run_host(
    here: str | None, same: Callable[[Any], object], *, newest: bool, run: Optional[Iterable[str]] = None
) -> str | None:
    """Of this matrix run's environments serving what `here` serves (`same` equal), the one that runs a marker's tests.

    The run's environments (`_run_envs`) in the order of the built-in table:
    the first, or with `newest` the last. `here` itself outside the matrix,
    for an environment of another table, or where the table cannot be read.
    """
    found = _run_envs(here, run)
    if found is None:
        return here
    table, names = found
    key = {env.name: same(env) for env in table}
    hosts = [env.name for env in table if env.name in names and key[env.name] == key[here]]
    return hosts[-1] if newest else hosts[0]


def _tooling_host(here: str | None, *, run: Optional[Iterable[str]] = None, wide: Optional[bool] = None) -> str | None:
    """The environment of this matrix run that runs the tests marked `tooling` for `here`.

    They test the command line's tools (the matrix, its reports, its
    installs), which import no framework: what can differ between two
    environments is the interpreter (and the pytest it has). They run at the
    two ends of the run's Pythons: in the first environment of the built-in
    table with the oldest ``python`` of the run (`_run_envs`), and in the
    first with the newest; an environment whose Python lies between is
    served by the oldest's. The interpreters between them run the same code
    as both ends (the tools keep to the oldest's language and library:
    Python 3.7's), and every environment runs the matrix's pytest plugin for
    its own results anyway. `make test-wide` (`wide`, `WIDE` by default)
    runs them once per Python of the run, as before.
    """
    if WIDE if wide is None else wide:
        return _run_host(here, lambda env: env.python, newest=False, run=run)
    found = _run_envs(here, run)
    if found is None:
        return here
    table, names = found
    ours = [env for env in table if env.name in names]  # the run, in the table's order
    ends = sorted({env.python for env in ours}, key=lambda python: tuple(int(p) for p in python.split(".") if p.isdigit()))
    python = next(env.python for env in ours if env.name == here)
    end = python if python in (ends[0], ends[-1]) else ends[0]
    return next(env.name for env in ours if env.python == end)


def _serves(env: Any) -> Tuple[object, ...]:
    """What an environment of the table serves, as far as the `per_claim` tests can tell apart.

    The family and backend it claims, the Keras module a Keras 2 family
    answers to (``tf_keras`` where ``TF_USE_LEGACY_KERAS`` is set, the Keras
    inside TensorFlow otherwise), and TensorFlow's major version, which
    decides graph or eager mode (standalone Keras 2 runs on TF 1 and TF 2).
    """
    expect = dict(env.expect)
    majors = {
        req.split("==", 1)[1].split(".")[0]
        for req in env.packages
        if req.split("==", 1)[0] in ("tensorflow", "tensorflow-cpu") and "==" in req
    }
    return (
        expect.get("family"),
        expect.get("backend", "tensorflow"),
        dict(env.env).get("TF_USE_LEGACY_KERAS") == "1",
        tuple(sorted(majors)),
    )


def _claim_host(here: str | None, *, run: Optional[Iterable[str]] = None, wide: Optional[bool] = None) -> str | None:
    """The environment of this matrix run that runs the tests marked `per_claim` for what `here` serves.

    Those tests (the README's blocks, `patch()`'s routing of a Keras imported
    later, TensorFlow's placement across devices) exercise what a family,
    backend, module and TensorFlow major have in common rather than what a
    Keras release changed, and each starts interpreters of its own: of the
    run's environments (`run`, or ``COMPAT_CLONE_MATRIX_ENVS``) serving the
    same (`_serves`), the last of the built-in table, the newest, runs them
    (`_run_host`). A run of one environment runs them there; `make test-wide`
    (`wide`, `WIDE` by default) runs them everywhere.
    """
    if WIDE if wide is None else wide:
        return here
    return _run_host(here, _serves, newest=True, run=run)


def pytest_collection_modifyitems(config: Any, items: List[Any]) -> None:
    """Skips tests marked for a family this run does not test."""
    active = set(families_under_test())
    # Soak checks run in one matrix env per family and backend (our overlay,
    # tests/matrix-overlay.toml, sets COMPAT_CLONE_SOAK=1 there) and always outside the matrix.
    soak_here = not os.environ.get("COMPAT_CLONE_ENV") or os.environ.get("COMPAT_CLONE_SOAK") == "1"
    # An environment kept as a conversion SOURCE only (tf.keras-2.4: TensorFlow 2.4's
    # own SavedModels) sets COMPAT_CLONE_SUITE=framework-free: the tests that clone
    # with its Keras (fixture K, a family marker) are not claimed there.
    framework_free = os.environ.get("COMPAT_CLONE_SUITE") == "framework-free"
    here = os.environ.get("COMPAT_CLONE_ENV")
    tooling_host = _tooling_host(here)
    claim_host = _claim_host(here)
    for item in items:
        if framework_free and (
            {"K", "family"} & set(getattr(item, "fixturenames", ())) or any(item.get_closest_marker(fam) for fam in FAMILIES)
        ):
            item.add_marker(
                pytest.mark.skip(
                    reason=f"{os.environ.get('COMPAT_CLONE_ENV')} runs the framework-free tests only (COMPAT_CLONE_SUITE)"
                )
            )
            continue
        if (
            item.get_closest_marker("tooling")
            and tooling_host != here
            and not any(item.get_closest_marker(m) for m in ("soak", "slow"))
        ):
            item.add_marker(
                pytest.mark.skip(
                    reason=f"framework-free tooling test: runs in {tooling_host} (this run's oldest and newest Pythons run them; "
                    "every Python in make test-wide)"
                )
            )
        if item.get_closest_marker("per_claim") and claim_host != here:
            item.add_marker(
                pytest.mark.skip(
                    reason=f"runs in {claim_host}, this run's newest environment serving "
                    "the same family, backend, module and TensorFlow major; "
                    "everywhere in make test-wide"
                )
            )
        if item.get_closest_marker("soak") and not soak_here:
            item.add_marker(pytest.mark.skip(reason="soak check: runs in the matrix envs with COMPAT_CLONE_SOAK=1"))
        for fam in FAMILIES:
            if item.get_closest_marker(fam) and fam not in active:
                item.add_marker(pytest.mark.skip(reason=f"{fam} is not tested in this environment"))
