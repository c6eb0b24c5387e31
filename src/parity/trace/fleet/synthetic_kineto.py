"""One rank of a :class:`~parity.trace.fleet.synthetic.Simulation` as a PyTorch profiler
(Kineto) trace, shaped like a real one (``distributedInfo`` with ``pg_config``, ``ProfilerStep#N``
spans, ``cpu_op`` calls, ``cudaLaunchKernel`` runtime calls with correlation ids and flow
events, compute kernels on stream 7, NCCL kernels on one stream per process group with the
``Collective name`` ... ``Process Group Ranks`` args PyTorch records).

Every time is written from integer ns as µs with three decimals, so a reader gets the
simulation's ns back exactly. The host launches each kernel :data:`LAUNCH_NS` before it starts.
"""

from __future__ import annotations

import gzip as gz
import json
from pathlib import Path

import numpy as np

LAUNCH_NS = 5_000  # a kernel starts this long after its launch call begins
LAUNCH_CALL_NS = 2_000  # duration of the cudaLaunchKernel call
PID, TID = 4242, 4242  # host process and main thread
COMPUTE_STREAM = 7
_KERNELS = ("ampere_sgemm_128x64_tn",
            "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>")
_NCCL = {"allreduce": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
         "allgather": "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
         "all_to_allv": "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)"}  # fmt: skip
_RECORD = {"allreduce": "nccl:all_reduce", "allgather": "nccl:all_gather", "all_to_allv": "nccl:all_to_all"}


def us(ns: int) -> str:
    """Integer ns as Kineto's µs text with three decimals: 1234567891 -> "1234567.891"."""
    ns = int(ns)
    return f"{'-' if ns < 0 else ''}{abs(ns) // 1000}.{abs(ns) % 1000:03d}"


def _event(ph: str, cat: str, name: str, pid, tid, ts: int, dur: int | None, args: dict | None) -> str:
    parts = [f'"ph": "{ph}"', f'"cat": "{cat}"', f'"name": {json.dumps(name)}', f'"pid": {json.dumps(pid)}',
             f'"tid": {json.dumps(tid)}', f'"ts": {us(ts)}']
    if dur is not None:
        parts.append(f'"dur": {us(dur)}')
    if args is not None:
        parts.append(f'"args": {json.dumps(args)}')
    return "{" + ", ".join(parts) + "}"


def _flow(corr: int, launch_ts: int, kernel_ts: int, device: int, stream: int) -> list[str]:
    return [f'{{"ph": "s", "id": {corr}, "pid": {PID}, "tid": {TID}, "ts": {us(launch_ts)}, "cat": "ac2g", '
            f'"name": "ac2g"}}',
            f'{{"ph": "f", "id": {corr}, "pid": {device}, "tid": {stream}, "ts": {us(kernel_ts)}, "cat": "ac2g", '
            f'"name": "ac2g", "bp": "e"}}']  # fmt: skip


class _Ids:
    def __init__(self) -> None:
        self.corr = 1000
        self.ext = 1

    def next(self) -> tuple[int, int]:
        self.corr += 1
        self.ext += 1
        return self.corr, self.ext


def _launched(ids: _Ids, *, op: str, kernel: str, start: int, end: int, device: int, stream: int,
              kernel_args: dict | None = None, op_args: dict | None = None) -> list[str]:
    """A cpu_op calling cudaLaunchKernel, the kernel it launched and their flow arrows."""
    corr, ext = ids.next()
    launch = start - LAUNCH_NS
    events = [
        _event("X", "cpu_op", op, PID, TID, launch - 500, LAUNCH_CALL_NS + 1000,
               {"External id": ext, **(op_args or {})}),
        _event("X", "cuda_runtime", "cudaLaunchKernel", PID, TID, launch, LAUNCH_CALL_NS,
               {"External id": ext, "cbid": 211, "correlation": corr}),
        _event("X", "kernel", kernel, device, stream, start, end - start,
               {"External id": ext, "queued": 0, "device": device, "context": 1, "stream": stream,
                "correlation": corr, "grid": [108, 1, 1], "block": [256, 1, 1], **(kernel_args or {})}),
    ]  # fmt: skip
    return events + _flow(corr, launch, start, device, stream)


TRUNCATE = 30  # Kineto writes at most this many entries of a list, then "..."


def format_list(values) -> str:
    """A list as Kineto writes it: ``"[0, 1, 2]"``, cut after 30 entries: ``"[0, ..., 29, ...]"``."""
    values = list(values)
    head = ", ".join(map(str, values[:TRUNCATE]))
    return f"[{head}, ...]" if len(values) > TRUNCATE else f"[{head}]"


