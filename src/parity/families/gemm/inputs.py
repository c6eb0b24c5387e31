"""Input sets for timing a GEMM: random A and B in the storage dtype, prepared by the backend."""

from __future__ import annotations

from typing import Any

from parity.families.gemm.dtypes import GemmDtype, storage_dtype
from parity.metrics.roofline import gemm_min_bytes


def bytes_per_set(dtype: GemmDtype, *, m: int, n: int, k: int) -> int:
    """Bytes one call touches at least: ``(MK + KN)·in_bytes + MN·out_bytes``."""
    return int(gemm_min_bytes(m, n, k, in_bytes=dtype.in_bytes, out_bytes=dtype.out_bytes))


_CACHE_BYTES: dict[str, int] = {}


def cache_bytes(device: Any) -> int:
    """The last-level cache (L2 on GPUs) in bytes, 0 when the device does not say (read once
    per device: reading the CPU's caches from sysfs takes a tenth of a second)."""
    if device.name not in _CACHE_BYTES:
        props = device.properties()
        _CACHE_BYTES[device.name] = int(props.llc_bytes or props.l2_bytes or 0)
    return _CACHE_BYTES[device.name]


def rotation_for(*, device: Any, backend: Any, dtype: GemmDtype, m: int, n: int, k: int,
                 max_sets: int = 64) -> Any:
    """An ``InputRotation`` whose sets together exceed the cache (at most ``max_sets``, and at
    most the backend's ``max_input_sets`` where it has one, as a frozen-weight backend does)."""
    from parity.timing import InputRotation

    stored = storage_dtype(dtype, device)
    max_sets = min(max_sets, int(getattr(backend, "max_input_sets", max_sets)))

    def make() -> Any:
        a = device.random_tensor((m, k), stored)
        b = device.random_tensor((k, n), stored)
        return backend.prepare(a, b, dtype=dtype)

    return InputRotation.build(make, bytes_per_set=bytes_per_set(dtype, m=m, n=n, k=k),
                               cache_bytes=cache_bytes(device), max_sets=max_sets)


def free_memory_bytes(device: Any) -> int | None:
    """Bytes free for new tensors (the device's ``free_memory_bytes``), None when unknown."""
    return device.free_memory_bytes()
