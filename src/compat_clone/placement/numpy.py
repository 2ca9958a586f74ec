"""NumPy placement (Keras 3's reference backend: host memory only), and the generic copy any other Keras 3 backend gets."""

from __future__ import annotations

from typing import Any, Callable, Optional

from compat_clone.placement._common import Pairs, Placement, device_not_found, framework

__all__ = ["NumpyBackend"]


class NumpyBackend:
    """NumPy (Keras 3 on NumPy): a `PlacementBackend`.

    Everything lives in host memory: the clone is placed there, and the only
    device accepted is the CPU. Copies go through each target's own `assign`,
    blends through NumPy; this is also how a Keras 3 backend without a class
    of its own here has its variables copied.
    """

    def resolve(self, model: Any, device: Any) -> Placement:
        if device is None or (isinstance(device, str) and device.strip().lower().lstrip("/") in ("cpu", "cpu:0")):
            return Placement("host memory")
        raise device_not_found(device, "numpy", ["cpu"])

    def assign(self, pairs: Pairs) -> None:
        values = [src.value for src, _ in pairs]  # every source read before the first write
        for (_, dst), value in zip(pairs, values):
            dst.assign(value)

    def blend(self, pairs: Pairs, tau: float) -> None:
        np = framework("numpy")
        values = []
        for src, dst in pairs:  # host memory already (Keras 3's numpy backend)
            s, d = np.asarray(src.value), np.asarray(dst.value)
            values.append((d + tau * (s - d)).astype(d.dtype) if np.issubdtype(d.dtype, np.inexact) else np.array(s))
        for (_, dst), value in zip(pairs, values):
            dst.assign(value)

    def fresh_copier(self) -> Optional[Callable[[Any], Any]]:
        return None  # no prefill: host arrays are created, then assigned
