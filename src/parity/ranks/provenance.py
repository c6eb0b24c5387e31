"""Per-rank provenance: which host, process, device and CPUs one rank measured on.

The run's full provenance (``parity.device.provenance.collect_provenance``) is collected once,
by the writer. Each rank adds this smaller record, cheap enough to take on every rank and
gather to rank 0: what can differ from rank to rank (host, pid, device index, affinity, the
device-visibility variables a launcher sets per rank). Nothing here raises for a missing fact.
"""

from __future__ import annotations

import logging
import os
import platform
from typing import TYPE_CHECKING, Any

from parity.device import host
from parity.ranks.topology import node_identity

if TYPE_CHECKING:  # pragma: no cover
    from parity.device.base import Device

log = logging.getLogger(__name__)

# Variables a launcher or scheduler sets per rank that decide which device or CPUs it sees.
PER_RANK_ENV = (
    "CUDA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "ASCEND_RT_VISIBLE_DEVICES",
    "ZE_AFFINITY_MASK",
    "OMP_NUM_THREADS",
    "SLURM_JOB_ID",
    "SLURM_STEP_ID",
    "SLURM_NODEID",
    "TORCHELASTIC_RUN_ID",
)


def rank_provenance(
    *,
    device: Device | None,
    rank: int = 0,
    local_rank: int = 0,
    environ: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A JSON-ready record of where this rank runs: host, node (``parity.ranks.topology``), the
    launcher's ranks on this node and node index (``LOCAL_WORLD_SIZE``, ``GROUP_RANK``), pid,
    device, CPU placement, env."""
    env = os.environ if environ is None else environ
    return {
        "rank": rank,
        "local_rank": local_rank,
        "local_world_size": _int_or_none(env.get("LOCAL_WORLD_SIZE")) or 1,
        "group_rank": _int_or_none(env.get("GROUP_RANK")),
        "node": node_identity(env),
        "host": platform.node(),
        "pid": os.getpid(),
        "device": device_summary(device),
        "placement": host.placement(),
        "environment": {name: env[name] for name in PER_RANK_ENV if name in env},
    }


def _int_or_none(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def device_summary(device: Device | None) -> dict[str, Any]:
    """The device's name, type and reported model name; ``{"selected": None}`` without one."""
    if device is None:
        return {"selected": None}
    summary: dict[str, Any] = {"selected": device.name, "type": device.type}
    try:
        summary["name"] = device.properties().name
    except Exception as exc:  # noqa: BLE001 - a fact we cannot read is recorded as missing
        log.debug("device properties unavailable on %s: %s", device.name, exc)
        summary["name"] = None
    return summary
