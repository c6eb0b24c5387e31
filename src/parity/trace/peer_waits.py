"""Device tasks that only wait for a peer rank: HCCL's ``Notify Wait`` (Ascend), which moves no
data. Its time in a collective is the rank waiting for a notify from the others (their arrival,
their progress, a first collective's link set-up), not a transfer a faster link would shorten;
the analysis reports it beside communication and the what-if never scales it.

A ``Notify Wait`` that completes an RDMA transfer is the transfer's own time and does not count:
one whose two tasks before it on its stream are ``RDMASend``, or whose four are ``RDMASend,
RDMASend, Notify Wait, RDMASend`` (RDMA's two task patterns; the vendor's own split of wait and
transit time counts them the same way).
"""

from __future__ import annotations

import numpy as np

from parity.trace.table import ActivityTable


def task_word(text: object) -> str:
    """A task type or name folded for matching: ``Notify_Wait``, ``Notify Wait`` -> ``notifywait``."""
    return str(text).replace("_", "").replace(" ", "").lower()


def peer_wait_mask(table: ActivityTable) -> np.ndarray:
    """Per row of ``table``, whether it is a device task that only waits for a peer (module
    docstring): by its task type where it has one, else its name."""
    out = np.zeros(len(table), dtype=bool)
    if not len(table) or not table.names:
        return out
    words = [task_word(n) for n in table.names]  # each distinct name once
    is_wait = np.array([w == "notifywait" for w in words])[table.name_id]
    is_rdma = np.array([w == "rdmasend" for w in words])[table.name_id]
    types = table.extra.get("task_type")
    if types is not None:  # a row's task type, where it has one, decides over its name
        values = types.tolist()
        typed = {t: task_word(t) for t in set(values) if isinstance(t, str)}
        n = len(values)
        has = np.fromiter(map(typed.__contains__, values), bool, n)
        waits = {t for t, w in typed.items() if w == "notifywait"}
        sends = {t for t, w in typed.items() if w == "rdmasend"}
        is_wait = np.where(has, np.fromiter(map(waits.__contains__, values), bool, n), is_wait)
        is_rdma = np.where(has, np.fromiter(map(sends.__contains__, values), bool, n), is_rdma)
    device = table.device_mask()
    wait = device & is_wait
    if not wait.any():
        return out
    rows = np.flatnonzero(device)
    code = np.where(wait[rows], "N", np.where(is_rdma[rows], "R", "O"))
    rank, dev, stream = table.rank[rows], table.device[rows], table.stream[rows]
    order = np.lexsort((table.start_ns[rows], stream, dev, rank))  # each stream's tasks in start order
    seq, lane = code[order], (rank[order], dev[order], stream[order])

    def back(k: int) -> np.ndarray:
        """The code of the task ``k`` before each on its stream ("O" where there is none)."""
        out_k = np.full(len(seq), "O", dtype=seq.dtype)
        if k < len(seq):
            same = (lane[0][k:] == lane[0][:-k]) & (lane[1][k:] == lane[1][:-k]) & (lane[2][k:] == lane[2][:-k])
            out_k[k:] = np.where(same, seq[:-k], "O")
        return out_k

    one, two, three, four = back(1), back(2), back(3), back(4)
    after_rdma = ((two == "R") & (one == "R")) | ((four == "R") & (three == "R") & (two == "N") & (one == "R"))
    out[rows[order]] = (seq == "N") & ~after_rdma
    return out