def _splits(sim, row: int, group_ranks: tuple[int, ...]) -> tuple[str, str]:
    """All-to-all's per-peer element counts sent and received (each spread evenly over the
    peers), "[]" for other ops."""
    if sim.c_op[row] != "all_to_allv":
        return "[]", "[]"
    n = len(group_ranks)
    send = [int(sim.c_in_nelems[row]) // n] * n
    receive = [int(sim.c_out_nelems[row]) // n] * n
    return format_list(send), format_list(receive)


def _comm_args(sim, row: int, group_ranks: tuple[int, ...]) -> dict:
    in_split, out_split = _splits(sim, row, group_ranks)
    return {"Collective name": str(sim.c_op[row]), "In msg nelems": int(sim.c_in_nelems[row]),
            "Out msg nelems": int(sim.c_out_nelems[row]), "Group size": len(group_ranks), "dtype": "Float",
            "In split size": in_split, "Out split size": out_split, "Process Group Name": str(sim.c_group[row]),
            "Process Group Description": "default_pg" if sim.c_group[row] == "0" else f"group_{sim.c_group[row]}",
            "Process Group Ranks": format_list(group_ranks)}  # fmt: skip


def rank_events(sim, rank: int) -> list[str]:
    """Every trace event of ``rank``, as JSON texts."""
    device = rank % 8
    ids = _Ids()
    stream_of = {name: 20 + 4 * i for i, name in enumerate(sim.groups)}
    events, launches = [], []  # launches: (first launch ns, step)
    kernels = np.flatnonzero(sim.k_rank == rank)
    comms = np.flatnonzero(sim.c_rank == rank)
    items = sorted([(int(sim.k_start[i]), 0, i) for i in kernels] + [(int(sim.c_start[i]), 1, i) for i in comms])
    for start, is_comm, i in items:
        if is_comm:
            name = str(sim.c_group[i])
            args = _comm_args(sim, i, sim.groups[name])
            events += _launched(ids, op=_RECORD[str(sim.c_op[i])],
                                kernel=_NCCL[str(sim.c_op[i])], start=start, end=int(sim.c_end[i]), device=device,
                                stream=stream_of[name], kernel_args=args, op_args=args)  # fmt: skip
            launches.append((start - LAUNCH_NS, int(sim.c_step[i])))
        else:
            end = int(sim.k_end[i])
            half = start + (end - start) // 2
            events += _launched(ids, op="aten::mm", kernel=_KERNELS[0], start=start, end=half, device=device,
                                stream=COMPUTE_STREAM)
            events += _launched(ids, op="aten::gelu", kernel=_KERNELS[1], start=half, end=end, device=device,
                                stream=COMPUTE_STREAM)
            launches.append((start - LAUNCH_NS, int(sim.k_step[i])))
    return _step_spans(launches, ids) + events


def _step_spans(launches: list[tuple[int, int]], ids: _Ids) -> list[str]:
    """``ProfilerStep#N`` spans: from 1 µs before the step's first launch to 1 µs before the
    next step's (the last: 10 µs after its last launch)."""
    first: dict[int, int] = {}
    last = 0
    for ts, step in launches:
        first.setdefault(step, ts - 1_000)
        last = max(last, ts + LAUNCH_CALL_NS + 10_000)
    steps = sorted(first)
    spans = []
    for j, step in enumerate(steps):
        end = first[steps[j + 1]] if j + 1 < len(steps) else last
        spans.append(_event("X", "user_annotation", f"ProfilerStep#{step}", PID, TID, first[step],
                            end - first[step], {"External id": ids.next()[1], "Record function id": 1}))
    return spans


def _header(sim, rank: int) -> dict:
    pg = [{"pg_name": name, "pg_desc": "default_pg" if name == "0" else f"group_{name}",
           "backend_config": "cuda:nccl", "pg_size": len(members), "ranks": list(members)}
          for name, members in sim.groups.items()]  # fmt: skip
    return {"schemaVersion": 1,
            "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045231616,
                                  "computeMajor": 9, "computeMinor": 0, "numSms": 132}],
            "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": sim.ranks, "pg_count": len(pg),
                                "pg_config": pg, "nccl_version": "2.21.5"},
            "traceName": f"rank-{rank:06d}.json", "displayTimeUnit": "ms",
            "baseTimeNanoseconds": 1_700_000_000_000_000_000}  # fmt: skip


def _metadata(sim, rank: int) -> list[str]:
    device = rank % 8
    streams = [COMPUTE_STREAM] + [20 + 4 * i for i in range(len(sim.groups))]
    meta = [(PID, 0, "process_name", {"name": "python3.11"}), (PID, 0, "process_labels", {"labels": "CPU"}),
            (device, 0, "process_name", {"name": "python3.11"}),
            (device, 0, "process_labels", {"labels": f"GPU {device}"}),
            (PID, TID, "thread_name", {"name": f"thread {TID} (python3)"})]  # fmt: skip
    meta += [(device, s, "thread_name", {"name": f"stream {s} "}) for s in streams]
    t0 = int(sim.k_start.min()) - 100_000
    return [f'{{"name": "{n}", "ph": "M", "ts": {us(t0)}, "pid": {p}, "tid": {t}, "args": {json.dumps(a)}}}'
            for p, t, n, a in meta]


def write_rank(out: Path, sim, rank: int, *, gzip: bool = True) -> Path:
    """Write ``rank``'s trace as ``out/rank-NNNNNN.json(.gz)``; returns its path."""
    header = _header(sim, rank)
    body = ",\n".join(_metadata(sim, rank) + rank_events(sim, rank))
    head = json.dumps(header)[:-1]
    text = f'{head}, "traceEvents": [\n{body}\n]}}\n'
    path = out / f"rank-{rank:06d}.json{'.gz' if gzip else ''}"
    if gzip:
        with gz.open(path, "wt", compresslevel=3) as fh:
            fh.write(text)
    else:
        path.write_text(text)
    return path
