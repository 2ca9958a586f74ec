"""Writes src/compat_clone/tools/migrate/keras3_api.py: Keras 3's public names, by module.

`compat-clone migrate --to keras3` rewrites a name only to a Keras 3 name that
exists; this table says which do. It is read from the installed Keras 3 (the
developer environment's) and checked against it by
tests/migrate/test_migrate_keras3.py::test_keras3_api_table_is_the_installed_keras.

Usage: ``python dev/keras3_api.py --write`` (or ``--check``: exit 1 when stale).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import types
from pathlib import Path
from typing import Dict, List

TARGET = Path(__file__).resolve().parent.parent / "src" / "compat_clone" / "tools" / "migrate" / "keras3_api.py"
# Not targets of a rewrite: the op submodules (`keras.ops` holds their names), and
# `keras.optimizers.legacy`, whose classes raise in Keras 3.
SKIPPED = ("keras.ops.", "keras.optimizers.legacy", "keras.src", "keras.legacy")


def public_names() -> Dict[str, List[str]]:
    """Every public module of the installed Keras 3 and the names it holds (its submodules included)."""
    import keras

    found: Dict[str, List[str]] = {}

    def walk(module: types.ModuleType, name: str) -> None:
        names = []
        for attr in sorted(n for n in dir(module) if not n.startswith("_")):
            value = getattr(module, attr)
            child = f"{name}.{attr}"
            if isinstance(value, types.ModuleType):
                if not value.__name__.startswith("keras") or child.startswith(SKIPPED) or attr == "src":
                    continue
                walk(value, child)
            names.append(attr)
        found[name] = names

    walk(keras, "keras")
    return found


def render() -> str:
    """The module's text."""
    import keras

    lines = [
        f'"""Keras {keras.__version__}\'s public names, by module: data written by dev/keras3_api.py; do not edit.',
        "",
        "`keras3_rules` rewrites an old Keras name only to one listed here. No libcst, no framework.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Dict, FrozenSet",
        "",
        '__all__ = ["KERAS3_VERSION", "KERAS3_NAMES"]',
        "",
        f'KERAS3_VERSION = "{keras.__version__}"',
        "",
        "",
        "def _names(text: str) -> FrozenSet[str]:",
        "    return frozenset(text.split())",
        "",
        "",
        "KERAS3_NAMES: Dict[str, FrozenSet[str]] = {",
    ]
    for module, names in sorted(public_names().items()):
        body = " ".join(names)
        wrapped = textwrap.wrap(body, 100) or [""]
        lines.append(f'    "{module}": _names(')
        lines += [f'        "{chunk} "' for chunk in wrapped[:-1]]
        lines.append(f'        "{wrapped[-1]}"')
        lines.append("    ),")
    lines.append("}")
    # laid out as `ruff format` lays it out, so `make lint` and --check agree
    formatted = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--stdin-filename", str(TARGET), "-"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        check=True,
    )
    return formatted.stdout


def main(argv: List[str]) -> int:
    if argv not in (["--write"], ["--check"]):
        print("usage: python dev/keras3_api.py --write|--check", file=sys.stderr)
        return 2
    text = render()
    if argv == ["--check"]:
        if TARGET.read_text(encoding="utf-8") != text:
            print(f"{TARGET} is stale: run python dev/keras3_api.py --write", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
