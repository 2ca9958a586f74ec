"""`compat-clone migrate`: rewrite old `clone_model` code to use `compat_clone`.

A codemod built on libcst, so formatting and comments are preserved. It
rewrites:

* calls through an import it can follow: ``keras.models.clone_model(m)``,
  ``tf.keras.models.clone_model(m)``, ``models.clone_model(m)`` after
  ``from keras import models``, ``keras.models.clone_model(m)`` after
  ``import tf_keras as keras``, ... become ``compat_clone.clone_model(m)``
  (``import compat_clone`` is added; an import left unused is removed);
* ``from keras.models import clone_model`` (and the ``tf.keras`` /
  ``tensorflow.keras`` / ``tf_keras`` spellings) becomes
  ``from compat_clone import clone_model``; the calls stay as they are;
* ``c = clone_model(m)`` immediately followed by
  ``c.set_weights(m.get_weights())`` becomes
  ``c = clone_model(m, copy_weights=True)``.

* the idioms old code uses instead (`idioms.py`; docs/migrate.md, "Idioms
  old codebases use"): ``T.set_weights(S.get_weights())`` anywhere becomes
  ``compat_clone.copy_weights(S, T)``; soft target updates on host lists
  (a comprehension or a loop over ``zip(S.get_weights(), T.get_weights())``)
  become ``compat_clone.copy_weights(S, T, tau=tau)``, and so do updates by
  NumPy arithmetic (``np.array(S.get_weights())``) and loops over
  ``zip(T.weights, S.weights)`` of ``K.set_value`` / ``t.assign``
  (`update_forms.py`); hand-rolled clones
  (``model_from_config({'class_name': ..., 'config': m.get_config()})``,
  ``Model.from_config(m.get_config())``, ``model_from_json(m.to_json())``)
  become ``compat_clone.clone_model(m)``. Soft updates built as graph ops
  and ``copy.deepcopy(model)`` are reported. A rewrite that may behave
  differently in a case the file cannot settle is printed as a note
  (``path:line:col: note: ...``), which ``--check`` does not count.

Every argument and comment is kept. Uses it cannot rewrite safely are reported
as ``path:line:col: why`` and left alone: ``multi_gpu_model``,
``clone_and_build_model``, ``clone_model`` used as a value
(``f = keras.models.clone_model``), ``getattr(models, "clone_model")``, a
``clone_model`` that may come from a star import, and ``X.clone_model(...)``
where ``X`` is not an import it can follow.

With ``--to keras3`` (``migrate_source(..., to="keras3")``) the code is also
moved to Keras 3, after the cloning rules: tf.keras / tf_keras / Keras 2
imports, attribute chains and internal paths to Keras 3's public names,
``lr=``, ``fit_generator`` and co., ``save_format=``, and ``keras.backend``
ops with an exact ``keras.ops`` equivalent; what Keras 3 removed is reported
by rule (``k3-...``). The rules are data (`keras3_rules`, with Keras 3's
public names in `keras3_api`); `keras3` decides and `keras3_transform`
rewrites.

Exit status: 0 done (diff printed, or files written, or nothing to do);
1 with ``--check`` when a file would change or a use needs a fix by hand;
2 usage error, libcst missing, or a path that could not be read or parsed
(reported and skipped; every other file is still processed).

The package has two halves. `cli`, `source`, `report`, `rules`, `keras3_rules` and `keras3_api` import no
libcst, so `compat-clone --help` and the other subcommands work without it.
`source.load_codemod` is the one place libcst is imported: it checks for
libcst (or raises `ImportError` saying how to install it), then imports
`codemod`, which with `walk`, `analysis`, `idiom_analysis`, `folds`, `idioms`, `update_forms`, `imports`,
`transform`, `edits`, `syntax`, `keras3` and `keras3_transform` subclasses and uses libcst at module level.
"""

from __future__ import annotations

from compat_clone.tools.migrate.cli import (
    EXIT_CHANGES,
    EXIT_ERROR,
    EXIT_OK,
    EXIT_REVIEW,
    add_arguments,
    is_excluded,
    iter_python_files,
    run,
)
from compat_clone.tools.migrate.report import MigrateResult, Report
from compat_clone.tools.migrate.source import migrate_path, migrate_source

__all__ = [
    "EXIT_OK",
    "EXIT_CHANGES",
    "EXIT_ERROR",
    "EXIT_REVIEW",
    "Report",
    "MigrateResult",
    "migrate_source",
    "migrate_path",
    "iter_python_files",
    "is_excluded",
    "add_arguments",
    "run",
]
