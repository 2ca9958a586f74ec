"""Rules 10 and 11 of the structure check: `__all__` is what other modules use; the tools use public modules.

`dev/structure_exports.py` holds the rule; tests/tools/test_structure.py holds the
other rules' cases (and checks that the package passes every rule).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from dev import structure_check as check


def test_imports_of_public_names_follow_all(tmp_path: Path) -> None:
    # Found: a public name its module's __all__ leaves out, and one from a
    # module with no __all__ (relative imports and lazy ones too). Not found:
    # a name in __all__, a submodule, a private name (rule 6's), a module's own
    # names, names from outside the packages.
    src = tmp_path / "src"
    files = {
        "__init__.py": "",
        "sub/__init__.py": "",
        "sub/leaf.py": "x = 1\n",
        "listed.py": "__all__ = ['shown']\nshown = hidden = 1\n_private = 2\n",
        "bare.py": "thing = 1\n",
        "user.py": (
            "from os import path\nfrom compat_clone.listed import shown, _private\nfrom compat_clone.sub import leaf\n"
            "from .listed import hidden\ndef f():\n    from compat_clone.bare import thing\n    return thing\n"
        ),
    }
    for name, text in files.items():
        path = src / "compat_clone" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    assert [str(v) for v in check.check(src) if v.key.startswith("export")] == [
        "compat_clone/user.py:4: imports hidden from compat_clone.listed, whose __all__ leaves it out",
        "compat_clone/user.py:6: imports thing from compat_clone.bare, which declares no __all__",
    ]


def test_tools_import_no_private_module_of_the_library(tmp_path: Path) -> None:
    # Found: a tool (and `__main__`) importing a library module with a `_` in
    # its path. Not found: a tool's own private module, a public library module.
    src = tmp_path / "src"
    files = {
        "__init__.py": "",
        "_compat.py": "__all__ = ['x']\nx = 1\n",
        "api.py": "__all__ = ['f']\nf = 1\n",
        "__main__.py": "from compat_clone import _compat\n",
        "tools/__init__.py": "",
        "tools/_own.py": "__all__ = ['y']\ny = 1\n",
        "tools/cli.py": "from compat_clone._compat import x\nfrom compat_clone.api import f\nfrom compat_clone.tools._own import y\n",
    }
    for name, text in files.items():
        path = src / "compat_clone" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    assert [str(v) for v in check.check(src) if v.key.startswith("tools-private")] == [
        "compat_clone/__main__.py:1: a tool imports compat_clone._compat, a private module of the library",
        "compat_clone/tools/cli.py:1: a tool imports compat_clone._compat, a private module of the library",
    ]
