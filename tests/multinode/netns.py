"""Test hosts on one machine: network namespaces joined by veth pairs through a bridge.

Each node is a network namespace with one interface, :data:`IFNAME`, whose address is in the
benchmarking range 198.18.0.0/15 (RFC 2544: never routed, used here only inside the namespaces
this module makes). The bridge lives in a namespace of its own, so nothing is added to the root
namespace and deleting that namespace removes every link of the set. Traffic between two ranks of
one node goes over the node's loopback (its own address routes to ``lo``); traffic between nodes
crosses the two veth links and the bridge, which is what :meth:`Nodes.shape` limits with ``tc``
tbf (a token bucket on the egress of both ends of every node's link, so each direction of each
link carries at most the rate; netem is not used: it does not work on every kernel here).

Names are unique per call (the owner's process id and a counter), so sets made by tests run side
by side never meet; :func:`remove_stale` removes the sets whose owner process is gone.

Usage::

    with make_nodes(2, rate_bit=1e9) as nodes:
        proc = nodes.popen(0, ["python", "-c", "print(1)"], env={"GLOO_SOCKET_IFNAME": nodes.ifname})

Needs root and ``ip`` (iproute2); shaping needs ``tc``. Where they are missing,
:class:`NodesUnavailable` says why (the ``two_nodes`` fixture skips with that reason).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

IFNAME = "pnet0"
"""The interface name inside every node namespace (the value for ``GLOO_SOCKET_IFNAME``)."""
SUBNET = "198.18.0"
"""The first three octets of the node addresses: node i is ``198.18.0.(i+1)/24``."""
PREFIX = "pnode"
"""Namespace names start with this; a set is ``pnode<pid>x<n>`` plus ``-br`` and ``-<i>``."""
BURST_FLOOR_BYTES = 128 * 1024
"""The least tbf bucket (bytes) at any rate: above the largest packet (see :func:`tbf_args`)."""
_BRIDGE = "br0"
_COMMAND_TIMEOUT_S = 20.0
_counter = itertools.count()


class NodesUnavailable(RuntimeError):
    """Namespaces cannot be made here (not root, no ``ip``, or the kernel refused); says why."""


def unavailable_reason() -> str | None:
    """Why node namespaces cannot be made on this machine, or None when they can be tried."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "network namespaces need root (run the multinode tests as root)"
    if shutil.which("ip") is None:
        return "network namespaces need iproute2's `ip`; none on PATH"
    return None


def _ip(*args: str) -> None:
    _run(["ip", *args])


def _run(argv: Sequence[str]) -> None:
    done = subprocess.run(list(argv), capture_output=True, text=True, timeout=_COMMAND_TIMEOUT_S)
    if done.returncode != 0:
        raise NodesUnavailable(f"`{' '.join(argv)}` failed: {done.stderr.strip() or done.returncode}")


def tbf_args(rate_bit: float) -> list[str]:
    """The ``tc`` tbf arguments for ``rate_bit`` bit/s: the bucket holds 1 ms at that rate, and at
    least :data:`BURST_FLOOR_BYTES`; the queue holds 100 ms of packets before dropping, enough for
    TCP to keep the link full.

    The floor is above the largest packet tbf can hold: a 64 KiB segmentation-offload packet
    counts its payload plus every segment's headers (about 68 KiB). tbf admits a packet up to the
    bucket of the moment, and a rate change (``replace`` changes the tbf in place, its queue
    kept) does not look at the packets queued: one larger than the new bucket can never be sent.
    TCP does not retransmit a segment still queued on its host, so the connection backs off to
    its 120 s maximum and the ranks wait on it until their timeout. With a bucket that always
    holds the largest packet, a reshape only slows the queue."""
    if rate_bit <= 0:
        raise ValueError(f"rate {rate_bit!r} bit/s is not positive; give a rate such as 1e9")
    burst_bytes = max(BURST_FLOOR_BYTES, int(rate_bit / 8 * 1e-3))
    return ["tbf", "rate", f"{int(rate_bit)}bit", "burst", str(burst_bytes), "latency", "100ms"]


