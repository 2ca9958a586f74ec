"""The markdown format of a matrix report, and its reader.

`report.py` writes ``COMPATIBILITY.md``; this module holds what writing and
reading share (the outcome symbols, the tag that names the table, the date
form) and reads a written report back into its columns (`parse_report`), so
that a run of some environments keeps the other columns of the last report.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Dict, List, Optional, Tuple

from compat_clone_matrix.results import ReportError, Results

__all__ = ["SYMBOL", "TABLE_TAG", "Previous", "date_key", "parse_report"]

#: The symbol of each outcome in a report's cells.
SYMBOL = {"pass": "✅", "fail": "❌", "missing": "➖", "n/a": "·", None: " "}
#: The comment that names the table a report was run from.
TABLE_TAG = "<!-- compat-clone matrix table: "
_SYMBOL_OUTCOME = {symbol: outcome for outcome, symbol in SYMBOL.items() if outcome is not None}
_NOTE_RE = re.compile(r"^- `(.+)` in `(.+)`, (native|compat_clone|test): (fail|missing): (.*)$")


@dataclasses.dataclass
class Previous:
    """A report read back: its table and its columns (`parse_report`)."""

    table: Optional[str]
    results: Results
    descriptions: Dict[str, str]
    versions: Dict[str, str]
    dates: Dict[str, str]


def _parse_cell(cell: str) -> Dict[str, Tuple[str, str]]:
    if len(cell) == 1:
        return {"test": (_SYMBOL_OUTCOME[cell], "")} if cell in _SYMBOL_OUTCOME else {}
    if len(cell) == 3 and cell[1] == " ":
        return {
            side: (_SYMBOL_OUTCOME[symbol], "")
            for side, symbol in (("native", cell[0]), ("compat_clone", cell[2]))
            if symbol in _SYMBOL_OUTCOME
        }
    raise ReportError(f"Expected a report cell of one or two outcome symbols. Received: {cell!r}.")


def _row_cells(line: str) -> List[str]:
    """``| `a` | ✅ ✅ |   ✅ |`` -> ['`a`', '✅ ✅', '  ✅'] (cells keep their inner spaces)."""
    return line[2:-2].split(" | ")


def parse_report(text: str) -> Previous:
    """Reads a report `render_report` wrote back into its columns.

    Args:
        text: the report's markdown.

    Returns:
        Its table name (None for a report that names none: one of an older
        version), results per environment (outcomes and the first line of
        each failure's detail), descriptions, the Keras each environment
        loaded, and the date of each column.

    Raises:
        ReportError: a feature table whose cells are not outcome symbols.
    """
    lines = text.splitlines()
    table = next((line[len(TABLE_TAG) : -len(" -->")] for line in lines if line.startswith(TABLE_TAG)), None)
    results: Results = {}
    descriptions: Dict[str, str] = {}
    versions: Dict[str, str] = {}
    dates: Dict[str, str] = {}
    header: List[str] = []
    section = ""
    for line in lines:
        if line.startswith("## "):
            section, header = line[3:].strip(), []
            continue
        if line.startswith(("| feature | ", "| test | ")) and not section:
            header = [c.strip("`") for c in _row_cells(line)[1:]]
            for env in header:
                results.setdefault(env, {})
            continue
        if header and not section and line.startswith("| `") and line.endswith(" |"):
            cells = _row_cells(line)
            feature = cells[0].strip().strip("`")
            if len(cells) != len(header) + 1 or " (cases passing every aspect" in cells[0]:
                continue
            for env, cell in zip(header, cells[1:]):
                parsed = _parse_cell(cell)
                if parsed:
                    results[env][feature] = parsed
            continue
        if section == "Environments" and line.startswith("| `"):
            cells = [c.strip() for c in _row_cells(line)]
            env = cells[0].strip("`")
            if cells[1]:
                versions[env] = cells[1]
            if len(cells) > 3 and date_key(cells[2]):
                dates[env] = date_key(cells[2])
            continue
        if section == "Features" and line.startswith("- `"):
            feature, _, description = line[3:].partition("`: ")
            descriptions[feature] = description
            continue
        match = _NOTE_RE.match(line) if section == "Failures and gaps" else None
        if match:
            feature, env, side, outcome, detail = match.groups()
            found = results.get(env, {}).get(feature, {})
            if side in found and found[side][0] == outcome:
                found[side] = (outcome, detail)
    return Previous(table, {env: cells for env, cells in results.items() if cells}, descriptions, versions, dates)


def date_key(shown: str) -> str:
    """A shown or stored date in one comparable form (``2026-11-27T11:20``)."""
    match = re.match(r"^(\d{4}-\d\d-\d\d)(?:[T ](\d\d:\d\d))?", shown or "")
    if not match:
        return ""
    return match.group(1) + (f"T{match.group(2)}" if match.group(2) else "")
