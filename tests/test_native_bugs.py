"""Native failures and our fix, side by side, on the versions where they were seen.

Each row: the family, the versions where the native `clone_model` fails the
feature (seen in the matrix run), and the feature check from `features.py`.
The test asserts that the native call really fails there (so the environment
is the buggy one) and that compat_clone passes the same check.
"""

from __future__ import annotations

from typing import Any

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

import compat_clone
from features import FEATURES, NotApplicable, family_name, native_clone

NATIVE_BUGS = [
    # Keras 3: Lambda config round trip refused by safe mode (seen in 3.15.1)
    ("keras3", ">=3.15", "lambda_python_function"),
    # Keras 3: sparse=True inputs come back dense (seen in 3.15.1)
    ("keras3", ">=3.15", "sparse_input"),
    # Keras 3: functional model.trainable=False lost (seen in 3.15.1)
    ("keras3", ">=3.15", "trainable_false"),
    # tf.keras / tf_keras: keras-team/keras #17700 (seen in 2.12.1, 2.15.1, tf_keras 2.16, 2.21)
    ("tf_keras", ">=2.12", "single_input_concatenate"),
    # tf.keras / tf_keras: model.trainable=False lost (seen in 2.12.1 to 2.21)
    ("tf_keras", ">=2.12", "trainable_false"),
    # Keras 3: Lambda refused in every release tested (3.0.0, 3.15.1)
    ("keras3", ">=3.0", "lambda_pair_into_add"),
]


def _version(K: Any) -> Version:
    return Version(K.__version__)


@pytest.mark.parametrize("fam,spec,feature", NATIVE_BUGS, ids=[f"{f}-{x}" for f, _, x in NATIVE_BUGS])
def test_native_fails_compat_passes(K: Any, fam: str, spec: str, feature: str) -> None:
    if family_name(K) != fam or not SpecifierSet(spec).contains(_version(K)):
        pytest.skip(f"not seen on {family_name(K)} {K.__version__}")
    check = FEATURES[feature]
    try:
        check(K, native_clone(K))
    except NotApplicable as exc:
        pytest.skip(str(exc))
    except Exception:
        pass
    else:
        pytest.fail(f"native clone_model of {K.__name__} {K.__version__} passed {feature}: the known bug is gone here")
    check(K, compat_clone.clone_model)
