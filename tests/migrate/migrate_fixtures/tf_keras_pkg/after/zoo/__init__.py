"""A small model zoo on tf_keras (the Keras 2 API kept for TF >= 2.16)."""
from .builders import build_mlp
from .ensemble import fresh_like, make_ensemble

__all__ = ["build_mlp", "fresh_like", "make_ensemble"]
