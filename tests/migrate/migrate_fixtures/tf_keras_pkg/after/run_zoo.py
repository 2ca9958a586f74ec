"""Builds an ensemble with the zoo package and checks that it predicts."""
import numpy as np

from zoo import build_mlp, fresh_like, make_ensemble
from zoo.ensemble import wide_member

base, members = make_ensemble(3, base=build_mlp(seed=1))
fresh = fresh_like(base)
wide = wide_member(base)
x = np.ones((2, 4), dtype="float32")
predictions = [m.predict(x, verbose=0) for m in members]
