"""Which imports served only the rewritten calls, and may go with them.

Imported only after libcst is known to be installed.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, Iterator, List, Mapping, Set, Tuple, Union

import libcst as cst
from libcst.metadata import ImportAssignment, Scope

__all__ = ["ImportNode", "aliases_used_only_by", "bound_name", "drops_every_alias", "emptied_lines"]

ImportNode = Union[cst.Import, cst.ImportFrom]


def bound_name(alias: cst.ImportAlias) -> str:
    """The name an import alias binds: `k` for `import keras as k`, `keras.models` for
    `import keras.models`."""
    return alias.evaluated_alias or alias.evaluated_name


def aliases_used_only_by(scopes: Iterable[Scope], refs: Set[cst.CSTNode]) -> Iterator[Tuple[ImportNode, int, str]]:
    """The import aliases whose every use is one of `refs`.

    Args:
        scopes: the scopes whose imports are considered.
        refs: the nodes of the rewritten calls' functions.

    Returns:
        An iterator of (import, alias index, bound name) for each alias used
        at least once, and only in `refs`.
    """
    by_alias: Dict[Tuple[ImportNode, int], List[ImportAssignment]] = {}
    for scope in scopes:
        for assignment in scope.assignments:
            if not isinstance(assignment, ImportAssignment):
                continue
            imp: Any = assignment.node
            if isinstance(imp, cst.ImportFrom) and isinstance(imp.names, cst.ImportStar):
                continue
            for i, alias in enumerate(imp.names):
                if bound_name(alias) == assignment.name:
                    by_alias.setdefault((imp, i), []).append(assignment)
    for (imp, i), assignments in by_alias.items():
        accesses = [r.node for a in assignments for r in a.references]
        if accesses and all(n in refs for n in accesses):
            yield imp, i, bound_name(_aliases(imp)[i])


def drops_every_alias(node: cst.CSTNode, removals: Mapping[Any, Set[int]]) -> bool:
    """Whether `node` is an import all of whose aliases are in `removals`."""
    drop = removals.get(node)
    return drop is not None and len(drop) == len(_aliases(node))


def emptied_lines(
    removals: Mapping[ImportNode, Set[int]], lines: Mapping[ImportNode, cst.SimpleStatementLine]
) -> Set[cst.SimpleStatementLine]:
    """The statement lines left with nothing once the aliases in `removals` go.

    Args:
        removals: import -> the indexes of its aliases that go.
        lines: import -> the statement line it stands on.

    Returns:
        The lines whose every statement is an import that loses all its aliases.
    """
    return {lines[imp] for imp in removals if all(drops_every_alias(s, removals) for s in lines[imp].body)}


def _aliases(node: Any) -> List[cst.ImportAlias]:
    return list(node.names)
