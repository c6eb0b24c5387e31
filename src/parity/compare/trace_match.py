"""What makes two traces comparable: streams lined up by role, the overlap of their kernel
names, and which device families they come from.

Stream ids mean nothing across traces (CUDA stream 7 on one GPU, stream 2 on an Ascend card),
so streams are matched by the role each plays in its own trace: the compute stream (the one with
the most compute time, compute being device work that is neither communication nor a memory
copy or set), the communication streams (communication is at least half of their time), and
the other streams, each group ordered by busy time. Two traces of one workload run the same
kernels; :func:`kernel_overlap` measures how much of their kernel time shares a name, and a
value under :data:`WORKLOAD_OVERLAP_MIN` says they are probably not the same workload. GPU
kernels and Ascend tasks never share names, so across device families only categories compare.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

NOT_COMPUTE = ("communication", "memory")  # as parity.trace.categories.COMPUTE_EXCLUDED
COMMUNICATION_STREAM_SHARE = 0.5  # a stream whose time is at least half communication is one
WORKLOAD_OVERLAP_MIN = 0.1  # kernel-name overlap under this: probably not the same workload
FAMILIES = {"kineto": "GPU kernels", "chrome": "GPU kernels", "nsys": "GPU kernels",
            "ascend-text": "Ascend tasks", "ascend-db": "Ascend tasks"}  # the profiler itself: "trace format"
CROSS_FAMILY_CAVEAT = (
    "GPU kernels and Ascend tasks are compared by category only: an Ascend trace times hardware tasks "
    "(AI Core, AI Vector Core, HCCL), classed by kernel_details.csv's Accelerator Core, a GPU trace times "
    "kernels classed by name; streams do not correspond and kernel names never match, so no stream, "
    "compute/communication or workload figure is lined up")


def family(fmt: str | None) -> str:
    """The device family of a trace format: what its activities are (GPU kernels, Ascend tasks)."""
    return FAMILIES.get(fmt or "", f"unknown ({fmt})")


def _compute_us(stream: Mapping[str, Any]) -> float:
    cats = stream.get("categories_us") or {}
    return float(sum(v for k, v in cats.items() if k not in NOT_COMPUTE))


def _communication_share(stream: Mapping[str, Any]) -> float:
    cats = stream.get("categories_us") or {}
    total = sum(cats.values())
    return float(cats.get("communication", 0.0)) / total if total else 0.0


def stream_roles(streams: Sequence[Mapping[str, Any]]) -> list[tuple[str, Mapping[str, Any]]]:
    """``(role, stream)`` for every stream of one rank: ``compute`` for the stream with the most
    compute time (ties: more busy time, then the lower stream id), ``communication N`` for each
    stream at least :data:`COMMUNICATION_STREAM_SHARE` communication, ``other N`` for the rest;
    N counts from 1 in order of busy time."""
    def busiest(s: Mapping[str, Any]) -> tuple[float, float, float]:
        return (-float(s.get("busy_us") or 0.0), float(s.get("device") or 0), float(s.get("stream") or 0))

    ordered = sorted(streams, key=busiest)
    comm = [s for s in ordered if _communication_share(s) >= COMMUNICATION_STREAM_SHARE]
    rest = [s for s in ordered if _communication_share(s) < COMMUNICATION_STREAM_SHARE]
    roles: list[tuple[str, Mapping[str, Any]]] = []
    computing = [s for s in rest if _compute_us(s) > 0]
    if computing:
        top = min(computing, key=lambda s: (-_compute_us(s), *busiest(s)))
        roles.append(("compute", top))
        rest = [s for s in rest if s is not top]
    roles += [(f"communication {i}", s) for i, s in enumerate(comm, 1)]
    roles += [(f"other {i}", s) for i, s in enumerate(rest, 1)]
    return roles


def stream_name(stream: Mapping[str, Any] | None) -> str:
    """``d3 s7`` (device 3, stream 7), or ``-`` for a role a trace does not have."""
    return "-" if stream is None else f"d{stream.get('device')} s{stream.get('stream')}"


def match_streams(per_trace: Sequence[Sequence[Mapping[str, Any]]]) -> list[tuple[str, list[Mapping[str, Any] | None]]]:
    """Streams of several traces lined up by role: ``(role, [stream or None per trace])`` in the
    order compute, communication 1.., other 1.. (a role in any trace is a row)."""
    tables = [dict(stream_roles(streams)) for streams in per_trace]
    names = list(dict.fromkeys(role for table in tables for role in table))

    def order(role: str) -> tuple[int, int]:
        kind, _, number = role.partition(" ")
        return ({"compute": 0, "communication": 1}.get(kind, 2), int(number or 0))

    return [(role, [t.get(role) for t in tables]) for role in sorted(names, key=order)]


def normalise_kernel_name(name: str) -> str:
    """A kernel name as compared across traces: lower case, runs of white space as one space,
    a leading ``void`` dropped. Template arguments are kept: without them every elementwise
    kernel of PyTorch has one name and unrelated workloads look alike."""
    text = " ".join(name.lower().split())
    return text[5:] if text.startswith("void ") else text


def kernel_shares(kernels: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """``normalised name -> share of summed kernel time`` from an analysis's listed kernels."""
    out: dict[str, float] = {}
    for k in kernels:
        name = normalise_kernel_name(str(k.get("name", "")))
        out[name] = out.get(name, 0.0) + float(k.get("share_of_summed") or 0.0)
    return out


def kernel_overlap(a: Mapping[str, float], b: Mapping[str, float]) -> float | None:
    """Weighted Jaccard index of two traces' kernel time by normalised name:
    ``Σ_n min(a_n, b_n) / Σ_n max(a_n, b_n)``, ``a_n`` being name n's share of trace A's summed
    kernel time. Time not listed (an analysis lists its top kernels) counts as names of its own
    trace only, so the value is a lower bound. 1: the same kernels in the same proportions; 0:
    no name in common. None when either trace lists no kernel time."""
    rest_a, rest_b = max(0.0, 1.0 - sum(a.values())), max(0.0, 1.0 - sum(b.values()))
    if not sum(a.values()) or not sum(b.values()):
        return None
    names = set(a) | set(b)
    shared = sum(min(a.get(n, 0.0), b.get(n, 0.0)) for n in names)
    either = sum(max(a.get(n, 0.0), b.get(n, 0.0)) for n in names) + rest_a + rest_b
    return shared / either if either else None
