"""Collectives matched across ranks by ``(group, seq)``, and what did not match.

``group`` is the process group (communicator) the trace records; ``seq`` the op's ordinal
among that rank's collectives of that group by the map's order (start time). Point-to-point
ops (send, recv) are no collectives: they are left out of the numbering, counted per rank and
reported. Members of a group: the ranks its ``group_ranks`` names where any rank recorded
them, else every rank that has an op of that group.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from parity.trace.fleet.figures import segment_ids

P2P = "p2p"
_ALIASES = {
    "allreduce": "all_reduce", "allgather": "all_gather", "allgatherbase": "all_gather",
    "allgatherintotensor": "all_gather", "allgatherintotensorcoalesced": "all_gather",
    "allgathercoalesced": "all_gather", "reducescatter": "reduce_scatter",
    "reducescatterbase": "reduce_scatter", "reducescattertensor": "reduce_scatter",
    "reducescattertensorcoalesced": "reduce_scatter", "alltoall": "all_to_all",
    "alltoallv": "all_to_all", "alltoallbase": "all_to_all", "alltoallvc": "all_to_all",
    "broadcast": "broadcast", "reduce": "reduce", "allreducecoalesced": "all_reduce",
    "send": P2P, "recv": P2P, "receive": P2P, "sendrecv": "sendrecv", "isend": P2P, "irecv": P2P,
    "batchisendirecv": P2P, "p2p": P2P, "barrier": "barrier", "gather": "gather", "scatter": "scatter",
}  # fmt: skip
_NOISE = re.compile(r"^(nccl:|nccl_|hcom_|hccl_|c10d::)|[_\s]")
EXAMPLES = 10  # examples kept per finding in fleet.json


def canonical_op(name: str) -> str:
    """nccl-tests' name of a recorded collective (``allreduce``, ``nccl:all_reduce``,
    ``hcom_allReduce_``, ``_allgather_base`` -> ``all_reduce`` / ``all_gather``), ``p2p`` for
    send and receive, else the name lowercased."""
    text = str(name).strip().lower()
    key = _NOISE.sub("", text)
    return _ALIASES.get(key, text)


def parse_ranks(text: str) -> tuple[int, ...]:
    """The ranks of a ``group_ranks`` text (``"[0, 1, 2]"``, ``"0,1"``); () when empty."""
    return tuple(sorted({int(x) for x in re.findall(r"-?\d+", str(text))}))


def is_truncated(text: str) -> bool:
    """Whether a recorded list was cut short: Kineto writes at most 30 entries of a list and
    then ``...`` (``"[0, 1, ..., 29, ...]"``), so a group of more ranks names only some."""
    return "..." in str(text)


@dataclass(frozen=True)
class Matched:
    """Rows of matched collectives sorted by ``(group, seq, rank)``, with their segments."""

    rank: np.ndarray
    group: np.ndarray  # code into ``groups`` (names sorted)
    seq: np.ndarray
    op: np.ndarray  # code into ``ops`` (canonical names, sorted)
    start_ns: np.ndarray
    end_ns: np.ndarray
    bytes: np.ndarray
    step: np.ndarray
    starts: np.ndarray  # first row of each (group, seq)
    seg: np.ndarray
    groups: tuple[str, ...]
    ops: tuple[str, ...]
    members: dict[str, tuple[int, ...]]
    p2p_by_rank: dict[int, int] = field(default_factory=dict)
    findings: dict = field(default_factory=dict)

    @property
    def segments(self) -> int:
        return len(self.starts)


def _codes(column) -> tuple[np.ndarray, list[str]]:
    """Codes into the sorted distinct values of a pyarrow string (or dictionary) column, one
    chunk at a time (each rank's file has its own dictionary); a null reads as ""."""
    import pyarrow as pa

    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    index: dict[str, int] = {}
    parts = []
    for chunk in chunks:
        if chunk.null_count or not pa.types.is_dictionary(chunk.type):
            import pyarrow.compute as pc  # only here: a map file written without dictionaries

            chunk = pc.dictionary_encode(pc.fill_null(chunk.cast(pa.string()), ""))
        local = np.array([index.setdefault(v, len(index)) for v in chunk.dictionary.to_pylist()] or [0],
                         dtype=np.int32)
        parts.append(local[chunk.indices.to_numpy(zero_copy_only=False)] if len(chunk) else np.zeros(0, np.int32))
    names = sorted(index)
    remap = np.empty(max(len(index), 1), dtype=np.int32)
    remap[[index[n] for n in names]] = np.arange(len(names), dtype=np.int32)
    codes = np.concatenate(parts) if parts else np.zeros(0, np.int32)
    return remap[codes] if len(codes) else codes, names


def _column(table, name: str, dtype=np.int64) -> np.ndarray:
    return table.column(name).to_numpy().astype(dtype, copy=False)


def order_by(*keys: np.ndarray) -> np.ndarray:
    """The order sorting rows by ``keys`` (most significant first, non-negative ints): one
    argsort of a mixed-radix int64 key when it fits, else a lexsort."""
    if not len(keys[0]):
        return np.zeros(0, dtype=np.int64)
    spans = [int(k.max()) + 1 for k in keys]
    if min(int(k.min()) for k in keys) >= 0 and float(np.prod([float(x) for x in spans])) < 2.0**62:
        key = np.zeros(len(keys[0]), dtype=np.int64)
        for k, span in zip(keys, spans):
            key *= span
            key += k
        return np.argsort(key, kind="stable")
    return np.lexsort(tuple(reversed(keys)))


def renumber(rank: np.ndarray, group: np.ndarray, map_seq: np.ndarray) -> np.ndarray:
    """``seq``: each op's ordinal within its ``(rank, group)`` in the map's order (its seq);
    the map's own numbering when that already counts 0, 1, 2, ... without gaps."""
    if not len(rank):
        return map_seq.astype(np.int64)
    by_rank = order_by(rank, group, map_seq)
    key_r, key_g = rank[by_rank], group[by_rank]
    new_run = np.empty(len(rank), dtype=bool)
    new_run[0] = True
    np.not_equal(key_r[1:], key_r[:-1], out=new_run[1:])
    new_run[1:] |= key_g[1:] != key_g[:-1]
    del key_r, key_g
    run_start = np.maximum.accumulate(np.where(new_run, np.arange(len(rank)), 0))
    seq = np.empty(len(rank), dtype=np.int64)
    seq[by_rank] = np.arange(len(rank)) - run_start
    return seq


def match_collectives(table, known_ranks: np.ndarray) -> Matched:
    """Match a fleet's map ``collectives`` rows (a pyarrow table) across ranks (module docstring)."""
    rank = _column(table, "rank", np.int32)
    group, groups = _codes(table.column("group"))
    op_raw, op_names = _codes(table.column("op"))
    canon = [canonical_op(n) for n in op_names]
    ops = sorted(set(canon))
    op = np.array([ops.index(c) for c in canon] or [0], dtype=np.int32)[op_raw] if len(op_raw) else op_raw
    p2p = op == (ops.index(P2P) if P2P in ops else -1)
    p2p_ranks, p2p_counts = np.unique(rank[p2p], return_counts=True)
    members, disagree = _members(table, group, rank, groups)

    keep = np.flatnonzero(~p2p)
    del p2p
    rank_k, group_k = rank[keep], group[keep]
    seq = renumber(rank_k, group_k, _column(table, "seq")[keep])
    order = order_by(group_k, seq, rank_k)
    rows = keep[order]
    g, s = group_k[order], seq[order]
    starts = (np.flatnonzero(np.r_[True, (g[1:] != g[:-1]) | (s[1:] != s[:-1])]) if len(rows)
              else np.zeros(0, np.int64))  # fmt: skip
    matched = Matched(
        rank=rank[rows], group=g, seq=s, op=op[rows], start_ns=_column(table, "start_ns")[rows],
        end_ns=_column(table, "end_ns")[rows], bytes=_column(table, "bytes")[rows],
        step=_column(table, "step")[rows], starts=starts, seg=segment_ids(starts, len(rows)),
        groups=tuple(groups), ops=tuple(ops), members=members,
        p2p_by_rank=dict(zip(p2p_ranks.tolist(), p2p_counts.tolist())),
    )  # fmt: skip
    findings = match_findings(matched, known_ranks)
    if disagree:
        findings["group_ranks_disagree"] = {"count": len(disagree), "groups": disagree[:EXAMPLES]}
    return Matched(**{**matched.__dict__, "findings": findings})


def _distinct_pairs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The distinct ``(a, b)`` pairs of two non-negative int columns, as an (n, 2) array."""
    if not len(a):
        return np.zeros((0, 2), dtype=np.int64)
    span = int(b.max()) + 1
    key = np.unique(a.astype(np.int64) * span + b)
    return np.stack([key // span, key % span], axis=1)


def _members(table, group: np.ndarray, rank: np.ndarray, groups: list[str]):
    """Per group name, its member ranks; and the groups whose ranks recorded different lists.

    A group's members are the ranks its recorded lists name; where a list was cut short
    (:func:`is_truncated`), those it names together with every rank that has an op of the
    group; where none was recorded, every rank that has an op of the group."""
    ranks_code, ranks_texts = _codes(table.column("group_ranks"))
    parsed = [parse_ranks(t) for t in ranks_texts]
    cut = [is_truncated(t) for t in ranks_texts]
    recorded: dict[int, set[tuple[int, ...]]] = {}
    truncated: set[int] = set()
    for g, r in _distinct_pairs(group, ranks_code).tolist():
        if parsed[r] and cut[r]:
            truncated.add(g)
        if parsed[r]:
            recorded.setdefault(g, set()).add(parsed[r])
    seen: dict[int, list[int]] = {}
    if len(recorded) < len(groups) or truncated:
        for g, r in _distinct_pairs(group, rank).tolist():
            seen.setdefault(g, []).append(r)
    members, disagree = {}, []
    for code, name in enumerate(groups):
        lists = recorded.get(code)
        if lists and code in truncated:
            members[name] = tuple(sorted(set().union(*lists, seen.get(code, []))))
        elif lists:
            members[name] = tuple(sorted(set().union(*lists)))
            if len(lists) > 1:
                disagree.append(name)
        else:
            members[name] = tuple(seen.get(code, []))
    return members, disagree


def match_findings(m: Matched, known_ranks: np.ndarray) -> dict:
    """What did not match: ops whose members recorded different op names (``mismatched_op``),
    ops fewer ranks recorded than their group has (``incomplete``), ranks a group names that
    have no trace (``ranks_missing``), point-to-point ops (``p2p_not_matched``)."""
    findings: dict = {}
    n = m.segments
    if n:
        present = np.bincount(m.seg, minlength=n)
        differs = np.minimum.reduceat(m.op, m.starts) != np.maximum.reduceat(m.op, m.starts)
        size = np.array([len(m.members[name]) for name in m.groups], dtype=np.int64)[m.group[m.starts]]
        short = np.flatnonzero(present < size)
        if differs.any():
            idx = np.flatnonzero(differs)
            findings["mismatched_op"] = {"count": int(len(idx)), "examples": [
                {"group": m.groups[m.group[m.starts[c]]], "seq": int(m.seq[m.starts[c]]),
                 "ops": [m.ops[o] for o in np.unique(m.op[m.seg == c]).tolist()]} for c in idx[:EXAMPLES]]}  # fmt: skip
        if len(short):
            examples = []
            for c in short[:EXAMPLES].tolist():
                name = m.groups[m.group[m.starts[c]]]
                have = set(m.rank[m.seg == c].tolist())
                examples.append({"group": name, "seq": int(m.seq[m.starts[c]]), "ranks": int(present[c]),
                                 "members": int(size[c]),
                                 "missing": [r for r in m.members[name] if r not in have][:8]})
            findings["incomplete"] = {"count": int(len(short)), "examples": examples}
    named = sorted(set().union(*m.members.values())) if m.members else []
    missing = sorted(set(named) - set(np.asarray(known_ranks).tolist()))
    if missing:
        findings["ranks_missing"] = {"count": len(missing), "ranks": missing[:64]}
    if m.p2p_by_rank:
        findings["p2p_not_matched"] = {"count": int(sum(m.p2p_by_rank.values())),
                                       "ranks": len(m.p2p_by_rank)}
    return findings
