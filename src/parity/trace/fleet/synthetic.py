"""A synthetic data-parallel job with known stragglers, simulated exactly, and its truth.

Each rank runs ``steps`` steps of ``segments`` segments: compute, then a collective. A
collective's kernel starts on each member when that member's compute ends (its *arrival*) and
ends on every member at ``max arrival + transfer``; the member then starts its next compute.
Injected (each optional):

- ``slow_rank``: its compute of every segment is ``slow_extra_ns`` longer;
- ``late_rank``: in every ``late_every``-th step (steps ``k`` with ``k % late_every ==
  late_every - 1``) its first segment's compute is ``late_ns`` longer (a host stall);
- ``slow_link``: ranks below the boundary and the others are two islands; a collective whose
  members span both transfers ``slow_link_factor`` times slower;
- ``group_size``: segments of even index (but the step's last) run an all_gather in
  sub-groups of ``group_size`` consecutive ranks (process groups "1", "2", ...); the others an
  all_reduce of the whole job (process group "0");
- ``heavy_rank``: the whole job's collectives but the step's last are uneven all_to_alls in
  which that rank sends ``heavy_factor`` times the others' elements (``size_imbalance =
  f·n / (n − 1 + f)``).

Compute durations carry a seeded jitter in ``[0, jitter_ns)``. Times are integer ns; the rank
files (:mod:`.synthetic_kineto`) write them in µs with three decimals, so nothing rounds away.
The truth is computed from the simulation by the definitions of ``docs/definitions.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from parity.model.errors import ParityError

ALL_REDUCE, ALL_GATHER, ALL_TO_ALL = "allreduce", "allgather", "all_to_allv"  # Kineto's "Collective name"
ELEMENT_BYTES = 4  # dtype Float


@dataclass(frozen=True)
class Simulation:
    """Every device op of the job: compute kernels and collectives, one row each (ns)."""

    ranks: int
    groups: dict[str, tuple[int, ...]]  # process group name -> member ranks
    # collectives: one row per (rank, op)
    c_rank: np.ndarray
    c_group: np.ndarray  # group name per row
    c_seq: np.ndarray
    c_op: np.ndarray
    c_start: np.ndarray
    c_end: np.ndarray
    c_in_nelems: np.ndarray
    c_out_nelems: np.ndarray
    c_step: np.ndarray
    # compute: one row per (rank, segment); split into kernels by the writer
    k_rank: np.ndarray
    k_start: np.ndarray
    k_end: np.ndarray
    k_step: np.ndarray
    first_step: int


@dataclass(frozen=True)
class FleetTruth:
    """What the analysis must find: per (group, seq) the skew, the last rank (-1 on a tie) and
    the transfer time; per rank how often it arrived last; the injected stragglers."""

    skew_ns: dict[tuple[str, int], int]
    size_imbalance: dict[tuple[str, int], float]
    last_rank: dict[tuple[str, int], int]
    comm_ns: dict[tuple[str, int], int]
    times_last: dict[int, int]
    stragglers: tuple[int, ...]
    paths: tuple[str, ...]
    simulation: Simulation


def _partition(ranks: int, group_size: int | None) -> dict[str, tuple[int, ...]]:
    groups = {"0": tuple(range(ranks))}
    if group_size:
        if ranks % group_size:
            raise ParityError(f"group size {group_size} does not divide {ranks} ranks; pick a divisor")
        for g in range(ranks // group_size):
            groups[str(g + 1)] = tuple(range(g * group_size, (g + 1) * group_size))
    return groups


def simulate(*, ranks: int, steps: int, segments: int = 3, compute_ns: int = 200_000,
             transfer_ns: int = 40_000, jitter_ns: int = 3_000, slow_rank: int | None = None,
             slow_extra_ns: int = 30_000, late_rank: int | None = None, late_ns: int = 120_000,
             late_every: int = 3, slow_link: int | None = None, slow_link_factor: float = 3.0,
             group_size: int | None = None, nelems: int = 4 * 1024 * 1024, heavy_rank: int | None = None,
             heavy_factor: int = 3, first_step: int = 1,
             seed: int = 0, start_ns: int = 1_700_000_000_000_000) -> Simulation:
    """Simulate the job of the module docstring (arguments in ns)."""
    if ranks < 2 or steps < 1 or segments < 1:
        raise ParityError(f"a synthetic fleet needs ranks >= 2, steps >= 1, segments >= 1, "
                          f"not {ranks}, {steps}, {segments}")
    rng = np.random.default_rng(seed)
    groups = _partition(ranks, group_size)
    sub = [name for name in groups if name != "0"]
    t = np.full(ranks, start_ns, dtype=np.int64)
    seq = {name: 0 for name in groups}
    c_rows, k_rows = [], []
    for step in range(steps):
        for k in range(segments):
            compute = compute_ns + rng.integers(0, max(jitter_ns, 1), size=ranks, dtype=np.int64)
            if slow_rank is not None:
                compute[slow_rank] += slow_extra_ns
            if late_rank is not None and k == 0 and step % late_every == late_every - 1:
                compute[late_rank] += late_ns
            arrival = t + compute
            k_rows.append((np.arange(ranks), t.copy(), arrival.copy(), np.full(ranks, step)))
            names = sub if (sub and k % 2 == 0 and k != segments - 1) else ["0"]
            for name in names:
                members = np.array(groups[name])
                span = slow_link is not None and members.min() < slow_link <= members.max()
                transfer = int(round(transfer_ns * (slow_link_factor if span else 1.0)))
                end = int(arrival[members].max()) + transfer
                op = ALL_REDUCE if name == "0" else ALL_GATHER
                in_n = np.full(len(members), nelems if op == ALL_REDUCE else nelems // len(members))
                if heavy_rank is not None and name == "0" and k != segments - 1:
                    op = ALL_TO_ALL  # uneven: the heavy rank sends heavy_factor times as much
                    in_n = np.where(members == heavy_rank, nelems * heavy_factor, nelems)
                # all_to_all: each member receives an even share of everything sent
                out_n = np.full(len(members), in_n.sum() // len(members) if op == ALL_TO_ALL else nelems)
                c_rows.append((members, name, seq[name], op, arrival[members], end, in_n, out_n, step))
                seq[name] += 1
                t[members] = end
    return _columns(ranks, groups, c_rows, k_rows, first_step)


def _columns(ranks, groups, c_rows, k_rows, first_step) -> Simulation:
    def cat(parts, dtype=None):
        return np.concatenate(parts).astype(dtype) if dtype else np.concatenate(parts)

    sizes = [len(r[0]) for r in c_rows]
    return Simulation(
        ranks=ranks, groups=groups,
        c_rank=cat([r[0] for r in c_rows], np.int64),
        c_group=np.repeat(np.array([r[1] for r in c_rows], dtype=object), sizes),
        c_seq=np.repeat(np.array([r[2] for r in c_rows], dtype=np.int64), sizes),
        c_op=np.repeat(np.array([r[3] for r in c_rows], dtype=object), sizes),
        c_start=cat([r[4] for r in c_rows], np.int64),
        c_end=np.repeat(np.array([r[5] for r in c_rows], dtype=np.int64), sizes),
        c_in_nelems=cat([r[6] for r in c_rows], np.int64), c_out_nelems=cat([r[7] for r in c_rows], np.int64),
        c_step=np.repeat(np.array([r[8] for r in c_rows], dtype=np.int64), sizes) + first_step,
        k_rank=cat([r[0] for r in k_rows], np.int64), k_start=cat([r[1] for r in k_rows], np.int64),
        k_end=cat([r[2] for r in k_rows], np.int64), k_step=cat([r[3] for r in k_rows], np.int64) + first_step,
        first_step=first_step,
    )  # fmt: skip


def truth_of(sim: Simulation, *, stragglers: tuple[int, ...], paths: tuple[str, ...] = ()) -> FleetTruth:
    """The expected figures of a simulation, one collective at a time (plain Python: the
    reference the vectorised reduce is checked against)."""
    skew, last, comm, times_last = {}, {}, {}, {r: 0 for r in range(sim.ranks)}
    imbalance = {}
    keys = list(zip(sim.c_group.tolist(), sim.c_seq.tolist()))
    rows: dict[tuple[str, int], list[int]] = {}
    for i, key in enumerate(keys):
        rows.setdefault(key, []).append(i)
    for key, idx in rows.items():
        arrivals = [int(sim.c_start[i]) for i in idx]
        latest = max(arrivals)
        skew[key] = latest - min(arrivals)
        comm[key] = min(int(sim.c_end[i] - sim.c_start[i]) for i in idx)
        sizes = [int(sim.c_in_nelems[i]) for i in idx]
        imbalance[key] = max(sizes) / (sum(sizes) / len(sizes))
        at_latest = [int(sim.c_rank[i]) for i, a in zip(idx, arrivals) if a == latest]
        last[key] = at_latest[0] if len(at_latest) == 1 else -1
        if last[key] >= 0:
            times_last[last[key]] += 1
    return FleetTruth(skew_ns=skew, size_imbalance=imbalance, last_rank=last, comm_ns=comm, times_last=times_last,
                      stragglers=tuple(sorted(stragglers)), paths=paths, simulation=sim)


def with_clock_offsets(sim: Simulation, offsets: dict[int, int]) -> Simulation:
    """The simulation as ranks whose clocks are off by ``offsets[rank]`` ns would record it
    (every time of that rank moved; the truth stays on the true clock)."""
    c_shift = np.zeros(len(sim.c_rank), dtype=np.int64)
    k_shift = np.zeros(len(sim.k_rank), dtype=np.int64)
    for rank, offset in offsets.items():
        c_shift[sim.c_rank == rank] = offset
        k_shift[sim.k_rank == rank] = offset
    return replace(sim, c_start=sim.c_start + c_shift, c_end=sim.c_end + c_shift,
                   k_start=sim.k_start + k_shift, k_end=sim.k_end + k_shift)


def write_fleet(out_dir: str | Path, *, ranks: int, steps: int, seed: int = 0, gzip: bool = True,
                clock_offsets: dict[int, int] | None = None, **shifts) -> FleetTruth:
    """Simulate a job (:func:`simulate`; ``shifts`` are its keyword arguments), write one
    Kineto trace per rank (``rank-NNNNNN.json.gz``) into ``out_dir`` and return the truth.
    ``clock_offsets``: ns added to every time a rank's file records (a host clock off by that
    much); the truth is the true clock's."""
    from parity.trace.fleet.synthetic_kineto import write_rank

    sim = simulate(ranks=ranks, steps=steps, seed=seed, **shifts)
    recorded = with_clock_offsets(sim, clock_offsets) if clock_offsets else sim
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = tuple(str(write_rank(out, recorded, rank, gzip=gzip)) for rank in range(ranks))
    stragglers = tuple(r for r in (shifts.get("slow_rank"), shifts.get("late_rank")) if r is not None)
    return truth_of(sim, stragglers=stragglers, paths=paths)
