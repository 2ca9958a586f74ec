"""`--declared` and `--bisect` before anything is built: metadata, derived environments, the plan, the walk.

The release lists here are given (a function of the project's name), so each
case says exactly which releases exist; the built-in table is the real one.
tests/matrix/test_matrix_declared.py runs both options end to end on real
releases from the index.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Dict, List, Sequence

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from compat_clone_matrix.bisect import bisect, candidates, changed_rows, walk_between
from compat_clone_matrix.declared import describe, plan_declared, verdict
from compat_clone_matrix.derive import derive, templates
from compat_clone_matrix.project_meta import Declared, read_declared
from compat_clone_matrix.releases import _version_of
from compat_clone_matrix.summary import Outcome
from compat_clone_matrix.table import Env, TableError, load_table

pytestmark = pytest.mark.tooling

TABLE = load_table()
RELEASES: Dict[str, List[str]] = {
    "keras": [
        "2.2.0",
        "2.2.4",
        "2.3.1",
        "2.4.0",
        "2.15.0",
        "3.0.0",
        "3.0.2",
        "3.1.1",
        "3.2.1",
        "3.3.0",
        "3.3.3",
        "3.15.1",
        "3.16.0",
    ],
    "tf-keras": ["2.15.1", "2.16.0", "2.17.0", "2.21.0"],
    "tensorflow-cpu": ["2.12.0", "2.12.1", "2.15.1", "2.16.2", "2.21.0"],
}


def releases(name: str) -> List[Version]:
    return [Version(v) for v in RELEASES[name.lower().replace("_", "-")]]


def _write(folder: Path, name: str, text: str) -> Path:
    (folder / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return folder


def test_metadata_is_read_from_pyproject_then_setup_cfg_then_setup_py(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "pyproject.toml",
        '[project]\nname = "x"\nrequires-python = ">=3.9"\ndependencies = ["keras>=3.0", "numpy"]\n'
        '[project.optional-dependencies]\ntf = ["tensorflow>=2.16", "keras<3.10"]\n',
    )
    got = read_declared(tmp_path)
    assert got.source == "pyproject.toml" and got.requires_python == ">=3.9"
    ranges = got.ranges()
    assert ranges["keras"][0] == SpecifierSet(">=3.0,<3.10")  # an extra's range counts with the dependencies'
    assert ranges["keras"][1] == ["keras>=3.0", "keras<3.10"] and ranges["tensorflow"][0] == SpecifierSet(">=2.16")
    assert got.installed_beside() == ["numpy"]
    assert got.python_allows("3.11") and not got.python_allows("3.7") and got.python_allows("/usr/bin/python3")

    cfg = tmp_path / "cfg"
    cfg.mkdir()
    _write(cfg, "pyproject.toml", '[project]\nname = "x"\ndynamic = ["dependencies"]\n')  # computed: read elsewhere
    _write(
        cfg,
        "setup.cfg",
        "[options]\npython_requires = >=3.8\ninstall_requires =\n    tf-keras>=2.16  # legacy\n    h5py\n"
        "[options.extras_require]\ncpu = tensorflow-cpu<2.19\n",
    )
    got = read_declared(cfg)
    assert got.source == "setup.cfg" and got.ranges()["tf-keras"][0] == SpecifierSet(">=2.16")
    assert got.ranges()["tensorflow"][0] == SpecifierSet("<2.19") and got.installed_beside() == ["h5py"]

    py = tmp_path / "py"
    py.mkdir()
    _write(
        py,
        "setup.py",
        "from setuptools import setup\nsetup(name='x', install_requires=['keras>=2.2,<2.4'], python_requires='>=3.6')\n",
    )
    assert read_declared(py).ranges()["keras"][0] == SpecifierSet(">=2.2,<2.4")


def test_metadata_that_cannot_be_read_is_refused_with_the_way_out(tmp_path: Path) -> None:
    with pytest.raises(TableError, match="No dependencies declared in .*Run --declared from the project's root"):
        read_declared(tmp_path)
    _write(
        tmp_path,
        "setup.py",
        "from setuptools import setup\nREQS = open('r.txt').read().split()\nsetup(name='x', install_requires=REQS)\n",
    )
    with pytest.raises(TableError, match=r"setup.py computes `install_requires` \(line 3\).*pyproject.toml"):
        read_declared(tmp_path)
    _write(tmp_path, "pyproject.toml", '[project]\nname = "x"\ndependencies = ["keras >= = 3"]\n')
    with pytest.raises(TableError, match="declares a requirement that cannot be read: 'keras >= = 3'"):
        read_declared(tmp_path)


def test_each_claimed_series_is_a_template_and_a_release_moves_its_pin() -> None:
    found = {t.env.name: t for t in templates(TABLE)}
    assert (found["keras-3.0-tf"].package, str(found["keras-3.0-tf"].pinned)) == ("keras", "3.0.0")
    assert (found["tf_keras-2.16"].package, found["tf_keras-2.16"].group) == ("tf_keras", "tf-keras")  # not its TensorFlow
    assert (found["tf.keras-2.12"].package, found["keras-2.3.1"].package) == ("tensorflow-cpu", "keras")

    keras3 = derive(found["keras-3.0-tf"], Version("3.0.2"), ["numpy"])
    assert keras3.name == "keras-3.0.2-tf" and "keras==3.0.2" in keras3.packages and "keras==3.0.0" not in keras3.packages
    assert (
        dict(keras3.expect)["version"] == "3.0.2"
        and keras3.packages[-1] == "numpy"
        and keras3.env == found["keras-3.0-tf"].env.env
    )
    legacy = derive(found["tf_keras-2.16"], Version("2.16.0"))
    assert legacy.no_deps == ("tf_keras==2.16.0",) and "tensorflow-cpu==2.16.2" in legacy.packages
    tf = derive(found["tf.keras-2.12"], Version("2.12.0"))
    # TensorFlow's tf.keras is the keras package of the series: the claim stays the series
    assert tf.name == "tf.keras-2.12.0" and dict(tf.expect)["version"] == "2.12" and "tensorflow-cpu==2.12.0" in tf.packages


def _plan_lines(requirements: Sequence[str], python: str = ">=3.9") -> List[str]:
    declared = Declared(source="pyproject.toml", requirements=tuple(requirements), requires_python=python)
    return describe(plan_declared(declared, TABLE, releases))


def test_the_plan_tests_both_ends_of_each_family_and_names_what_it_cannot_test() -> None:
    lines = _plan_lines(["keras>=2.2", "numpy"], python=None)  # type: ignore[arg-type]
    text = "\n".join(lines)
    assert "keras2   lowest  keras 2.2.0" in text and "in keras-2.2.0-tf1 (from the table's keras-2.2.4-tf1)" in text
    assert "keras2   highest keras 2.3.1            in keras-2.3.1 (from the table's keras-2.3.1)" in text
    assert "keras3   lowest  keras 3.0.0" in text and "keras3   highest keras 3.15.1" in text
    assert "not tested: keras 2.4.0 ... 2.15.0 (2 releases)" in text  # tf.keras's own packages: no table series
    assert "not tested: keras 3.16.0: allowed by keras>=2.2" in text  # a series newer than the table: said, never guessed

    text = "\n".join(_plan_lines(["tensorflow>=2.12"]))
    assert "tf_keras lowest  tensorflow-cpu 2.12.0  in tf.keras-2.12.0" in text
    assert "tensorflow 2.16.2 ... 2.21.0 (2 releases)" in text and "its tf.keras is Keras 3" in text
    assert "table environments the project cannot use: tf.keras-2.4 (Python 3.8; the project requires >=3.9)" not in text

    # the other ranges bound which environments serve: TensorFlow < 2.19 leaves tf_keras 2.21 out
    text = "\n".join(_plan_lines(["tf-keras>=2.16", "tensorflow<2.19"]))
    assert "tf_keras highest tf_keras 2.17.0" in text and "tf_keras-2.21 (tensorflow-cpu 2.21.0 outside <2.19)" in text
    assert "tf-keras 2.21.0: allowed by tf-keras>=2.16" in text

    with pytest.raises(TableError, match="declares no Keras package"):
        _plan_lines(["numpy"])
    with pytest.raises(TableError, match="No release the project declares is covered by the table"):
        _plan_lines(["keras>=3.16"])


def _outcome(env: str, status: str, failures: Sequence[str] = ()) -> Outcome:
    return Outcome(env=env, status=status, failures=list(failures))


def test_the_verdict_names_the_failing_end_and_the_bisect_that_finds_where() -> None:
    declared = Declared(source="pyproject.toml", requirements=("keras>=3.0",))
    plan = plan_declared(declared, TABLE, releases)
    low, high = [p.env.name for p in plan.points]
    holds, lines = verdict(
        plan, [_outcome(low, "ok"), _outcome(high, "FAILED", ["FAILED t.py::test_x - boom"])], ["pytest", "-q"]
    )
    assert not holds
    assert lines[0] == "keras3: the declared range keras>=3.0 does NOT hold: keras 3.15.1 (highest): FAILED"
    assert lines[1] == "  where it broke: compat-clone matrix --bisect keras3 --good 3.0.0 --bad 3.15.1 -- pytest -q"
    assert "  FAILED t.py::test_x - boom" in lines
    holds, lines = verdict(plan, [_outcome(low, "ok"), _outcome(high, "ok")], ["pytest"])
    assert holds and lines[0] == "keras3: holds: keras 3.0.0 (lowest) ok and keras 3.15.1 (highest) ok"


def _walk(good: str, bad: str, breaks_at: str, unjudged: Sequence[str] = ()) -> List[str]:
    served = candidates("keras3", TABLE, releases)
    ran: List[str] = []

    def run_envs(envs: Sequence[Env]) -> List[Outcome]:
        out = []
        for env in envs:
            version = Version(dict(env.expect)["version"])
            ran.append(str(version))
            broken = version >= Version(breaks_at) if Version(good) < Version(bad) else version < Version(breaks_at)
            status = "NO TESTS" if str(version) in unjudged else "FAILED" if broken else "ok"
            out.append(_outcome(env.name, status))
        return out

    steps, lo, hi, walk = bisect("keras3", good, bad, served, run_envs, say=lambda line: None)
    assert [s.verdict for s in steps][:2] == ["good", "bad"]
    return [str(walk[lo]) if lo is not None else "-", str(walk[hi]) if hi is not None else "-"] + ran


def test_the_walk_halves_between_good_and_bad_in_either_order_and_skips_what_cannot_be_judged() -> None:
    served = candidates("keras3", TABLE, releases)
    assert [str(v) for v in served][:3] == ["3.0.0", "3.0.2", "3.1.1"] and Version("3.16.0") not in served
    assert [str(v) for v, _ in walk_between(served, "3.2", "3.0", "keras3")] == ["3.2.1", "3.1.1", "3.0.2", "3.0.0"]
    got = _walk("3.0.0", "3.15.1", breaks_at="3.3.3")
    assert got[:2] == ["3.3.0", "3.3.3"] and len(got) - 2 <= 2 + 3  # both ends, then at most log2 of the 6 between
    assert _walk("3.15.1", "3.0.0", breaks_at="3.2.1")[:2] == ["3.2.1", "3.1.1"]  # newer passes: walked downwards
    assert _walk("3.0.0", "3.15.1", breaks_at="3.3.3", unjudged=["3.3.0"])[:2] == ["3.2.1", "3.3.3"]
    with pytest.raises(TableError, match=r"--bad 3.16: no environment of the table serves that release of keras3.*3.15.1"):
        walk_between(served, "3.0", "3.16", "keras3")
    with pytest.raises(TableError, match="name the same release"):
        walk_between(served, "3.0", "3.0.0", "keras3")


def test_the_rows_that_change_between_two_releases_are_named() -> None:
    rows = changed_rows("keras3", Version("3.3.2"), Version("3.3.3"))
    assert any(row.startswith("trainable-model (>=3.3.3; starts at 3.3.3)") for row in rows), rows
    assert any(row.startswith("no-call-function (<3.3.3; ends at 3.3.3)") for row in rows), rows
    assert changed_rows("keras3", Version("3.15.0"), Version("3.15.0")) == []


def test_a_release_is_read_from_a_file_name_of_the_index() -> None:
    assert _version_of("tf_keras-2.16.0-py3-none-any.whl", "tf-keras") == Version("2.16.0")
    assert _version_of("keras-3.9.2.tar.gz", "keras") == Version("3.9.2")
    assert _version_of("keras_hub-0.1.0-py3-none-any.whl", "keras") is None
