"""Datasheet peaks from ``parity/data/device_specs.toml``: data with sources, never literals.

A ``DeviceSpec`` gives the dense peak per dtype in FLOP/s and the memory bandwidth in B/s for
one accelerator, with the document each figure comes from. ``match_spec`` finds the entry for
the name torch reports; a device without an entry (every CPU, say) has no datasheet figures and
parity reports only its measured ceilings.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from parity.model.errors import ParityError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

TERA = 1e12
GIGA = 1e9
KNOWN_DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8")


@dataclass(frozen=True, kw_only=True)
class DeviceSpec:
    """One device's datasheet: dense peaks (FLOP/s) by dtype name, bandwidth (B/s), sources."""

    key: str
    name: str
    vendor: str
    source: str
    match: tuple[tuple[str, ...], ...]
    peak_flops_by_dtype: dict[str, float] = field(default_factory=dict)
    memory_bandwidth_bps: float | None = None
    memory_bytes: float | None = None
    derived: str = ""
    note: str = ""

    def peak_flops(self, dtype: str) -> float | None:
        """Dense datasheet peak for ``dtype`` (``bf16``, ``fp8``...) in FLOP/s; None if unpublished."""
        return self.peak_flops_by_dtype.get(dtype)

    def matches(self, device_name: str) -> bool:
        """True when every substring of one of the ``match`` groups is in ``device_name``."""
        lowered = device_name.lower()
        return any(all(part in lowered for part in group) for group in self.match)

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "name": self.name,
            "vendor": self.vendor,
            "source": self.source,
            "derived": self.derived,
            "note": self.note,
            "peak_flops": dict(self.peak_flops_by_dtype),
            "memory_bandwidth_bps": self.memory_bandwidth_bps,
            "memory_bytes": self.memory_bytes,
        }


def parse_specs(data: dict[str, Any], *, source: str) -> dict[str, DeviceSpec]:
    """Build specs from the TOML structure; a malformed entry raises naming ``source`` and key."""
    devices = data.get("devices")
    if not isinstance(devices, dict) or not devices:
        raise ParityError(f"{source}: no [devices.*] tables; is this a device spec file?")
    return {key: _parse_entry(key, entry, source=source) for key, entry in devices.items()}


def _parse_entry(key: str, entry: Any, *, source: str) -> DeviceSpec:
    where = f"{source}: devices.{key}"
    if not isinstance(entry, dict):
        raise ParityError(f"{where} is not a table")
    for required in ("name", "vendor", "source", "match"):
        if required not in entry:
            raise ParityError(f"{where} has no {required!r}; every entry needs a name, vendor, source and match")
    match = entry["match"]
    if not isinstance(match, list) or not match or not all(isinstance(g, list) and g for g in match):
        raise ParityError(f"{where}.match must be a non-empty list of lists of substrings")
    peaks: dict[str, float] = {}
    for dtype, tflops in dict(entry.get("dense_tflops", {})).items():
        if dtype not in KNOWN_DTYPES:
            raise ParityError(f"{where}.dense_tflops has unknown dtype {dtype!r}; use one of {', '.join(KNOWN_DTYPES)}")
        if not isinstance(tflops, (int, float)) or tflops <= 0:
            raise ParityError(f"{where}.dense_tflops.{dtype} = {tflops!r} is not a positive number")
        peaks[dtype] = float(tflops) * TERA
    bandwidth = entry.get("memory_bandwidth_tbps")
    memory = entry.get("memory_gb")
    return DeviceSpec(
        key=key,
        name=str(entry["name"]),
        vendor=str(entry["vendor"]),
        source=str(entry["source"]),
        match=tuple(tuple(str(p).lower() for p in group) for group in match),
        peak_flops_by_dtype=peaks,
        memory_bandwidth_bps=float(bandwidth) * TERA if bandwidth is not None else None,
        memory_bytes=float(memory) * GIGA if memory is not None else None,
        derived=str(entry.get("derived", "")),
        note=str(entry.get("note", "")),
    )


@functools.lru_cache(maxsize=4)
def load_specs(path: str | None = None) -> dict[str, DeviceSpec]:
    """The bundled spec table, or the TOML file at ``path``."""
    if path is None:
        text = resources.files("parity").joinpath("data/device_specs.toml").read_text(encoding="utf-8")
        label = "device_specs.toml"
    else:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ParityError(f"cannot read device spec file {path}: {exc.strerror}") from None
        label = str(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ParityError(f"{label} is not valid TOML: {exc}") from None
    return parse_specs(data, source=label)


def match_spec(device_name: str, *, specs: dict[str, DeviceSpec] | None = None) -> DeviceSpec | None:
    """The first spec (file order) whose match groups fit ``device_name``; None when none do."""
    for spec in (specs if specs is not None else load_specs()).values():
        if spec.matches(device_name):
            return spec
    return None


def memory_bandwidth(device_name: str) -> dict[str, Any] | None:
    """Datasheet memory bandwidth of ``device_name`` as ``{"gbps", "bps", "device", "source"}``
    (``gbps`` in 10^9 B/s), or None when there is no entry or it lists no bandwidth."""
    spec = match_spec(device_name)
    if spec is None or spec.memory_bandwidth_bps is None:
        return None
    return {
        "gbps": spec.memory_bandwidth_bps / GIGA,
        "bps": spec.memory_bandwidth_bps,
        "device": spec.name,
        "source": spec.source,
    }


def peak_flops(device_name: str, dtype: str) -> dict[str, Any] | None:
    """Datasheet dense peak of ``device_name`` for ``dtype`` as ``{"flops", "device", "source"}``
    (FLOP/s), or None when there is no entry or no published figure for that dtype."""
    spec = match_spec(device_name)
    if spec is None or spec.peak_flops(dtype) is None:
        return None
    return {"flops": spec.peak_flops(dtype), "device": spec.name, "source": spec.source,
            "derived": spec.derived}
