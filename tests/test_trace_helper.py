"""The kept helper process of the two-process trace read (readers/helper.py)."""

from __future__ import annotations

import gzip
import json
import multiprocessing
import os
import signal
import threading
from pathlib import Path

import numpy as np
import pytest

from parity.trace.readers import halves, helper
from parity.trace.readers.kineto import read_kineto
from parity.trace.table import ActivityTable

KEY = ("a key",)


def _square(x: int) -> int:
    return x * x


def _leave(code: int) -> None:
    os._exit(code)


def _trace(tmp_path: Path, n: int = 2000) -> Path:
    events = [{"ph": "X", "cat": "kernel", "name": f"k{i % 5}", "pid": 0, "tid": 7, "ts": 10.0 * i,
               "dur": 5.0, "args": {"device": 0, "stream": 7, "correlation": i}} for i in range(n)]  # fmt: skip
    path = tmp_path / "rank0.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    return path


@pytest.fixture()
def two_processes(monkeypatch: pytest.MonkeyPatch, halves_outcomes: list[bool]) -> list[bool]:
    """Every file read in two processes when a helper serves; the outcome of each try."""
    monkeypatch.setattr(halves, "MIN_BYTES", 0)
    return halves_outcomes


def _same(a: ActivityTable, b: ActivityTable) -> None:
    for column in ActivityTable.COLUMNS:
        assert np.array_equal(getattr(a, column), getattr(b, column)), column
    assert a.names == b.names and a.meta == b.meta


def _pid() -> int | None:
    kept = helper._helper
    return kept.process.pid if kept is not None else None


def test_a_burst_of_small_reads_forks_one_helper_at_the_second(tmp_path: Path, two_processes: list[bool]):
    path = _trace(tmp_path)
    helper.retire()
    helper._last_asked = None  # no read before this burst
    first = read_kineto(path)  # the first small read in a while: one process, no fork
    assert two_processes == [False] and _pid() is None
    second = read_kineto(path)  # the second within REUSE_SECONDS: a helper is forked and used
    pid = _pid()
    third = read_kineto(path)
    assert two_processes == [False, True, True]
    assert pid is not None and _pid() == pid  # the same helper served the third read
    _same(first, second)
    _same(first, third)


def test_a_large_file_forks_a_helper_at_once(tmp_path: Path, two_processes: list[bool], monkeypatch):
    monkeypatch.setattr(halves, "FORK_FIRST_BYTES", 0)
    helper.retire()
    helper._last_asked = None
    read_kineto(_trace(tmp_path))
    assert two_processes == [True] and _pid() is not None


def test_the_helper_leaves_when_idle(monkeypatch):
    monkeypatch.setattr(helper, "IDLE_SECONDS", 0.2)  # read by the helper when it is forked
    kept = helper.acquire(_square, KEY, fork_first=True)
    kept.ask(7)
    assert kept.answer() == 49
    helper.release(kept, answered=True)
    kept.process.join(10)
    assert kept.process.exitcode == 0


def test_an_old_helper_is_let_go_and_another_forked(monkeypatch):
    first = helper.acquire(_square, KEY, fork_first=True)
    helper.release(first, answered=True)
    assert helper.acquire(_square, KEY, fork_first=False) is first  # reused while recent
    helper.release(first, answered=True)
    monkeypatch.setattr(helper, "REUSE_SECONDS", 0.0)  # now too old to ask
    assert helper.acquire(_square, KEY, fork_first=False) is None  # and no burst: one process
    assert first.process.join(5) is None and first.process.exitcode == 0  # let go: end of file
    second = helper.acquire(_square, KEY, fork_first=True)
    assert second is not first and second.process.pid != first.process.pid
    second.ask(3)
    assert second.answer() == 9
    helper.release(second, answered=True)


def test_other_work_gets_its_own_helper():
    first = helper.acquire(_square, KEY, fork_first=True)
    helper.release(first, answered=True)
    other = helper.acquire(abs, ("another key",), fork_first=True)
    assert other is not first
    other.ask(-4)
    assert other.answer() == 4
    helper.release(other, answered=True)


def test_an_unanswered_request_stops_the_helper():
    kept = helper.acquire(_square, KEY, fork_first=True)
    kept.ask(5)  # the reading process's half fails before it reads the answer
    helper.release(kept, answered=False)
    assert kept.process.exitcode == -signal.SIGTERM and helper._helper is None
    fresh = helper.acquire(_square, KEY, fork_first=True)
    fresh.ask(5)
    assert fresh.answer() == 25  # not the stale answer of the stopped one
    helper.release(fresh, answered=True)


def test_a_dead_helper_is_end_of_file_then_replaced(tmp_path: Path, two_processes: list[bool], monkeypatch):
    kept = helper.acquire(_leave, KEY, fork_first=True)
    kept.ask(3)
    with pytest.raises(EOFError):
        kept.answer()
    helper.release(kept, answered=False)
    # a helper killed while idle is noticed before asking: the read forks a new one
    monkeypatch.setattr(halves, "FORK_FIRST_BYTES", 0)
    path = _trace(tmp_path)
    one = read_kineto(path)
    os.kill(_pid(), signal.SIGKILL)
    helper._helper.process.join(10)
    two = read_kineto(path)
    assert two_processes == [True, True]
    _same(one, two)


def test_a_failing_half_gives_none_and_keeps_the_helper():
    kept = helper.acquire(_square, KEY, fork_first=True)
    kept.ask("not a number")  # the work raises: the helper answers None and waits on
    assert kept.answer() is None
    kept.ask(6)
    assert kept.answer() == 36
    helper.release(kept, answered=True)


def test_a_busy_helper_is_not_shared_between_threads():
    kept = helper.acquire(_square, KEY, fork_first=True)
    seen = []
    thread = threading.Thread(target=lambda: seen.append(helper.acquire(_square, KEY, fork_first=True)))
    thread.start()
    thread.join()
    assert seen == [None]  # the other thread reads in one process
    helper.release(kept, answered=True)
    assert helper.acquire(_square, KEY, fork_first=True) is kept
    helper.release(kept, answered=True)


def test_ctrl_c_is_left_to_the_reading_process():
    kept = helper.acquire(_square, KEY, fork_first=True)
    kept.ask(1)
    assert kept.answer() == 1  # the helper is waiting in its loop
    os.kill(kept.process.pid, signal.SIGINT)
    kept.process.join(0.3)  # time for a KeyboardInterrupt, had it one
    kept.ask(8)
    assert kept.answer() == 64
    helper.release(kept, answered=True)


def _in_a_forked_child(conn, parents_pid: int) -> None:
    kept = helper.acquire(_square, KEY, fork_first=True)
    kept.ask(9)
    conn.send((kept.process.pid != parents_pid, kept.answer()))
    helper.release(kept, answered=True)
    helper.retire()


def test_a_forked_process_does_not_use_its_parents_helper():
    kept = helper.acquire(_square, KEY, fork_first=True)
    helper.release(kept, answered=True)
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_in_a_forked_child, args=(send, kept.process.pid))
    child.start()
    assert receive.poll(30), "the child got no answer: it asked its parent's helper"
    assert receive.recv() == (True, 81)
    child.join(10)
    assert child.exitcode == 0
    kept.ask(2)  # the parent's helper saw nothing of the child's requests
    assert kept.answer() == 4
    helper.release(kept, answered=True)
