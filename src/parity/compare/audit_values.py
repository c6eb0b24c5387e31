"""The audit's entry record and the readers its conditions share (paths into a run's record,
its ranks, their count)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: a trace comparison never loads the run records
    from parity.model.result import RunRecord


@dataclass(frozen=True, kw_only=True)
class AuditEntry:
    """One condition that differs: its value in each run, why it matters, whether it refuses,
    and whether it applies to the figures compared (``applies``; when not, ``matters`` ends with
    why not: ``NCCL_ALGO`` differs between two runs of gloo ranks)."""

    condition: str
    values: tuple[Any, ...]
    matters: str
    refused: bool = False
    applies: bool = True

    @classmethod
    def make(cls, condition: str, values: tuple[Any, ...], matters: str, *, not_here: str | None = None) -> AuditEntry:
        """An entry that applies unless ``not_here`` says why it cannot change these figures."""
        if not_here is None:
            return cls(condition=condition, values=values, matters=matters)
        return cls(condition=condition, values=values, matters=f"{matters}; not for these figures: {not_here}",
                   applies=False)

    def to_dict(self) -> dict[str, Any]:
        return {"condition": self.condition, "values": list(self.values), "matters": self.matters,
                "refused": self.refused, "applies": self.applies}


def get(data: Any, *path: str) -> Any:
    """``data[path[0]][path[1]]...``, None where a step is missing or not a mapping."""
    for part in path:
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return data


def rank_records(run: RunRecord) -> list[dict[str, Any]]:
    """Every rank's provenance of a run of ranks (rank order); [] for other targets."""
    if get(run.provenance, "target", "kind") != "ranks":
        return []
    records = get(run.provenance, "target", "provenance")
    return [r for r in records if isinstance(r, dict)] if isinstance(records, list) else []


def world_size(run: RunRecord) -> int | None:
    """How many ranks measured: the target's world size, 1 for a local device or an endpoint's
    client, None when the run does not say."""
    kind = get(run.provenance, "target", "kind")
    size = get(run.provenance, "target", "identity", "world_size")
    if isinstance(size, int):
        return size
    return 1 if kind in ("local", "remote", "endpoint") else None


def ranks_text(indices: list[int]) -> str:
    """``rank 2``, ``ranks 0-1``, ``ranks 0, 2``: contiguous runs of rank numbers."""
    ordered = sorted(indices)
    if len(ordered) == 1:
        return f"rank {ordered[0]}"
    if ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"ranks {ordered[0]}-{ordered[-1]}"
    return "ranks " + ", ".join(map(str, ordered))


def run_mode(run: RunRecord) -> str:
    """``online`` for a run against a served endpoint or one labelled online (a serving sweep,
    an imported vLLM or InferenceX result), else ``offline`` (engine steps, kernels)."""
    config = run.config or {}
    modes: dict[str, Any] = config["modes"] if isinstance(config.get("modes"), dict) else {}
    if (get(run.provenance, "target", "kind") in ("endpoint", "remote") or config.get("mode") == "online"
            or "online" in modes.values()):
        return "online"
    return "offline"
