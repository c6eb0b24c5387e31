"""The namespace test hosts themselves: addresses reach each other over the bridge, shaping
limits the inter-node rate, and every set is gone after its block, also after an error."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from netns import Nodes, NodesUnavailable, list_namespaces, make_nodes, tbf_args

# A bounded TCP sender and receiver: the receiver counts bytes until the sender closes.
_RECEIVE = """
import socket, sys, time
server = socket.create_server((sys.argv[1], 29911)); server.settimeout(30)
conn, _ = server.accept(); conn.settimeout(30); total = 0; start = None
while True:
    chunk = conn.recv(1 << 20)
    if start is None: start = time.monotonic()
    if not chunk: break
    total += len(chunk)
print(total, time.monotonic() - start)
"""
_SEND = """
import socket, sys, time
deadline = time.monotonic() + 20
while True:
    try:
        conn = socket.create_connection((sys.argv[1], 29911), timeout=5); break
    except OSError:
        if time.monotonic() > deadline: raise
        time.sleep(0.05)
conn.sendall(b"x" * int(sys.argv[2])); conn.close()
"""


def _transfer(nodes: Nodes, size: int) -> tuple[int, float]:
    """Send ``size`` bytes from node 1 to node 0; (bytes received, seconds)."""
    receiver = nodes.popen(0, [sys.executable, "-c", _RECEIVE, nodes.addrs[0]], stdout=subprocess.PIPE, text=True)
    sender = nodes.popen(1, [sys.executable, "-c", _SEND, nodes.addrs[0], str(size)])
    assert sender.wait(timeout=60) == 0
    out, _ = receiver.communicate(timeout=60)
    received, seconds = out.split()
    return int(received), float(seconds)


def test_tbf_arguments_hold_one_millisecond_at_the_rate() -> None:
    assert tbf_args(1e10) == ["tbf", "rate", "10000000000bit", "burst", "1250000", "latency", "100ms"]
    assert tbf_args(1e9)[4] == str(128 * 1024)  # 125 kB at 1 Gbit/s is below the 128 KiB floor
    assert tbf_args(2.5e8)[4] == tbf_args(1e9)[4]  # a reshape down keeps a bucket that holds any queued packet
    with pytest.raises(ValueError, match="not positive"):
        tbf_args(0)


def test_two_nodes_reach_each_other_and_shaping_limits_the_link(two_nodes: Nodes) -> None:
    assert two_nodes.addrs == ["198.18.0.1", "198.18.0.2"]
    size = 4 * 1024 * 1024
    received, fast_s = _transfer(two_nodes, size)
    assert received == size
    two_nodes.shape(100e6)  # 4 MiB at 100 Mbit/s: 0.34 s
    received, shaped_s = _transfer(two_nodes, size)
    assert received == size
    rate_bit = size * 8 / shaped_s
    assert 0.8 * 100e6 < rate_bit < 1.15 * 100e6, (rate_bit, fast_s)
    two_nodes.unshape()
    _, unshaped_s = _transfer(two_nodes, size)
    assert unshaped_s < shaped_s / 2


def test_sets_are_removed_after_an_error_and_stop_their_processes() -> None:
    try:
        with make_nodes(2) as nodes:
            names = [*nodes.namespaces, nodes.bridge_namespace]
            assert set(names) <= set(list_namespaces())
            sleeper = nodes.popen(1, [sys.executable, "-c", "import time; time.sleep(600)"])
            raise KeyError("boom")
    except NodesUnavailable as error:
        pytest.skip(str(error))
    except KeyError:
        pass
    start = time.monotonic()
    assert sleeper.poll() is not None and time.monotonic() - start < 1
    assert not set(names) & set(list_namespaces())


def test_two_calls_get_distinct_names() -> None:
    try:
        with make_nodes(1) as first, make_nodes(1) as second:
            assert first.name != second.name
    except NodesUnavailable as error:
        pytest.skip(str(error))


def test_the_script_makes_shapes_and_removes_a_named_set() -> None:
    script = [sys.executable, "scripts/netns_nodes.py"]
    name = f"pscript{time.time_ns() % 10**9}"
    up = subprocess.run([*script, "up", "--name", name, "--nodes", "2"], capture_output=True, text=True, timeout=60)
    if up.returncode != 0:
        pytest.skip(up.stderr.strip())
    try:
        assert up.stdout.split()[:3] == [f"{name}-0", "198.18.0.1", "pnet0"]
        shaped = subprocess.run([*script, "shape", "--name", name, "--rate", "1e9"], capture_output=True, timeout=60)
        assert shaped.returncode == 0
        qdisc = subprocess.run(["ip", "netns", "exec", f"{name}-1", "tc", "qdisc", "show", "dev", "pnet0"],
                               capture_output=True, text=True, timeout=60)
        assert "tbf" in qdisc.stdout and "1Gbit" in qdisc.stdout
    finally:
        down = subprocess.run([*script, "down", "--name", name], capture_output=True, timeout=60)
    assert down.returncode == 0 and not any(n.startswith(name) for n in list_namespaces())
