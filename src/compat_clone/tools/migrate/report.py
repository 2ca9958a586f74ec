"""What migrating one file gives: the new source, its diff, and the reports."""

from __future__ import annotations

import dataclasses
import difflib
import io
import tokenize
from typing import List, Optional

__all__ = ["Report", "MigrateResult"]


@dataclasses.dataclass(frozen=True)
class Report:
    """A use of `clone_model` (or a relative) that was not rewritten, or a note on one that was.

    Attributes:
        path: the file, as given or as found under a given folder.
        line: 1-based line.
        column: 1-based column.
        why: what the use is, why it was left alone, and what to do.
        note: the use was rewritten; `why` says how the rewrite can behave
            differently (printed as `PATH:LINE:COL: note: ...`; not a fix by hand).
        rule: the rule it falls under (`rules.RULES`), the name a
            ``# compat-clone: ok RULE`` comment on its line gives to mark it reviewed.
        reviewed: such a comment marks it: not printed, not counted by ``--check``.
    """

    path: str
    line: int
    column: int
    why: str
    note: bool = False
    rule: str = ""
    reviewed: bool = False

    def __str__(self) -> str:
        kind = "note: " if self.note else ""
        rule = f" [{self.rule}]" if self.rule and not self.note else ""
        return f"{self.path}:{self.line}:{self.column}: {kind}{self.why}{rule}"


@dataclasses.dataclass
class MigrateResult:
    """The outcome of migrating one file's source.

    Attributes:
        path: the file name used in reports and diffs.
        source: the original bytes.
        migrated: the new bytes (equal to `source` when nothing changed).
        reports: the uses left for a fix by hand.
        error: why the file was skipped (it does not parse), else None.
    """

    path: str
    source: bytes
    migrated: bytes
    reports: List[Report]
    error: Optional[str] = None

    @property
    def changed(self) -> bool:
        """Whether the migration changed the source."""
        return self.migrated != self.source

    def diff(self) -> str:
        """The change as a unified diff (`a/PATH`, `b/PATH`); empty if none.

        Returns:
            The diff, ready for `git apply` or `patch -p1`; a last line
            without a newline is marked as `diff -u` marks it.
        """
        if not self.changed:
            return ""
        encoding = _detect_encoding(self.source)
        old = self.source.decode(encoding).splitlines(keepends=True)
        new = self.migrated.decode(encoding).splitlines(keepends=True)
        lines = []
        for line in difflib.unified_diff(old, new, f"a/{self.path}", f"b/{self.path}"):
            if not line.endswith(("\n", "\r")):
                line += "\n\\ No newline at end of file\n"
            lines.append(line)
        return "".join(lines)


def _detect_encoding(source: bytes) -> str:
    """The encoding a Python file declares (PEP 263), UTF-8 if it declares none."""
    try:
        return tokenize.detect_encoding(io.BytesIO(source).readline)[0]
    except SyntaxError:
        return "utf-8"
