"""A TensorFlow SavedModel's `saved_model.pb`, read without TensorFlow or protobuf.

A few lines of protobuf wire-format reading give what `saved_models.detect`
needs: the TensorFlow version that wrote the SavedModel, and whether its root
object is a Keras model that records its config (TF 2.0-2.4).
"""

from __future__ import annotations

import json
from typing import Any, Iterator, Optional, Tuple

__all__ = ["tensorflow_version", "keras_root"]


def _varint(buf: bytes, pos: int) -> Tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _fields(buf: bytes) -> Iterator[Tuple[int, Any]]:
    """(field number, value) of one protobuf message: an int, or bytes for length-delimited."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos : pos + 8], pos + 8
        elif wire == 2:
            size, pos = _varint(buf, pos)
            value, pos = buf[pos : pos + size], pos + size
        elif wire == 5:
            value, pos = buf[pos : pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        if pos > len(buf):
            raise ValueError("truncated message")
        yield number, value


def _first(buf: Optional[bytes], number: int) -> Optional[bytes]:
    """The first length-delimited field `number` of message `buf` (None: absent, or no message)."""
    if buf is None:
        return None
    return next((v for n, v in _fields(buf) if n == number and isinstance(v, bytes)), None)


def tensorflow_version(data: bytes) -> Optional[str]:
    """``SavedModel.meta_graphs[0].meta_info_def.tensorflow_version`` (fields 2, 1, 5)."""
    for number, meta_graph in _fields(data):
        if number != 2:
            continue
        for n2, meta_info in _fields(meta_graph):
            if n2 != 1:
                continue
            version = _first(meta_info, 5)
            if version is not None:
                return version.decode("utf-8", "replace") or None
    return None


def keras_root(data: bytes) -> bool:
    """Whether a SavedModel's root object is a Keras model that records its config (TF 2.0-2.4).

    ``meta_graphs[0].object_graph_def.nodes[0].user_object`` (fields 2, 7, 1, 4):
    its ``identifier`` (1) is ``_tf_keras_network`` / ``_tf_keras_model`` /
    ``_tf_keras_sequential`` and its ``metadata`` (3) the model's JSON. A model
    that records no config (a subclassed one) has nothing to rebuild from.
    """
    # the first meta graph's object graph, and its first node: the root
    user = _first(_first(_first(_first(data, 2), 7), 1), 4)
    if user is None:
        return False
    found = {n: v for n, v in _fields(user) if isinstance(v, bytes)}
    identifier = found.get(1, b"").decode("utf-8", "replace")
    if identifier not in ("_tf_keras_network", "_tf_keras_model", "_tf_keras_sequential"):
        return False
    try:
        metadata = json.loads(found.get(3, b"{}").decode("utf-8", "replace"))
    except ValueError:
        return False
    return isinstance(metadata, dict) and isinstance(metadata.get("config"), dict) and "layers" in metadata["config"]
