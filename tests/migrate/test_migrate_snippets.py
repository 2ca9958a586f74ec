"""`compat-clone migrate` on snippets: one rule each, what it leaves unchanged, and what it reports.

Needs libcst, as the fixture tests of tests/migrate/test_migrate.py do: fails in the
default environment without it, skips in a matrix environment that does not
install it.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

from compat_clone.tools import migrate as _migrate

_HAS_LIBCST = importlib.util.find_spec("libcst") is not None
needs_libcst = pytest.mark.skipif(
    not _HAS_LIBCST and bool(os.environ.get("COMPAT_CLONE_ENV")),
    reason="libcst is not installed in this matrix environment",
)

# ---------------------------------------------------------------------------
# Snippets: one rule each

SNIPPETS = {
    "attribute call through import keras": (
        "import keras\nc = keras.models.clone_model(m)\n",
        "import compat_clone\nc = compat_clone.clone_model(m)\n",
    ),
    "clone_and_build_model: compiled by default": (
        "import tensorflow as tf\nc = tf.keras.models.clone_and_build_model(m)\n",
        "import compat_clone\nc = compat_clone.clone_model(m, compile=True)\n",
    ),
    "clone_and_build_model: positional, None and False dropped": (
        "import tf_keras\nc = tf_keras.models.clone_and_build_model(m, x, None, None, True, False, None, None)\n",
        "import compat_clone\nc = compat_clone.clone_model(m, x, compile=True)\n",
    ),
    "clone_and_build_model: compile_clone=False": (
        "import keras\nc = keras.models.clone_and_build_model(model=m, compile_clone=False)\nd = keras.layers.Dense(1)\n",
        "import keras\nimport compat_clone\nc = compat_clone.clone_model(model=m)\nd = keras.layers.Dense(1)\n",
    ),
    "clone_and_build_model: compile_clone an expression, input_tensors keyword": (
        "from tensorflow import keras\nc = keras.models.clone_and_build_model(m, input_tensors=i, compile_clone=flag)\n",
        "import compat_clone\nc = compat_clone.clone_model(m, input_tensors=i, compile=flag)\n",
    ),
    "import keras.models": (
        "import keras.models\n\nc = keras.models.clone_model(m)\n",
        "import compat_clone\n\nc = compat_clone.clone_model(m)\n",
    ),
    "from tensorflow import keras, still used": (
        "from tensorflow import keras\n\nc = keras.models.clone_model(m)\nd = keras.layers.Dense(2)\n",
        "from tensorflow import keras\nimport compat_clone\n\nc = compat_clone.clone_model(m)\nd = keras.layers.Dense(2)\n",
    ),
    "import tf_keras as keras": (
        "import tf_keras as keras\nc = keras.models.clone_model(m)\n",
        "import compat_clone\nc = compat_clone.clone_model(m)\n",
    ),
    "tensorflow.compat.v1": (
        "import tensorflow.compat.v1 as tf\nc = tf.keras.models.clone_model(m)\n",
        "import compat_clone\nc = compat_clone.clone_model(m)\n",
    ),
    "one name dropped from a multi-name import": (
        "import os, keras, sys\nc = keras.models.clone_model(m)\nprint(os, sys)\n",
        "import os, sys\nimport compat_clone\nc = compat_clone.clone_model(m)\nprint(os, sys)\n",
    ),
    "last name dropped from a multi-name import": (
        "import os, keras\nc = keras.models.clone_model(m)\nprint(os)\n",
        "import os\nimport compat_clone\nc = compat_clone.clone_model(m)\nprint(os)\n",
    ),
    "from-import split, comments kept": (
        "from keras.models import (\n    Model,  # the class\n    clone_model  # the function\n)\n",
        "from keras.models import (\n    Model,  # the class\n)\nfrom compat_clone import clone_model  # the function\n",
    ),
    "from-import split, clone_model first": (
        "from keras.models import clone_model, Model\n",
        "from keras.models import Model\nfrom compat_clone import clone_model\n",
    ),
    "from-import with alias; fold through it": (
        "from keras.models import clone_model as cm\nc = cm(m)\nc.set_weights(m.get_weights())\n",
        "from compat_clone import clone_model as cm\nc = cm(m, copy_weights=True)\n",
    ),
    "no fold when the clone rebinds the source": (
        "import keras\nm = keras.models.clone_model(m)\nm.set_weights(m.get_weights())\n",
        "import compat_clone\nm = compat_clone.clone_model(m)\nm.set_weights(m.get_weights())\n",
    ),
    "no fold from another model: a hard update instead": (
        "import keras\nc = keras.models.clone_model(a)\nc.set_weights(b.get_weights())\n",
        "import compat_clone\nc = compat_clone.clone_model(a)\ncompat_clone.copy_weights(b, c)\n",
    ),
    "no fold when not immediately following: a hard update instead": (
        "import keras\nc = keras.models.clone_model(m)\nc.compile('sgd', 'mse')\nc.set_weights(m.get_weights())\n",
        "import compat_clone\nc = compat_clone.clone_model(m)\nc.compile('sgd', 'mse')\ncompat_clone.copy_weights(m, c)\n",
    ),
    "no fold with *args: a hard update instead": (
        "import keras\nc = keras.models.clone_model(*args)\nc.set_weights(m.get_weights())\n",
        "import compat_clone\nc = compat_clone.clone_model(*args)\ncompat_clone.copy_weights(m, c)\n",
    ),
    "fold with model= keyword": (
        "import keras\nc = keras.models.clone_model(model=m, clone_function=f)\nc.set_weights(m.get_weights())\n",
        "import compat_clone\nc = compat_clone.clone_model(model=m, clone_function=f, copy_weights=True)\n",
    ),
    "fold onto attributes, on one line": (
        "import keras\nself.t = keras.models.clone_model(self.m); self.t.set_weights(self.m.get_weights())\n",
        "import compat_clone\nself.t = compat_clone.clone_model(self.m, copy_weights=True)\n",
    ),
    "fold into a call whose ) has its own line": (
        "import keras\nc = keras.models.clone_model(\n    m,\n    clone_function=f\n)\n"
        "c.set_weights(m.get_weights())  # same start\n",
        "import compat_clone\nc = compat_clone.clone_model(\n    m,\n    clone_function=f,\n"
        "    copy_weights=True  # same start\n)\n",
    ),
    "fold keeps comments of the set_weights line": (
        "import keras\n# the twin\nc = keras.models.clone_model(m)  # clone\n"
        "# copy weights\nc.set_weights(m.get_weights())  # sync\nprint(c)\n",
        "import compat_clone\n# the twin\n# copy weights\n# sync\n"
        "c = compat_clone.clone_model(m, copy_weights=True)  # clone\nprint(c)\n",
    ),
    "annotated assignment": (
        "import keras\nc: keras.Model = keras.models.clone_model(m)\nc.set_weights(m.get_weights())\n",
        "import keras\nimport compat_clone\nc: keras.Model = compat_clone.clone_model(m, copy_weights=True)\n",
    ),
    "import only inside a function": (
        "def f(m):\n    from keras import models\n    return models.clone_model(m)\n",
        "import compat_clone\n\n\ndef f(m):\n    return compat_clone.clone_model(m)\n",
    ),
    "import placed after docstring, __future__ and imports": (
        '"""Doc."""\nfrom __future__ import annotations\nimport os\nimport tensorflow as tf\n\n'
        "os.environ['X'] = '1'\nc = tf.keras.models.clone_model(m)\nd = tf.constant(1)\n",
        '"""Doc."""\nfrom __future__ import annotations\nimport os\nimport tensorflow as tf\n'
        "import compat_clone\n\nos.environ['X'] = '1'\nc = compat_clone.clone_model(m)\n"
        "d = tf.constant(1)\n",
    ),
    "a removed import becomes import compat_clone in place": (
        '"""Doc."""\nx = 1\nimport keras  # framework\ny = 2\nc = keras.models.clone_model(m)\n',
        '"""Doc."""\nx = 1\nimport compat_clone\ny = 2\nc = compat_clone.clone_model(m)\n',
    ),
    "compat_clone already imported": (
        "import compat_clone\nimport keras\nc = keras.models.clone_model(m)\n",
        "import compat_clone\nc = compat_clone.clone_model(m)\n",
    ),
    "try/except fallback imports are rewritten, never removed": (
        "try:\n    from tensorflow.keras.models import clone_model\nexcept ImportError:\n"
        "    from keras.models import clone_model\nc = clone_model(m)\n",
        "try:\n    from compat_clone import clone_model\nexcept ImportError:\n"
        "    from compat_clone import clone_model\nc = clone_model(m)\n",
    ),
    "try/except module imports are kept": (
        "try:\n    import tensorflow.keras as K\nexcept ImportError:\n    import keras as K\nc = K.models.clone_model(m)\n",
        "try:\n    import tensorflow.keras as K\nexcept ImportError:\n    import keras as K\n"
        "import compat_clone\nc = compat_clone.clone_model(m)\n",
    ),
    "a name in __all__ is kept": (
        "import keras\n__all__ = ['keras']\nc = keras.models.clone_model(m)\n",
        "import keras\nimport compat_clone\n__all__ = ['keras']\nc = compat_clone.clone_model(m)\n",
    ),
    "no newline at the end": (
        "import keras\nc = keras.models.clone_model(m)",
        "import compat_clone\nc = compat_clone.clone_model(m)",
    ),
    "CRLF newlines are kept": (
        "import keras\r\nc = keras.models.clone_model(m)\r\nc.set_weights(m.get_weights())\r\n",
        "import compat_clone\r\nc = compat_clone.clone_model(m, copy_weights=True)\r\n",
    ),
}

UNCHANGED = {
    "relative imports are the user's own": (
        "from .models import clone_model\nfrom . import models\nc = clone_model(m)\nd = models.clone_model(m)\n"
    ),
    "a method of the user's class": ("class A:\n    def clone_model(self, m):\n        return self.clone_model(m)\n"),
    "already migrated": (
        "import compat_clone\nfrom compat_clone import clone_model\n"
        "c = compat_clone.clone_model(m, copy_weights=True)\nd = clone_model(m)\n"
    ),
    "clone_model of another library": "import mylib\nc = mylib.models.clone_model(m)\n",
}


@needs_libcst
@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_snippet(name: str) -> None:
    before, after = SNIPPETS[name]
    result = _migrate.migrate_source(before.encode(), "snippet.py")
    assert result.error is None
    assert result.migrated.decode() == after
    assert not _migrate.migrate_source(result.migrated, "snippet.py").changed, "not idempotent"


@needs_libcst
@pytest.mark.parametrize("name", sorted(UNCHANGED))
def test_snippet_unchanged(name: str) -> None:
    result = _migrate.migrate_source(UNCHANGED[name], "snippet.py")
    assert not result.changed
    assert result.reports == []


@needs_libcst
def test_package_init_keeps_imports() -> None:
    source = "from tensorflow import keras\nc = keras.models.clone_model(m)\n"
    result = _migrate.migrate_source(source, "pkg/__init__.py")
    assert result.migrated.decode() == ("from tensorflow import keras\nimport compat_clone\nc = compat_clone.clone_model(m)\n")


REPORTED = {
    "alias through a variable": (
        "import keras\nf = keras.models.clone_model\nc = f(m)\n",
        (2, 5, "used as a value"),
    ),
    "passed as a callback": (
        "import functools, keras\np = functools.partial(keras.models.clone_model, clone_function=f)\n",
        (2, 23, "used as a value"),
    ),
    "getattr by name": (
        'from keras import models\nc = getattr(models, "clone_model")(m)\n',
        (2, 5, '`getattr(..., "clone_model")`'),
    ),
    "module held in a variable": (
        "import keras\nmodels = keras.models\nc = models.clone_model(m)\n",
        (3, 5, "cannot tell which module `models` is"),
    ),
    "a parameter shadows the import": (
        "import keras.models\ndef f(keras, m):\n    return keras.models.clone_model(m)\n",
        (3, 12, "cannot tell which module `keras.models` is"),
    ),
    "star import": (
        "from tensorflow.keras.models import *\nc = clone_model(m)\n",
        (2, 5, "star import `from tensorflow.keras.models import *` (line 1)"),
    ),
    "multi_gpu_model with cpu_relocation": (
        "import keras\np = keras.utils.multi_gpu_model(m, gpus=2, cpu_relocation=True)\n",
        (2, 5, "With `cpu_relocation=True`: `multi_gpu_model` was removed"),
    ),
    "multi_gpu_model imported": (
        "from tensorflow.keras.utils import multi_gpu_model\n",
        (1, 36, 'compat_clone.clone_model(model, device="/cpu:0")'),
    ),
    "clone_and_build_model with custom_objects": (
        "import tensorflow as tf\nc = tf.keras.models.clone_and_build_model(m, custom_objects=d)\n",
        (2, 5, "has no `custom_objects`; not rewritten. Call `compat_clone.clone_model(model, compile=True)`"),
    ),
    "clone_and_build_model with target_tensors": (
        "import tensorflow as tf\nc = tf.keras.models.clone_and_build_model(m, None, [t])\n",
        (2, 5, "has no `target_tensors`; not rewritten"),
    ),
    "clone_and_build_model with in_place_reset=True": (
        "import tf_keras\nc = tf_keras.models.clone_and_build_model(m, in_place_reset=True)\n",
        (2, 5, "has no `in_place_reset`; not rewritten"),
    ),
    "clone_and_build_model with optimizer_config": (
        "import keras\nc = keras.models.clone_and_build_model(m, optimizer_config=cfg)\n",
        (2, 5, "has no `optimizer_config`; not rewritten"),
    ),
    "clone_and_build_model with *args": (
        "import keras\nc = keras.models.clone_and_build_model(*args)\n",
        (2, 5, "the arguments cannot be read; not rewritten"),
    ),
    "clone_and_build_model imported by name": (
        "from tensorflow.keras.models import clone_and_build_model\n",
        (1, 37, "`clone_and_build_model` (tf.keras 2.x; gone in Keras 3)"),
    ),
    "split import in a one-line block": (
        "if True: from keras.models import clone_model, Model\n",
        (1, 10, "not rewritten"),
    ),
}


@needs_libcst
@pytest.mark.parametrize("name", sorted(REPORTED))
def test_report(name: str) -> None:
    source, (line, column, fragment) = REPORTED[name]
    result = _migrate.migrate_source(source, "old.py")
    assert not result.changed, result.migrated.decode()
    assert len(result.reports) == 1, result.reports
    report = result.reports[0]
    assert (report.path, report.line, report.column) == ("old.py", line, column)
    assert fragment in report.why
    assert str(report).startswith(f"old.py:{line}:{column}: ")


@needs_libcst
def test_no_fold_through_an_import_left_alone() -> None:
    # the import is reported, not rewritten: the call still goes to Keras, which has
    # no copy_weights, so the set_weights line is not folded (it is a hard update)
    source = "if True: from keras.models import clone_model, Model\nc = clone_model(m)\nc.set_weights(m.get_weights())\n"
    result = _migrate.migrate_source(source, "old.py")
    assert result.migrated.decode() == (
        "import compat_clone\n\nif True: from keras.models import clone_model, Model\n"
        "c = clone_model(m)\ncompat_clone.copy_weights(m, c)\n"
    )
    assert [r.note for r in result.reports] == [False]  # a clone of m: no note
