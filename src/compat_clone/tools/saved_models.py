"""What a saved Keras model is, read from the file alone, and where to read it.

`detect(path)` tells a saved model's format (HDF5, the ``.keras`` zip, a
TensorFlow SavedModel folder), the Keras family and version that wrote it,
and its backend, without importing any framework: HDF5 root attributes are
read with h5py (``keras_version``, ``backend``, ``model_config``), a ``.keras``
zip's ``metadata.json`` with `zipfile`, a SavedModel's TensorFlow version
from ``saved_model.pb`` with a few lines of protobuf wire-format reading.
`env_for(family, version)` maps that to the environment of the version
matrix that reads it (`compat_clone_matrix/matrix.toml`).

The format is read from the file's first bytes, not its name: tf.keras 2.12
writes HDF5 to ``model.keras`` unless told ``save_format="keras_v3"``.

Example:

>>> info = detect("model.h5")  # doctest: +SKIP
>>> info.format, info.family, info.version, info.env
('h5', 'keras2', '2.2.4', 'keras-2.2.4')
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import zipfile
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from compat_clone.errors import CompatCloneError, InvalidArgumentError
from compat_clone.families.registry import FAMILIES, entry, family_for
from compat_clone.tools._savedmodel_pb import keras_root, tensorflow_version

__all__ = [
    "SavedModelInfo",
    "UnreadableModelFileError",
    "detect",
    "env_for",
    "keras3_env_for",
    "find_models",
    "FORMATS",
    "WEIGHTS_ONLY",
    "HDF5_MAGIC",
    "file_head",
]

# format -> what the user calls it
FORMATS = {
    "h5": "HDF5 (.h5)",
    "keras": ".keras zip",
    "savedmodel": "TensorFlow SavedModel",
    "json": "architecture (model.to_json())",
    "yaml": "architecture (model.to_yaml())",
}

HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"  # the first 8 bytes of every HDF5 file
_ZIP_MAGIC = b"PK\x03\x04"
_MODEL_SUFFIXES = (".h5", ".hdf5", ".keras")
#: how `SavedModelInfo.problem` starts for an HDF5 file of weights only (`save_weights()`)
WEIGHTS_ONLY = "weights only"


class UnreadableModelFileError(CompatCloneError, ValueError):
    """A path that is not a saved Keras model this tool can read (the reason says why)."""


@dataclasses.dataclass(frozen=True)
class SavedModelInfo:
    """What `detect` read from a saved model.

    Attributes:
        path: the file or folder, as given.
        format: ``"h5"``, ``"keras"`` or ``"savedmodel"``; None when not recognised.
        family: ``"keras2"`` (standalone Keras 2.0-2.3), ``"tf_keras"`` (tf.keras
            2.x / tf_keras) or ``"keras3"``; None when unknown.
        version: the Keras version recorded in the file (for a SavedModel, the
            TensorFlow version that wrote it, which is its tf.keras version).
        backend: the backend recorded in the file (``tensorflow``, ``jax``, ...), if any.
        problem: why the file cannot be converted (None when it can).
        env: the matrix environment to read it in (None when there is none).
    """

    path: str
    format: Optional[str]
    family: Optional[str]
    version: Optional[str]
    backend: Optional[str] = None
    problem: Optional[str] = None
    env: Optional[str] = None

    @property
    def convertible(self) -> bool:
        """True for a Keras 2 model (either family) that an environment can read."""
        return self.problem is None and self.family is not None and entry(self.family).conversion_source

    def describe(self) -> str:
        """One line: format, family and version, backend."""
        what = FORMATS.get(self.format or "", "unknown format")
        if self.family is None:
            return what
        who = entry(self.family).title
        text = f"{what} written by {who} {self.version or '(version not recorded)'}"
        return text + (f", backend {self.backend}" if self.backend else "")


# --------------------------------------------------------------------------- detection


def detect(path: os.PathLike[str] | str, table: Optional[Sequence[Any]] = None) -> SavedModelInfo:
    """Reads a saved model's format, Keras family and version; imports no framework.

    Args:
        path: an ``.h5`` / ``.keras`` file or a SavedModel folder.
        table: the matrix environments to map to (`load_table()` result);
            None for the built-in table.

    Returns:
        A `SavedModelInfo`; its `problem` says why the model cannot be
        converted (not a Keras model, weights only, h5py missing, ...).

    Raises:
        UnreadableModelFileError: `path` does not exist.

    Example:

    >>> detect("saved_model_dir").family  # doctest: +SKIP
    'tf_keras'
    """
    p = os.fspath(path)
    if not os.path.exists(p):
        raise UnreadableModelFileError(
            f"No saved model at {p!r}: nothing exists there. Expected an .h5 or .keras file or a "
            "SavedModel folder; check the path."
        )
    if os.path.isdir(p):
        info = _detect_savedmodel(p)
    else:
        try:
            head = file_head(p)
        except OSError as e:
            return SavedModelInfo(p, None, None, None, problem=f"cannot be read ({e})")
        if head == HDF5_MAGIC:
            info = _detect_h5(p)
        elif head[:4] == _ZIP_MAGIC:
            info = _detect_zip(p)
        elif p.lower().endswith((".json", ".yaml", ".yml")):
            info = _detect_architecture(p)
        else:
            info = SavedModelInfo(
                p,
                None,
                None,
                None,
                problem=(
                    f"neither HDF5 nor a .keras zip (its first bytes are {head!r}); expected a file written by model.save()"
                ),
            )
    if info.problem is None and info.family is not None:
        env, why = _env_or_reason(info.family, info.version, table)
        info = dataclasses.replace(info, env=env, problem=None if entry(info.family).conversion_target else why)
    return info


def file_head(path: str) -> bytes:
    """The first 8 bytes of the file at `path` (its format's magic number: `HDF5_MAGIC`, a zip's).

    Raises:
        OSError: the file cannot be read.
    """
    with open(path, "rb") as f:
        return f.read(8)


def _detect_h5(path: str) -> SavedModelInfo:
    try:
        import h5py  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        return SavedModelInfo(
            path,
            "h5",
            None,
            None,
            problem=(
                "an HDF5 file, and h5py is not installed here to read its Keras version: "
                "`pip install h5py`, or install compat_clone with its `compat-clone[convert]` extra (`pip install '.[convert]'` "
                "in a checkout, `pip install 'compat_clone-VERSION-py3-none-any.whl[convert]'`); or name the environment "
                "to read it in with --from ENV"
            ),
        )
    try:
        with h5py.File(path, "r") as f:
            attrs = {k: _text(v) for k, v in f.attrs.items()}
            has_groups = len(f.keys()) > 0
    except OSError as e:
        return SavedModelInfo(path, "h5", None, None, problem=f"an HDF5 file h5py cannot open ({e})")
    version, backend = attrs.get("keras_version"), attrs.get("backend")
    config = attrs.get("model_config")
    if config is None:
        why = WEIGHTS_ONLY + (
            " (saved by save_weights(): no architecture); convert it with the code that builds the model "
            "(--model my_pkg.models:build) or with its architecture (compat-clone convert ARCH.json --weights FILE.h5)"
        )
        if version is None and "layer_names" not in attrs and not has_groups:
            why = "an HDF5 file with no Keras model in it (no `model_config` or `keras_version` attribute)"
        return SavedModelInfo(path, "h5", _family(version), version, backend, problem=why)
    if version is None:
        return SavedModelInfo(
            path,
            "h5",
            None,
            None,
            backend,
            problem=(
                "an HDF5 Keras model that does not record which Keras wrote it (no `keras_version` "
                "attribute); name the environment to read it in with --from ENV"
            ),
        )
    return SavedModelInfo(path, "h5", _family(version), version, backend)


def _detect_architecture(path: str) -> SavedModelInfo:
    """A `model.to_json()` / `to_yaml()` file: the Keras version and backend it records (top-level keys)."""
    fmt = "json" if path.lower().endswith(".json") else "yaml"
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        return SavedModelInfo(path, fmt, None, None, problem=f"cannot be read as text ({e})")
    if fmt == "json":
        try:
            data = json.loads(text)
        except ValueError as e:
            return SavedModelInfo(path, fmt, None, None, problem=f"not JSON ({e}); expected the text of model.to_json()")
        if not isinstance(data, dict) or "class_name" not in data or "config" not in data:
            return SavedModelInfo(
                path,
                fmt,
                None,
                None,
                problem="JSON that is not a Keras architecture (no `class_name` and `config`); expected the text of model.to_json()",
            )
        version, backend = data.get("keras_version"), data.get("backend")
    else:  # the top-level keys of Keras 2's to_yaml, read without PyYAML
        found = dict(re.findall(r"^(keras_version|backend|class_name): *['\"]?([^'\"\n]+?)['\"]? *$", text, re.M))
        if "class_name" not in found:
            return SavedModelInfo(
                path, fmt, None, None, problem="YAML that is not a Keras architecture (no top-level `class_name`)"
            )
        version, backend = found.get("keras_version"), found.get("backend")
    if version is None:
        return SavedModelInfo(
            path,
            fmt,
            None,
            None,
            backend,
            problem="an architecture that does not record which Keras wrote it (no `keras_version`); name the environment to read it in with --from ENV",
        )
    return SavedModelInfo(path, fmt, _family(str(version)), str(version), backend)


def _detect_zip(path: str) -> SavedModelInfo:
    damaged = (
        "damaged: {} (a .keras file cut short or changed after saving); "
        "convert a good copy of it, e.g. the one it was copied from"
    )
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            if "config.json" not in names:
                return SavedModelInfo(
                    path,
                    "keras",
                    None,
                    None,
                    problem=(f"a zip without config.json (holds {sorted(names)[:5]}): not a .keras model"),
                )
            # Every member's CRC, and both JSON documents, before any Keras reads it.
            bad = z.testzip()
            if bad is not None:
                return SavedModelInfo(
                    path, "keras", None, None, problem=damaged.format(f"the CRC of its member {bad!r} does not match")
                )
            for member in ("config.json", "metadata.json"):
                if member in names:
                    try:
                        json.loads(z.read(member))
                    except ValueError as e:
                        return SavedModelInfo(
                            path, "keras", None, None, problem=damaged.format(f"its {member} is not JSON ({e})")
                        )
            meta = json.loads(z.read("metadata.json")) if "metadata.json" in names else None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError) as e:
        return SavedModelInfo(path, "keras", None, None, problem=damaged.format(f"not a readable zip ({e})"))
    version = meta.get("keras_version") if isinstance(meta, dict) else None
    if not isinstance(version, str):
        return SavedModelInfo(
            path,
            "keras",
            None,
            None,
            problem=(
                "a .keras zip whose metadata.json records no keras_version; name the environment to read it in with --from ENV"
            ),
        )
    return SavedModelInfo(path, "keras", _family(version), version)


def _detect_savedmodel(path: str) -> SavedModelInfo:
    pb = os.path.join(path, "saved_model.pb")
    if not os.path.isfile(pb):
        why = "a folder that is not a SavedModel (no saved_model.pb)"
        if os.path.isfile(os.path.join(path, "saved_model.pbtxt")):
            why = "a SavedModel in text form (saved_model.pbtxt), which Keras does not write"
        return SavedModelInfo(path, None, None, None, problem=why)
    try:
        with open(pb, "rb") as f:
            data = f.read()
        tf_version = tensorflow_version(data)
        keras_inside = not os.path.isfile(os.path.join(path, "keras_metadata.pb")) and keras_root(data)
    except (OSError, ValueError) as e:
        return SavedModelInfo(path, "savedmodel", None, None, problem=f"saved_model.pb cannot be read ({e})")
    if not keras_inside and not os.path.isfile(os.path.join(path, "keras_metadata.pb")):
        return SavedModelInfo(
            path,
            "savedmodel",
            None,
            tf_version,
            "tensorflow",
            problem=(
                "a TensorFlow SavedModel without keras_metadata.pb (tf.saved_model.save() or Keras 3's "
                "model.export()): it holds graphs, not a Keras model to rebuild; in Keras 3 wrap it "
                "with keras.layers.TFSMLayer"
            ),
        )
    if tf_version is None:
        return SavedModelInfo(
            path,
            "savedmodel",
            "tf_keras",
            None,
            "tensorflow",
            problem=(
                "a Keras SavedModel whose saved_model.pb records no TensorFlow version; name the "
                "environment to read it in with --from ENV"
            ),
        )
    # Only tf.keras 2.x and tf_keras write keras_metadata.pb (TF 2.5+); TF 2.0-2.4
    # kept the same Keras metadata inside saved_model.pb, on its root object. Its
    # Keras version is the TensorFlow version's major.minor (tf.keras 2.6+ is
    # versioned with TF), and the matrix environment of that TensorFlow reads it.
    return SavedModelInfo(path, "savedmodel", "tf_keras", tf_version, "tensorflow")


def _text(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def _family(version: Optional[str]) -> Optional[str]:
    """The family that wrote a file recording `version` as its ``keras_version``."""
    if not version:
        return None
    if version.endswith("-tf"):  # tf.keras inside TensorFlow 1.x / 2.0-2.3: "2.2.4-tf"
        return "tf_keras"
    return family_for("keras", version)


# --------------------------------------------------------------------------- environments


def _release(version: str) -> Tuple[int, ...]:
    out: List[int] = []
    for part in version.split("-")[0].split("+")[0].split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        if not digits or digits != part:
            break
        out.append(int(digits))
    return tuple(out)


def env_for(family: str, version: Optional[str], table: Optional[Sequence[Any]] = None) -> str:
    """The matrix environment that reads a model of `family` written by Keras `version`.

    The environment of that family whose claimed version matches the file's
    (``2.2.4`` for 2.2.4, ``tf.keras-2.15`` for 2.15.1); else the oldest newer
    one (a newer release reads an older release's files); else the newest.
    Environments run by default are preferred over those only in the wide matrix.

    Args:
        family: ``"keras2"``, ``"tf_keras"`` or ``"keras3"``.
        version: the version recorded in the file; None for the family's newest.
        table: the matrix environments; None for the built-in table.

    Returns:
        The environment's name.

    Raises:
        UnreadableModelFileError: the table has no environment of that family.

    Example:

    >>> env_for("keras2", "2.2.4"), env_for("tf_keras", "2.15.0")
    ('keras-2.2.4', 'tf.keras-2.15')
    """
    env, why = _env_or_reason(family, version, table)
    if env is None:
        raise UnreadableModelFileError(why or f"no environment for {family} {version}")
    return env


def keras3_env_for(backend: str, table: Sequence[Any]) -> str:
    """The newest Keras 3 environment of `table` on `backend` (keras-3.15-tf, -jax, -torch): where a model is rebuilt.

    Raises:
        InvalidArgumentError: the table has no Keras 3 environment on `backend`.
    """
    found = [
        (_release(dict(e.expect).get("version", "")), e.enabled, e.name)
        for e in table
        if _is_target(dict(e.expect).get("family")) and dict(e.expect).get("backend") == backend
    ]
    if not found:
        raise InvalidArgumentError(
            f"The matrix table has no Keras 3 environment on {backend}. Name one with --to ENV (or a virtualenv)."
        )
    return str(max(found)[2])


def _is_target(family: Optional[str]) -> bool:
    """Whether `family` (a table's claim, perhaps none) is what a conversion writes."""
    found = FAMILIES.get(family or "")
    return found is not None and found.conversion_target


def _env_or_reason(family: str, version: Optional[str], table: Optional[Sequence[Any]]) -> Tuple[Optional[str], Optional[str]]:
    if table is None:
        from compat_clone_matrix import load_table

        table = load_table()
    candidates = []
    for env in table:
        claim: Dict[str, str] = dict(env.expect)
        if claim.get("family") != family or "version" not in claim:
            continue
        if entry(family).conversion_target and claim.get("backend") != "tensorflow":
            continue  # one backend is enough to name a reader
        candidates.append((_release(claim["version"]), not env.enabled, env.name))
    if not candidates:
        return None, (
            f"the matrix table has no environment of family {family!r} to read it in; "
            "add one, or name an environment with --from ENV"
        )
    if not version or not _release(version):
        return max(candidates, key=lambda c: (c[0], not c[1]))[2], None
    want = _release(version)
    exact = [c for c in candidates if want[: len(c[0])] == c[0]]
    if exact:  # the longest claim that matches ("2.2.4" over "2.2"), then enabled first
        return min(exact, key=lambda c: (-len(c[0]), c[1], c[2]))[2], None
    newer = [c for c in candidates if c[0] > want]
    if newer:
        return min(newer, key=lambda c: (c[0], c[1]))[2], None
    return max(candidates, key=lambda c: (c[0], not c[1]))[2], None


# --------------------------------------------------------------------------- walking


def find_models(root: os.PathLike[str] | str, table: Optional[Sequence[Any]] = None) -> Iterator[SavedModelInfo]:
    """Every saved model under `root`: ``.h5`` / ``.hdf5`` / ``.keras`` files and SavedModel folders.

    Folders are walked in sorted order, skipping hidden ones and virtual
    environments; a SavedModel folder is reported once and not entered. A
    candidate that cannot be read is yielded with its `problem` set.

    Args:
        root: a folder, or one file / SavedModel folder.
        table: the matrix environments; None for the built-in table.

    Returns:
        An iterator of `SavedModelInfo`, in path order.
    """
    r = os.fspath(root)
    if not os.path.isdir(r) or os.path.isfile(os.path.join(r, "saved_model.pb")):
        yield detect(r, table)
        return
    for here, dirs, files in os.walk(r):
        keep = []
        for d in sorted(dirs):
            full = os.path.join(here, d)
            if d.startswith(".") or d == "__pycache__" or os.path.exists(os.path.join(full, "pyvenv.cfg")):
                continue
            if os.path.isfile(os.path.join(full, "saved_model.pb")):
                yield detect(full, table)
                continue
            keep.append(d)
        dirs[:] = keep
        for name in sorted(files):
            if name.lower().endswith(_MODEL_SUFFIXES):
                yield detect(os.path.join(here, name), table)
