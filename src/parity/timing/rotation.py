"""Input sets rotated past the last-level cache, so no call finds its inputs already cached."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from parity.model.errors import ParityError

# At least two sets: with one set the same inputs are read every call.
MIN_SETS = 2


def sets_to_exceed_cache(*, bytes_per_set: int, cache_bytes: int, max_sets: int) -> int:
    """Number of input sets ``n`` whose cycle is larger than the cache.

    ``n = max(2, floor(cache_bytes / bytes_per_set) + 1)``, so ``n * bytes_per_set > cache_bytes``,
    capped at ``max_sets`` (then the cycle may fit in the cache, and ``exceeds_cache`` says so).
    Example: 1 MiB sets and a 32 MiB cache give 33 sets (33 MiB).
    """
    if bytes_per_set <= 0:
        raise ParityError(f"bytes_per_set must be positive, got {bytes_per_set}")
    if max_sets < 1:
        raise ParityError(f"max_sets must be at least 1, got {max_sets}")
    wanted = max(MIN_SETS, cache_bytes // bytes_per_set + 1)
    return min(wanted, max_sets)


@dataclass(frozen=True, kw_only=True)
class InputRotation:
    """Distinct input sets, handed out in a cycle: call ``i`` gets set ``i % len(sets)``."""

    sets: tuple[Any, ...]
    bytes_per_set: int
    cache_bytes: int

    def __post_init__(self) -> None:
        if not self.sets:
            raise ParityError("an input rotation needs at least one input set")

    @classmethod
    def build(
        cls,
        make_inputs: Callable[[], Any],
        *,
        bytes_per_set: int,
        cache_bytes: int,
        max_sets: int = 64,
    ) -> InputRotation:
        """Call ``make_inputs`` (which must draw new random values each time) enough times."""
        count = sets_to_exceed_cache(
            bytes_per_set=bytes_per_set, cache_bytes=cache_bytes, max_sets=max_sets
        )
        return cls(
            sets=tuple(make_inputs() for _ in range(count)),
            bytes_per_set=bytes_per_set,
            cache_bytes=cache_bytes,
        )

    @classmethod
    def single(cls, inputs: Any, *, bytes_per_set: int = 0) -> InputRotation:
        """One input set (when rotation is not wanted, e.g. inputs far larger than the cache)."""
        return cls(sets=(inputs,), bytes_per_set=bytes_per_set, cache_bytes=0)

    def __len__(self) -> int:
        return len(self.sets)

    def __getitem__(self, call: int) -> Any:
        return self.sets[call % len(self.sets)]

    @property
    def total_bytes(self) -> int:
        """Bytes of all sets together: the cycle's working set."""
        return self.bytes_per_set * len(self.sets)

    @property
    def exceeds_cache(self) -> bool:
        """True when cycling the sets touches more bytes than the cache holds."""
        return self.total_bytes > self.cache_bytes

    def to_dict(self) -> dict[str, Any]:
        return {
            "sets": len(self.sets),
            "bytes_per_set": self.bytes_per_set,
            "cache_bytes": self.cache_bytes,
            "total_bytes": self.total_bytes,
            "exceeds_cache": self.exceeds_cache,
        }