@dataclass
class Nodes:
    """One set of node namespaces (``name-0`` .. ``name-(n-1)``) and its bridge (``name-br``).

    ``addrs[i]`` is node i's address on :data:`IFNAME`. Processes started by :meth:`popen` are
    killed (their process groups) by :meth:`destroy`, before the namespaces go, so nothing the
    set started outlives it.
    """

    name: str
    count: int
    ifname: str = IFNAME
    processes: list[subprocess.Popen] = field(default_factory=list)

    @property
    def namespaces(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.count)]

    @property
    def bridge_namespace(self) -> str:
        return f"{self.name}-br"

    @property
    def addrs(self) -> list[str]:
        return [f"{SUBNET}.{i + 1}" for i in range(self.count)]

    def create(self) -> None:
        """Make the namespaces, the bridge and one veth link per node; on any failure remove
        what was made and raise :class:`NodesUnavailable` with the reason."""
        try:
            self._create()
        except (NodesUnavailable, OSError, subprocess.TimeoutExpired) as error:
            self.destroy()
            raise NodesUnavailable(f"cannot make node namespaces: {error}") from error

    def _create(self) -> None:
        bridge = self.bridge_namespace
        _ip("netns", "add", bridge)
        _ip("-n", bridge, "link", "add", _BRIDGE, "type", "bridge")
        _ip("-n", bridge, "link", "set", _BRIDGE, "up")
        for i, namespace in enumerate(self.namespaces):
            _ip("netns", "add", namespace)
            _ip("-n", namespace, "link", "set", "lo", "up")
            _ip("-n", bridge, "link", "add", f"p{i}", "type", "veth", "peer", "name", self.ifname, "netns", namespace)
            _ip("-n", bridge, "link", "set", f"p{i}", "master", _BRIDGE)
            _ip("-n", bridge, "link", "set", f"p{i}", "up")
            _ip("-n", namespace, "addr", "add", f"{self.addrs[i]}/24", "dev", self.ifname)
            _ip("-n", namespace, "link", "set", self.ifname, "up")

    def popen(self, node_index: int, argv: Sequence[str], *, env: Mapping[str, str] | None = None,
              **kwargs) -> subprocess.Popen:
        """Start ``argv`` in node ``node_index``'s namespace, in a process group of its own.

        ``env`` is added over this process's environment (not a replacement); other keyword
        arguments go to :class:`subprocess.Popen` (``stdout``, ``stderr``, ``cwd``, ``text``)."""
        namespace = self.namespaces[node_index]
        full_env = {**os.environ, **(env or {})}
        proc = subprocess.Popen(["ip", "netns", "exec", namespace, *argv], env=full_env,
                                start_new_session=True, **kwargs)
        self.processes.append(proc)
        return proc

    def _links(self) -> list[tuple[str, str]]:
        """(namespace, device) for both ends of every node's link."""
        ends = [(namespace, self.ifname) for namespace in self.namespaces]
        return ends + [(self.bridge_namespace, f"p{i}") for i in range(self.count)]

    def shape(self, rate_bit: float) -> None:
        """Limit every inter-node link to ``rate_bit`` bit/s each way (tc tbf; replaces any
        shaping before, so it can change mid-run)."""
        if shutil.which("tc") is None:
            raise NodesUnavailable("shaping needs iproute2's `tc`; none on PATH")
        for namespace, device in self._links():
            _ip("netns", "exec", namespace, "tc", "qdisc", "replace", "dev", device, "root", *tbf_args(rate_bit))

    def unshape(self) -> None:
        """Remove the shaping (links run at veth speed again); a link without shaping is left."""
        for namespace, device in self._links():
            subprocess.run(["ip", "netns", "exec", namespace, "tc", "qdisc", "del", "dev", device, "root"],
                           capture_output=True, timeout=_COMMAND_TIMEOUT_S)

    def stop_processes(self, *, grace_s: float = 5.0) -> None:
        """Terminate the process groups started by :meth:`popen` that still run, then kill them."""
        running = [proc for proc in self.processes if proc.poll() is None]
        for proc in running:
            _signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for proc in running:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            if proc.poll() is None:
                _signal_group(proc, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=grace_s)

    def destroy(self) -> None:
        """Stop this set's processes and delete its namespaces (the links go with them)."""
        self.stop_processes()
        remove_namespaces([*self.namespaces, self.bridge_namespace])


def _signal_group(proc: subprocess.Popen, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signum)


def list_namespaces() -> list[str]:
    """The names of the named network namespaces on this machine."""
    done = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=_COMMAND_TIMEOUT_S)
    return [line.split()[0] for line in done.stdout.splitlines() if line.strip()]


def remove_namespaces(names: Sequence[str]) -> None:
    """Delete the named namespaces that exist; others are skipped."""
    present = set(list_namespaces())
    for name in names:
        if name in present:
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=_COMMAND_TIMEOUT_S)


def remove_stale() -> list[str]:
    """Delete the test sets (``pnode<pid>x<n>-*``) whose owner process no longer runs; the
    names removed. Sets of live owners, and sets named by the user, are left alone."""
    stale = [name for name in list_namespaces() if _stale(name)]
    remove_namespaces(stale)
    return stale


def _stale(name: str) -> bool:
    if not name.startswith(PREFIX) or "x" not in name:
        return False
    pid_text = name[len(PREFIX):].split("x", 1)[0]
    if not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def unique_name() -> str:
    """A set name no other call (in this or another process) uses: owner pid and a counter."""
    return f"{PREFIX}{os.getpid()}x{next(_counter)}"


@contextlib.contextmanager
def make_nodes(n: int, *, rate_bit: float | None = None, name: str | None = None) -> Iterator[Nodes]:
    """``n`` node namespaces joined through a bridge, shaped to ``rate_bit`` bit/s each way when
    given; removed on exit, also when the block raises. Raises :class:`NodesUnavailable`."""
    if n < 1:
        raise ValueError(f"node count {n!r} is below 1; give at least one node")
    reason = unavailable_reason()
    if reason is not None:
        raise NodesUnavailable(reason)
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        remove_stale()
    nodes = Nodes(name=name or unique_name(), count=n)
    nodes.create()
    try:
        if rate_bit is not None:
            nodes.shape(rate_bit)
        yield nodes
    finally:
        nodes.destroy()
