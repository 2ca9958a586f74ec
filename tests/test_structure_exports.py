"""Rule 10 of the structure check: each module's `__all__` is what other modules use.

`dev/structure_exports.py` holds the rule; tests/test_structure.py holds the
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
