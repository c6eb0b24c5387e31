"""The second process of the two-process read (:mod:`.halves`), kept between files.

Forking a child for each file costs a few milliseconds, and a fresh child then pays again for
first touching its memory; on a trace of a few MB that is about what reading half of it in
parallel saves. So the child is kept: forked for a large file or the second of a burst of
reads (:func:`acquire`), it answers a request (a file and where its second half starts) with
that half's payload, then waits for the next one. It leaves after :data:`IDLE_SECONDS`
without a request, at end of file on its pipe (the reading process ended or let it go), or
when terminated. The reading process asks it only within :data:`REUSE_SECONDS` of its last
answer, so a request never meets a helper that is leaving; an older helper is let go and a
new one forked. (A process forked from the reading process later, such as a pool worker,
holds a copy of the pipe's end until it exits; the idle timeout ends the helper all the same.)

A forked process shares the reading process's memory as it was at the fork (copy on write):
pages the reading process writes afterwards are copied. That is why the helper does not
outlive a burst of reads.

One thread at a time uses the helper; another thread asking meanwhile gets None and reads
in one process. A process forked from the reading process (``multiprocessing``, or the helper
itself) never uses the helper of its parent.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)
IDLE_SECONDS = 10.0  # the helper leaves after this long without a request
REUSE_SECONDS = IDLE_SECONDS / 2  # the reading process asks it only this soon after its last answer


class Helper:
    """One kept child process answering each request ``args`` with ``work(*args)``.

    ``key`` says what work it was forked for: :func:`acquire` reuses it only for the same
    key (compared item by item by identity).
    """

    def __init__(self, work: Callable, key: tuple) -> None:
        context = multiprocessing.get_context("fork")
        self.key = key
        self.conn, theirs = context.Pipe()
        self.process = context.Process(target=_serve, args=(theirs, self.conn, work), daemon=True)
        try:
            self.process.start()  # AssertionError in a daemon process, OSError out of processes
        except BaseException:
            self.conn.close()
            raise
        finally:
            theirs.close()
        self.owner = os.getpid()
        self.used = time.monotonic()
        self.busy = False

    def serves(self, key: tuple) -> bool:
        """Whether this process may send it a request for ``key`` now."""
        return (
            not self.busy
            and len(key) == len(self.key) and all(a is b for a, b in zip(key, self.key))
            and time.monotonic() - self.used < REUSE_SECONDS
            and self.process.is_alive()
        )  # fmt: skip

    def ask(self, *args) -> None:
        self.conn.send(args)

    def answer(self):
        """The answer to the last request (EOFError when the helper has gone)."""
        reply = self.conn.recv()
        self.used = time.monotonic()
        return reply

    def close(self, *, stop: bool = False) -> None:
        """Let the helper go: it leaves at end of file on its pipe (now, when idle); ``stop``
        terminates it, for a helper that may still be working on a request."""
        self.conn.close()
        if stop:
            self.process.terminate()
            self.process.join()
        else:
            self.process.join(0)  # reaped now if gone, else by the next fork


_lock = threading.Lock()
_helper: Helper | None = None
_last_asked: float | None = None  # when a read last asked for a helper (time.monotonic)


def acquire(work: Callable, key: tuple, *, fork_first: bool) -> Helper | None:
    """A helper for ``key``, marked busy (hand it back with :func:`release`), or None: read in
    one process then.

    The kept helper when it serves; else a newly forked one, but only when ``fork_first`` (the
    file is large enough to pay for the fork by itself) or when another read asked within
    :data:`REUSE_SECONDS` (a burst of reads, which the kept helper will serve). A first small
    read in a while is left to one process: just after a fork the reading process pays a
    copy for each page it writes, which on a trace of a few MB costs more than the helper
    saves. None as well when another thread is using the helper or no process can be forked.
    """
    global _helper, _last_asked
    with _lock:
        now = time.monotonic()
        burst = _last_asked is not None and now - _last_asked < REUSE_SECONDS
        _last_asked = now
        helper = _helper
        if helper is not None and helper.owner == os.getpid():
            if helper.serves(key):
                helper.busy = True
                return helper
            if helper.busy:
                return None
            helper.close()
        _helper = None
        if not (fork_first or burst):
            return None
        try:
            helper = Helper(work, key)
        except (AssertionError, OSError) as exc:
            log.debug("no helper process: %s", exc)
            return None
        helper.busy = True
        _helper = helper
        return helper


def release(helper: Helper, *, answered: bool) -> None:
    """Hand ``helper`` back. When its last request was not answered (the reading process's own
    half failed first), it may still be working on it, so it is stopped and dropped."""
    global _helper
    with _lock:
        helper.busy = False
        if not answered:
            helper.close(stop=True)
            if _helper is helper:
                _helper = None


def retire() -> None:
    """Let the kept helper go now instead of at its idle timeout."""
    global _helper
    with _lock:
        helper, _helper = _helper, None
        if helper is not None and helper.owner == os.getpid():
            helper.close(stop=helper.busy)


def _serve(conn, theirs, work: Callable) -> None:
    """The helper's loop: answer requests until idle, end of file or a broken pipe."""
    theirs.close()  # the reading process's end: held open here, its exit would never show
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the reading process to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # whatever handler the reading process set
    try:
        while conn.poll(IDLE_SECONDS):
            args = conn.recv()
            try:
                reply = work(*args)
            except Exception:  # noqa: BLE001 - None asks the reading process to read alone
                reply = None
            conn.send(reply)
            del reply  # freed while the reading process merges, not before the next request
    except (EOFError, OSError):
        pass
    # nothing to flush or clean up; a normal exit would first free every object left
    os._exit(0)
