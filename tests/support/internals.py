"""The test seam: the one test file that may name a private compat_clone (or compat_clone_matrix) name.

A test that checks something only an internal can show (a cache that must
not grow, the walk the clone itself uses, a private rule on plain arrays)
imports that internal from here, under a name of its own::

    from tests.support.internals import walk

Nothing else under tests/ or bench/ may import a ``_name`` of compat_clone,
import from one of its private modules, read ``module._name`` or
monkeypatch one (dev/structure_check.py enforces it). Each name below is
imported from compat_clone when a test first asks for it (PEP 562), so a
module importing this seam imports no framework and no private module it
does not use. Nothing here is shipped: the suite reads the internals of the
compat_clone it imports.
"""

from __future__ import annotations

import importlib
from typing import Any, Dict, List, Tuple

# name here -> (module, attribute path in it, why a test needs it). A dotted
# attribute path reads through an object (a cache's own table).
REACHES: Dict[str, Tuple[str, str, str]] = {
    "routed_modules": ("compat_clone._patch", "routed_modules", "test_patch: no test may leave compat_clone.patch() active"),
    "bound_names": ("compat_clone._bound", "bound_names", "test_patch_bound: no test may leave a library's name rebound"),
    "is_ours": ("compat_clone._native", "is_ours", "test_patch: a patched Keras name is compat_clone's wrapper of the original"),
    "walk": ("compat_clone._walk", "walk", "test_holdings: the layers a clone visits, walked the way the clone walks them"),
    "keras_for": (
        "compat_clone.convert._source",
        "keras_for",
        "convert zoo: the Keras module convert reads a family's files with",
    ),
    "read_model": (
        "compat_clone.convert._source",
        "read_model",
        "convert zoo sources: a file read exactly as `compat-clone convert` reads it",
    ),
    "output_list": (
        "compat_clone.convert._probes",
        "output_list",
        "convert zoo sources: a model's outputs as the proof lists them",
    ),
    "map_config": (
        "compat_clone.convert._layer_map",
        "map_config",
        "test_convert: one layer config mapped Keras 2 -> 3, without a model around it",
    ),
    "REMOVED_LAYERS": (
        "compat_clone.convert._layer_map",
        "REMOVED_LAYERS",
        "test_convert: every removed layer is refused with its own message",
    ),
    "record_layer_outputs": (
        "compat_clone.convert._layer_outputs",
        "record",
        "test_convert: the per-layer outputs a report compares, on a small model",
    ),
    "empty_output": (
        "compat_clone.convert._layer_outputs",
        "empty_output",
        "test_convert: which probe lengths are ruled out from the layers' output shapes, without running the source",
    ),
    "compare_outputs": (
        "compat_clone.convert._proof",
        "_compare",
        "test_convert_field: the proof's element rule on NumPy arrays alone",
    ),
    "user_attributes": (
        "compat_clone.families._structure",
        "user_attributes",
        "test_structural_clone: the attributes the structural clone copies, Keras's runtime ones left out",
    ),
    "Cloner": (
        "compat_clone.families._cloner",
        "Cloner",
        "test_no_recursion: the shared clone core driven on a chain deeper than the recursion limit",
    ),
    "CloneRequest": (
        "compat_clone.families._types",
        "CloneRequest",
        "test_no_recursion: the request the core takes, built by hand",
    ),
    "new_family": (
        "compat_clone.families._driver",
        "new_family",
        "test_no_recursion: the model's Family object, as the driver makes it for the core",
    ),
    "tf_module": (
        "compat_clone.families._tf1",
        "tf_module",
        "test_atomic: the TensorFlow module standalone Keras 2 runs on (TF 1 or tf.compat.v1)",
    ),
    "tf_blends": (
        "compat_clone.placement.tensorflow",
        "_BLENDS",
        "test_soft_update_cache: the cache of TF blend functions must not grow per call",
    ),
    "tf_blend_entries": (
        "compat_clone.placement.tensorflow",
        "_BLENDS._entries",
        "test_soft_update_cache: that cache's entries, to see one go with its variables",
    ),
    "TfBlend": (
        "compat_clone.placement.tensorflow",
        "_TfBlend",
        "test_soft_update_cache: one TF blend, made to meet an XLA refusal",
    ),
    "jax_jitted": (
        "compat_clone.placement.jax",
        "_JITTED",
        "test_soft_update_cache: the one jitted JAX blend must not retrace per call",
    ),
    "default_matrix_dir": (
        "compat_clone.tools.convert._envs",
        "default_matrix_dir",
        "test_install_sources: where convert keeps its environments, per the user's settings",
    ),
    "copy_package": (
        "compat_clone_matrix.install",
        "_copy_package",
        "test_install_sources: a copy install rewrites only what changed",
    ),
    "ticking": (
        "compat_clone_matrix.build",
        "_ticking",
        "test_install_sources: a long build says it is alive on a clock of its own",
    ),
    "table_fields": (
        "compat_clone_matrix.table",
        "_FIELDS",
        "test_matrix: the table's schema is exactly the Env dataclass's fields",
    ),
}

__all__ = sorted(REACHES)


def __getattr__(name: str) -> Any:
    if name not in REACHES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, path, _ = REACHES[name]
    value: Any = importlib.import_module(module)
    for part in path.split("."):
        value = getattr(value, part)
    return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(REACHES))
