"""Which ``torch.distributed`` backend carries collectives for each device type.

The table follows what each vendor ships: NCCL on ``cuda`` (ROCm builds of torch register RCCL
under the name ``nccl``, so one name serves NVIDIA and AMD), HCCL on ``npu`` (torch_npu
registers it), XCCL on ``xpu`` (torch 2.8 and later), and gloo on the CPU and on ``mps``
(Apple has no collective library). When the preferred backend is missing from this torch
build, gloo is used and the reason is kept with the choice, so a run can report that its
collectives went through the host.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from parity.model.errors import ParityError
from parity.model.findings import Finding, Severity

GLOO = "gloo"

# Device type -> the backend a run should use there; None means gloo is the native choice.
PREFERRED: dict[str, str | None] = {
    "cuda": "nccl",
    "npu": "hccl",
    "xpu": "xccl",
    "cpu": None,
    "mps": None,
    "fake": None,
}

# Why gloo is the native choice where no vendor backend exists.
NATIVE_GLOO_NOTES = {
    "mps": "Apple ships no collective library; gloo runs collectives on host copies",
}


@dataclass(frozen=True, kw_only=True)
class DistributedBackend:
    """The backend name to pass to ``init_process_group``, and why, when it is a fallback.

    ``fallback_reason`` is None when ``name`` is the device's own backend; otherwise it says
    which backend was wanted and is missing, for a finding on the run. ``note`` explains a
    native choice that users might not expect (gloo on ``mps``).
    """

    name: str
    fallback_reason: str | None = None
    note: str | None = None

    def to_dict(self) -> dict[str, str | None]:
        return {"name": self.name, "fallback_reason": self.fallback_reason, "note": self.note}

    def findings(self) -> list[Finding]:
        """``collectives-fallback`` (warning) when gloo stands in for the device's own backend:
        collective timings then measure host copies, not the device's interconnect."""
        if self.fallback_reason is None:
            return []
        return [
            Finding(
                code="collectives-fallback",
                severity=Severity.WARNING,
                message=self.fallback_reason,
                hint="install a torch build with the device's collective backend",
            )
        ]


def choose_backend(
    device_type: str, *, available: Callable[[str], bool], torch_version: str
) -> DistributedBackend:
    """The backend for ``device_type`` given which backends this torch build has.

    ``available(name)`` answers ``torch.distributed.is_backend_available(name)``. Unknown
    device types and builds with neither the preferred backend nor gloo raise ParityError.
    """
    if device_type not in PREFERRED:
        known = ", ".join(sorted(PREFERRED))
        raise ParityError(
            f"no distributed backend is known for device type {device_type!r}; known: {known}"
        )
    wanted = PREFERRED[device_type]
    if wanted is not None and available(wanted):
        return DistributedBackend(name=wanted)
    if not available(GLOO):
        missing = f"{wanted} nor gloo" if wanted else "gloo"
        raise ParityError(
            f"torch {torch_version} has neither {missing} for {device_type} collectives; "
            "install a torch build with distributed support"
        )
    if wanted is None:
        return DistributedBackend(name=GLOO, note=NATIVE_GLOO_NOTES.get(device_type))
    return DistributedBackend(
        name=GLOO,
        fallback_reason=(
            f"torch {torch_version} has no {wanted} backend for {device_type}; "
            "collectives fall back to gloo, which runs them on host copies"
        ),
    )


def torch_backend(device_type: str) -> DistributedBackend:
    """``choose_backend`` against the installed torch; ParityError when torch.distributed is
    missing from the build."""
    import torch
    import torch.distributed as dist

    if not dist.is_available():
        raise ParityError(
            f"torch {torch.__version__} was built without torch.distributed; "
            "install a build with distributed support to run collectives"
        )
    return choose_backend(
        device_type, available=_availability(dist), torch_version=str(torch.__version__)
    )


def _availability(dist: Any) -> Callable[[str], bool]:
    """``dist.is_backend_available`` where torch has it; before that, the ``is_<name>_available``
    functions and the list of registered third-party backends (torch_npu's hccl) it consults."""
    if hasattr(dist, "is_backend_available"):
        return dist.is_backend_available  # type: ignore[no-any-return]

    def available(name: str) -> bool:
        probe = getattr(dist, f"is_{name}_available", None)
        return bool(probe()) if probe is not None else name in dist.Backend.backend_list

    return available
