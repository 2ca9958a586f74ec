"""Docs generated from the matrix table, never typed: docs/matrix.md's blocks, the README's column note, --list's legend."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from compat_clone_matrix.report import readme_note
from compat_clone_matrix.table import load_table
from compat_clone_matrix.table_text import render_blocks, update_blocks

pytestmark = pytest.mark.tooling

REPO = Path(__file__).resolve().parents[2]


def test_docs_matrix_lists_and_counts_are_the_tables() -> None:
    text = (REPO / "docs" / "matrix.md").read_text(encoding="utf-8")
    blocks = render_blocks()
    assert update_blocks(text, blocks) == text, "docs/matrix.md drifted from the table: run `make docs`"
    table = load_table()
    assert f"has {len(table)} environments" in blocks["counts"]
    assert f"has {sum(e.enabled for e in table)} of them" in blocks["counts"]
    for env in table:  # every environment is listed once, in the block of its group
        name = f"| `{env.name}` |"
        assert blocks["default" if env.enabled else "wide-only"].count(name) == 1, env.name
    # no count typed in the prose around the blocks
    prose = re.sub(r"<!-- matrix-table:(\S+):start -->.*?<!-- matrix-table:\1:end -->", "", text, flags=re.S)
    assert not re.search(r"\b\d+ environments\)", prose)


def test_update_blocks_refuses_a_text_without_the_markers() -> None:
    with pytest.raises(ValueError, match="counts"):
        update_blocks("no markers here\n", {"counts": "x\n"})


def test_readme_column_note_is_the_tables() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    header = next(line for line in readme.splitlines() if line.startswith("| feature |"))
    columns = re.findall(r"`([^`]+)`", header)
    default = [e.name for e in load_table() if e.enabled]
    assert set(columns) <= set(default), set(columns) - set(default)
    found = re.search(r"has all (\d+) with results", readme)
    assert found, "the README's column note is missing"
    note = readme_note(default, columns, int(found.group(1)), "COMPATIBILITY.md").strip()
    assert note in readme, f"the README's column note drifted from the table; expected:\n{note}"


def test_list_has_a_legend_and_counts() -> None:
    done = subprocess.run([sys.executable, "-m", "compat_clone", "matrix", "--list"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("NAME  STATE  CLAIM  [FLAGS]")
    for word in ("STATE: built", "CLAIM:", "[disabled]", "--no-deps"):
        assert word in done.stdout, word
    table = load_table()
    assert done.stdout.rstrip().endswith(
        f"{len(table)} environment(s): {sum(e.enabled for e in table)} in the default run, {len(table)} with tag wide."
    )


@pytest.mark.parametrize("command", ["doctor", "matrix", "migrate", "convert"])
def test_help_names_no_internal_path(command: str) -> None:
    done = subprocess.run([sys.executable, "-m", "compat_clone", command, "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not re.search(r"\btools/|\bsrc/|\w+/\w+\.py\b", done.stdout), done.stdout
