"""Keras 3 names for a Keras 2 model's layer names: one rule for the rebuild and for the proof.

Keras 2 let a name hold ``/`` (`keras.applications` DenseNet and
MobileNetV3, TF1 name scopes); Keras 3 refuses it. Such names get ``_`` in
its place (``conv1/conv`` -> ``conv1_conv``, as Keras 3's own applications
write them), numbered where that meets another name of the same model.
"""

from __future__ import annotations

from typing import Dict, List, Mapping

__all__ = ["keras3_names", "keras3_paths", "top_names", "valid_name"]


def valid_name(name: str) -> str:
    """A source layer name as Keras 3 accepts it (no ``/``)."""
    return name.replace("/", "_")


def keras3_names(names: List[str]) -> Dict[str, str]:
    """The Keras 3 name of each of one model's layer names (`names`: the model's config order)."""
    taken = set(names)
    result: Dict[str, str] = {}
    for name in names:
        new = valid_name(name)
        if new != name:
            base, n = new, 1
            while new in taken:
                new, n = f"{base}_{n}", n + 1
            taken.add(new)
        result[name] = new
    return result


def top_names(architecture: Mapping[str, object]) -> Dict[str, str]:
    """The Keras 3 name of each layer of a description's top model (its ``architecture``)."""
    config = architecture.get("config")
    layers = config.get("layers") if isinstance(config, dict) else None
    if not isinstance(layers, list):
        return {}
    return keras3_names([str(e.get("name", e.get("config", {}).get("name", ""))) for e in layers if isinstance(e, dict)])


def keras3_paths(architecture: Mapping[str, object]) -> Dict[str, str]:
    """The Keras 3 path of each layer of a description (source path -> the path `walk` gives in the rebuilt model).

    Names are made valid level by level as the rebuild makes them (`keras3_names`), nested models entered.
    """
    found: Dict[str, str] = {}

    def visit(config: object, prefix: str, new_prefix: str) -> None:
        layers = config.get("layers") if isinstance(config, dict) else config
        if not isinstance(layers, list):
            return
        entries = [e for e in layers if isinstance(e, dict) and isinstance(e.get("config"), dict)]
        names = keras3_names([str(e["config"].get("name", "")) for e in entries])
        for e in entries:
            name = str(e["config"].get("name", ""))
            found[prefix + name] = new_prefix + names[name]
            if isinstance(e["config"].get("layers"), list):
                visit(e["config"], prefix + name + "/", new_prefix + names[name] + "/")

    visit(architecture.get("config"), "", "")
    return found
