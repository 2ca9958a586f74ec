"""The matrix table in words: `--list`'s legend and docs/matrix.md's generated blocks.

docs/matrix.md holds blocks between ``<!-- matrix-table:NAME:start -->`` and
``<!-- matrix-table:NAME:end -->`` that `render_blocks` writes from the
built-in table (``python -m compat_clone_matrix.table_text --write
docs/matrix.md``; tests/matrix/test_matrix_docs.py fails when they drift from it), so
the counts and the environment lists are the table's, never typed.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from compat_clone_matrix.table import Env, load_table

__all__ = ["LIST_LEGEND", "list_footer", "render_blocks", "update_blocks"]

LIST_LEGEND = """\
NAME  STATE  CLAIM  [FLAGS]
      PACKAGES (installed together; --no-deps P: installed afterwards without its dependencies)
      VARIABLES set when COMMAND runs; fixup=NAME: the compat_clone_matrix.envfix fix-up installed as a .pth
      # the table's note
STATE: built (in --root, pins unchanged) or - (built by the next run that selects it).
CLAIM: what the environment says it is (expect: family, version, backend, module the project imports);
  the pytest plugin checks it before the tests and judges what the tests used after them (MISLABELED, NO KERAS).
FLAGS: [disabled] left out of a run that names no --env / --tag; tags: selected with --tag.
"""

_BLOCK_RE = re.compile(
    r"(<!-- matrix-table:(?P<name>[a-z-]+):start -->\n)(?P<body>.*?)(<!-- matrix-table:(?P=name):end -->)", re.S
)


def list_footer(envs: Sequence[Env]) -> str:
    """`--list`'s closing line: how many environments, how many the default run has, per tag."""
    tags: Dict[str, int] = {}
    for env in envs:
        for tag in env.tags:
            tags[tag] = tags.get(tag, 0) + 1
    tagged = "".join(f", {n} with tag {tag}" for tag, n in sorted(tags.items()))
    return f"{len(envs)} environment(s): {sum(e.enabled for e in envs)} in the default run{tagged}."


def _settings(env: Env) -> str:
    items = [f"`{k}={v}`" for k, v in env.env] + ([f"fix-up `{env.fixup}`"] if env.fixup else [])
    return ", ".join(items) or "-"


def _env_rows(envs: Sequence[Env], defaults: Sequence[str]) -> str:
    lines = ["| env | Python | claim | packages (besides the defaults) | settings |", "|---|---|---|---|---|"]
    for env in envs:
        claim = " ".join(f"{k}={v}" for k, v in env.expect)
        extra = [p for p in env.packages if p not in defaults]
        lines.append(f"| `{env.name}` | {env.python} | {claim} | {_packages_of(extra, env.no_deps)} | {_settings(env)} |")
    return "\n".join(lines) + "\n"


def _packages_of(packages: Sequence[str], no_deps: Sequence[str]) -> str:
    return ", ".join([f"`{p}`" for p in packages] + [f"`{p}` (`--no-deps`)" for p in no_deps])


def _common_packages(envs: Sequence[Env]) -> List[str]:
    """The requirements every environment has (the table's defaults), in the first one's order."""
    if not envs:
        return []
    common = set(envs[0].packages).intersection(*(set(e.packages) for e in envs[1:]))
    return [p for p in envs[0].packages if p in common]


def render_blocks(envs: Optional[Sequence[Env]] = None) -> Dict[str, str]:
    """The generated blocks of docs/matrix.md, by name, from `envs` (default: the built-in table)."""
    envs = list(load_table(None) if envs is None else envs)
    default = [e for e in envs if e.enabled]
    wide = [e for e in envs if "wide" in e.tags]
    common = _common_packages(envs)
    return {
        "counts": (
            f"The built-in table has {len(envs)} environments: the **default run** (`compat-clone matrix -- "
            f"...`, `make test`, CI) has {len(default)} of them, the **wide matrix** (`--tag wide`, `make "
            f"test-wide`) {len(wide)}. Every environment also gets {', '.join(f'`{p}`' for p in common) or 'nothing else'}"
            " and the `compat_clone` that runs the matrix.\n"
        ),
        "default": _env_rows(default, common),
        "wide-only": _env_rows([e for e in wide if not e.enabled], common),
    }


def update_blocks(text: str, blocks: Dict[str, str]) -> str:
    """`text` with each generated block replaced by its new body; a block named in `blocks` but missing raises."""
    seen = set()

    def body(match: re.Match[str]) -> str:
        name = match.group("name")
        seen.add(name)
        return match.group(1) + blocks.get(name, match.group("body")) + match.group(4)

    out = _BLOCK_RE.sub(body, text)
    missing = sorted(set(blocks) - seen)
    if missing:
        raise ValueError(
            f"Expected the blocks <!-- matrix-table:NAME:start/end --> for {', '.join(missing)}. "
            "Received a text without them: add the markers where each belongs."
        )
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m compat_clone_matrix.table_text --write docs/matrix.md``: rewrites the blocks."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2 or args[0] != "--write":
        print("usage: python -m compat_clone_matrix.table_text --write FILE.md", file=sys.stderr)
        return 2
    path = Path(args[1])
    text = path.read_text(encoding="utf-8")
    new = update_blocks(text, render_blocks())
    if new != text:
        path.write_text(new, encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
