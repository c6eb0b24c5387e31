"""Raw timing samples: the truth every statistic is derived from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, kw_only=True)
class Samples:
    """An immutable set of per-call durations in seconds, with how they were taken.

    ``method`` names the timing strategy (``device-events``, ``host-clock``, ``graph-replay``,
    ``fake``); ``resolution_s`` is the timer's resolution so checks can flag samples shorter than
    it; ``calls_per_sample`` > 1 means each value is already divided by that many calls.
    """

    values_s: tuple[float, ...]
    method: str
    resolution_s: float = 0.0
    calls_per_sample: int = 1
    warmup_calls: int = 0
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "values_s", tuple(float(v) for v in self.values_s))
        if any(v < 0 for v in self.values_s):
            raise ValueError(f"negative duration in samples: {min(self.values_s)!r} s")

    def __len__(self) -> int:
        return len(self.values_s)

    def to_dict(self) -> dict[str, Any]:
        return {
            "values_s": list(self.values_s),
            "method": self.method,
            "resolution_s": self.resolution_s,
            "calls_per_sample": self.calls_per_sample,
            "warmup_calls": self.warmup_calls,
            "meta": dict(self.meta),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Samples:
        return cls(
            values_s=tuple(data["values_s"]),
            method=str(data["method"]),
            resolution_s=float(data.get("resolution_s", 0.0)),
            calls_per_sample=int(data.get("calls_per_sample", 1)),
            warmup_calls=int(data.get("warmup_calls", 0)),
            meta=dict(data.get("meta", {})),
        )
