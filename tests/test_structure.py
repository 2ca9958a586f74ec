"""The package's structure: module and function sizes as signals, imports one way.

`dev/structure_check.py` (also run by `make lint`) holds the rules: no module
over 450 lines, no function over 80 (docstring excluded), no import cycle in
a static graph that counts `TYPE_CHECKING` and function-level imports, and a
package `__init__` that imports nothing from `compat_clone.tools`. Here the
package passes it, and each rule is shown to catch a package built to break
it. Run from the developer environment only (conftest.py): the check reads
the source tree, once per run, and needs Python 3.8's `ast` end lines.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, List

from dev import structure_check as check

ROOT = Path(__file__).resolve().parent.parent


def _package(tmp_path: Path, files: Dict[str, str]) -> Path:
    """A fake `compat_clone` under ``tmp_path/src`` from {relative path: source}; returns src."""
    src = tmp_path / "src"
    for name, text in files.items():
        path = src / "compat_clone" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return src


def _keys(src: Path) -> List[str]:
    return sorted(v.key for v in check.check(src))


def test_the_package_passes_and_the_known_list_is_current() -> None:
    new, _, gone = check.report(check.check(), check.KNOWN)
    assert not new, "structure violations (dev/structure_check.py):\n" + "\n".join(new)
    assert not gone, "\n".join(gone)
    assert all(owner for owner in check.KNOWN.values())


def test_module_and_function_sizes(tmp_path: Path) -> None:
    docstring = '    """' + "\n".join(["A long docstring."] * 10) + '\n    """\n'
    body80 = "".join(f"    x{i} = {i}\n" for i in range(79))  # def line + 79 = 80 lines
    src = _package(tmp_path, {
        "__init__.py": "",
        "big.py": "x = 1\n" * 451,
        "fits.py": "x = 1\n" * 450,
        "funcs.py": (
            "def ok():\n" + docstring + body80
            + "\n\nclass C:\n    def long(self):\n" + "".join(f"        y{i} = {i}\n" for i in range(80))
        ),
    })
    found = {v.key: v for v in check.check(src)}
    assert sorted(found) == ["function compat_clone/funcs.py:C.long", "module compat_clone/big.py"]
    assert str(found["module compat_clone/big.py"]) == "compat_clone/big.py:1: module has 451 lines (at most 450)"
    assert str(found["function compat_clone/funcs.py:C.long"]).startswith(
        "compat_clone/funcs.py:95: function C.long has 81 lines without its docstring")


def test_cycles_count_type_checking_and_function_level_imports(tmp_path: Path) -> None:
    src = _package(tmp_path, {
        "__init__.py": "",
        "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from compat_clone.b import B\n",
        "b.py": "def f():\n    from compat_clone import a\n    return a\n",
        "c.py": "import compat_clone.d\n",
        "d.py": "x = 1\n",
    })
    violations = check.check(src)
    assert [v.key for v in violations] == ["cycle compat_clone.a compat_clone.b"]
    text = str(violations[0])
    assert text.startswith("compat_clone/a.py:1: import cycle among 2 modules: compat_clone.a, compat_clone.b")
    assert "compat_clone/a.py:3: imports compat_clone.b" in text
    assert "compat_clone/b.py:2: imports compat_clone.a" in text


def test_a_package_and_its_children(tmp_path: Path) -> None:
    # The __init__ importing its child counts; the child importing a sibling
    # *through the package* (`from compat_clone.pkg import sibling`) reads the
    # package's namespace and counts too, closing a circle. `import a.b.c`
    # does not count the parents Python imports on the way.
    src = _package(tmp_path, {
        "__init__.py": "",
        "pkg/__init__.py": "from compat_clone.pkg.child import f\n",
        "pkg/child.py": "from compat_clone.pkg import sibling\ndef f():\n    return sibling\n",
        "pkg/sibling.py": "x = 1\n",
        "other/__init__.py": "from compat_clone.other.leaf import y\n",
        "other/leaf.py": "import compat_clone.other.twig\ny = 1\n",
        "other/twig.py": "from .leaf2 import z\n",
        "other/leaf2.py": "z = 1\n",
    })
    assert _keys(src) == ["cycle compat_clone.pkg compat_clone.pkg.child"]


def test_the_package_init_imports_nothing_from_tools(tmp_path: Path) -> None:
    src = _package(tmp_path, {
        "__init__.py": "def __getattr__(name):\n    from .tools.matrix.sessions import nox_sessions\n    return nox_sessions\n",
        "tools/__init__.py": "",
        "tools/matrix/__init__.py": "",
        "tools/matrix/sessions.py": "def nox_sessions():\n    pass\n",
    })
    violations = check.check(src)
    assert [str(v) for v in violations] == [
        "compat_clone/__init__.py:2: the package's __init__ imports compat_clone.tools.matrix.sessions "
        "(it may import nothing from compat_clone.tools)"]


def test_known_entries_and_stale_ones(tmp_path: Path) -> None:
    src = _package(tmp_path, {"__init__.py": "", "big.py": "x = 1\n" * 451})
    violations = check.check(src)
    new, still, gone = check.report(violations, {"module compat_clone/big.py": "someone", "cycle x y": "other"})
    assert new == [] and still == ["compat_clone/big.py:1: [known, someone] module has 451 lines (at most 450)"]
    assert gone == ["KNOWN lists 'cycle x y' (other), which is fixed: remove it from dev/structure_check.py"]


def _run(src: Path) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([sys.executable, str(ROOT / "dev" / "structure_check.py"), "--src", str(src), "--strict"],
                          capture_output=True, text=True, timeout=60)


def test_the_command_line(tmp_path: Path) -> None:
    done = _run(_package(tmp_path, {"__init__.py": "", "big.py": "x = 1\n" * 451}))
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines() == ["compat_clone/big.py:1: module has 451 lines (at most 450)",
                                        "structure check: 1 violations, 0 known (listed in KNOWN), 0 stale KNOWN entries"]
    done = _run(_package(tmp_path / "clean", {"__init__.py": ""}))
    assert done.returncode == 0, done.stdout + done.stderr
