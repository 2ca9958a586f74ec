import compat_clone

from . import builders
from .builders import build_mlp as _build


def make_ensemble(n=3, base=None):
    """Returns the base model and `n` copies of it, all starting from its weights."""
    base = base if base is not None else _build()
    members = []
    for _ in range(n):
        member = compat_clone.clone_model(base, copy_weights=True)
        members.append(member)
    return base, members


def fresh_like(model):
    # architecture only: new random weights
    return compat_clone.clone_model(model)


def wide_member(base):
    return builders.widen(base)
