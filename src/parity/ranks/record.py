"""The target record: what a run measures, and what identifies it.

A run has one target (docs/definitions.md, Targets): a local device, a group of ranks, or a remote
endpoint. Each live target (``LocalTarget``, ``parity.ranks.group.RankGroup``,
``parity.ranks.remote.RemoteEndpoint``) turns itself into one ``Target`` record with
``record()``; the record is plain data (standard library only), so the store keeps it with the
run, an export carries it, and a resumed run compares it with the target it finds now.

``identity`` holds what must be equal for two runs to have measured the same thing (a device
name and type; a world size, backend and device type; a URL, model and what the server says the
model is). ``provenance`` holds one entry per rank or per endpoint: the facts that explain a
result but need not match (host name, process id, CPU affinity, the server's full answer).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from parity.model.errors import ParityError

if TYPE_CHECKING:  # pragma: no cover
    from parity.device.base import Device

KINDS = ("local", "ranks", "remote")


@dataclass(frozen=True, kw_only=True)
class Target:
    """One run's target as stored: ``kind`` (local | ranks | remote), ``name`` for people,
    ``identity`` (compared on resume and by compare), ``provenance`` (one mapping per rank or
    endpoint, in rank order)."""

    kind: str
    name: str
    identity: Mapping[str, Any] = field(default_factory=dict)
    provenance: tuple[Mapping[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"target kind {self.kind!r} is not one of {', '.join(KINDS)}")
        object.__setattr__(self, "identity", dict(self.identity))
        object.__setattr__(self, "provenance", tuple(dict(p) for p in self.provenance))

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "identity": dict(self.identity),
            "provenance": [dict(p) for p in self.provenance],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Target:
        return cls(
            kind=str(data["kind"]),
            name=str(data.get("name", "")),
            identity=dict(data.get("identity", {})),
            provenance=tuple(dict(p) for p in data.get("provenance", ())),
        )


def check_same_target(stored: Target, current: Target) -> None:
    """Refuse to resume a run on another target: a ParityError naming the first field that
    differs, with both values. Provenance (pid, host load, affinity) may differ; identity may
    not."""
    if stored.kind != current.kind:
        raise ParityError(
            f"the run measured a {stored.kind} target ({stored.name}) and this one is "
            f"{current.kind} ({current.name}); resume it on the same target or start a new run"
        )
    for key in sorted(set(stored.identity) | set(current.identity)):
        was, now = stored.identity.get(key), current.identity.get(key)
        if was != now:
            raise ParityError(
                f"target {key} was {was!r} when the run started and is {now!r} now; resume it "
                "on the same target or start a new run"
            )


@dataclass(frozen=True, kw_only=True)
class LocalTarget:
    """One local device, measured by this process alone (the target of every run so far).

    ``is_writer`` is always True: the only process is the one that writes the store.
    """

    device: Device

    kind: ClassVar[str] = "local"

    @property
    def is_writer(self) -> bool:
        return True

    def record(self) -> Target:
        """The stored record: the device's name and type, and this process's provenance."""
        from parity.ranks.provenance import rank_provenance

        return Target(
            kind="local",
            name=self.device.name,
            identity={"device": self.device.name, "device_type": self.device.type},
            provenance=(rank_provenance(device=self.device),),
        )
