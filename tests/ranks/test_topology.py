"""Node identity and topology: hand-counted groups per dimension, declared topologies, the
scale-up/scale-out split of MoE rows, barrier failures that name a node, and a declared 2x2
topology on four local gloo ranks measured per dimension."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from plugin_runs import plugin_env

from parity.families.collectives.dimensions import case_key, dimensions_measured
from parity.families.moe.case import scale_split
from parity.model.errors import ParityError
from parity.ranks.gather import barrier_failure
from parity.ranks.topology import (
    declared_topology,
    dimension_groups,
    launcher_topology,
    network_namespace,
    node_identity,
    parse_topology,
)


def test_nodes_are_numbered_by_their_lowest_rank() -> None:
    topology = launcher_topology(["b", "a", "b", "a"])
    assert topology.rank_nodes == (0, 1, 0, 1) and topology.node_names == ("b", "a")
    assert (topology.nodes, topology.ranks_per_node, topology.source) == (2, 2, "launcher")
    assert topology.node_of(1) == "a" and topology.node_of(9) == "?"
    assert launcher_topology(["a", "a", "b"]).ranks_per_node is None  # 2 ranks on one node, 1 on the other
    assert topology.to_dict() == {"nodes": 2, "ranks_per_node": 2, "source": "launcher",
                                  "rank_nodes": [0, 1, 0, 1], "node_names": ["b", "a"]}


def test_dimension_groups_by_hand() -> None:
    two_by_two = declared_topology("2x2", world_size=4)
    assert two_by_two.rank_nodes == (0, 0, 1, 1) and two_by_two.source == "declared"
    assert dimension_groups(two_by_two, "world") == [[0, 1, 2, 3]]
    assert dimension_groups(two_by_two, "intra") == [[0, 1], [2, 3]]
    assert dimension_groups(two_by_two, "inter") == [[0, 2], [1, 3]]
    two_by_three = declared_topology("2x3", world_size=6)
    assert dimension_groups(two_by_three, "inter") == [[0, 3], [1, 4], [2, 5]]
    one_node = launcher_topology(["h"] * 4)
    assert dimension_groups(one_node, "intra") is None and dimension_groups(one_node, "inter") is None
    assert dimension_groups(declared_topology("4x1", world_size=4), "intra") is None
    assert dimension_groups(launcher_topology(["a", "a", "b"]), "inter") is None
    assert dimensions_measured(two_by_two, ("world", "intra", "inter")) == ["world", "intra", "inter"]
    assert dimensions_measured(one_node, ("world", "intra", "inter")) == ["world"]
    assert dimensions_measured(None, ("intra",)) == []
    assert case_key("world", "all_reduce/fp32/in-place/1024") == "all_reduce/fp32/in-place/1024"
    assert case_key("inter", "all_reduce/fp32/in-place/1024") == "inter:all_reduce/fp32/in-place/1024"


def test_declared_topologies_are_checked() -> None:
    assert parse_topology("2x4") == (2, 4) and parse_topology(" 3X1 ") == (3, 1)
    for bad in ("2", "2x", "0x4", "axb", ""):
        with pytest.raises(ParityError, match="is not NODESxRANKS"):
            parse_topology(bad)
    with pytest.raises(ParityError, match="holds 8 ranks but the group has 4"):
        declared_topology("2x4", world_size=4)


def test_node_identity_is_host_and_network_namespace() -> None:
    namespace = network_namespace()
    identity = node_identity({})
    if namespace is not None:
        assert identity.endswith(f"/netns:{namespace}") and namespace.isdigit()
    assert node_identity({"PARITY_NODE": "rack3-node7"}) == "rack3-node7"


def test_scale_split_by_hand() -> None:
    # the docstring's example: rank 0 of 2 nodes x 2 ranks, one expert per rank
    assert scale_split([[0, 1, 2], [3, 2, 1]], source_rank=0, experts_per_rank=1, rank_nodes=[0, 0, 1, 1]) == (2, 3)
    # two experts per rank, one node: every cross-rank row is scale-up; unused slots (-1) count nothing
    assert scale_split([[0, 2], [3, -1]], source_rank=0, experts_per_rank=2, rank_nodes=[0, 0]) == (2, 0)


def test_barrier_failures_name_the_node_where_there_are_several() -> None:
    nodes = {0: "h/netns:1", 1: "h/netns:1", 2: "h/netns:2", 3: "h/netns:2"}
    message = "Ranks 2, 3 failed to pass monitoredBarrier in 15000 ms"
    assert barrier_failure(message, rank=0, timeout_s=15, node_of=nodes.__getitem__) == (
        "ranks 2 on node h/netns:2, 3 on node h/netns:2 did not reach the barrier within 15 s (seen from rank 0 "
        "on node h/netns:1): it died or hangs; see its log")
    assert barrier_failure(message, rank=0, timeout_s=15).startswith("ranks 2, 3 did not reach")


@pytest.mark.slow
@pytest.mark.torch
def test_a_declared_topology_measures_each_dimension_on_local_ranks(tmp_path: Path) -> None:
    out = tmp_path / "c.json"
    env = plugin_env(tmp_path / "c.sqlite")
    done = subprocess.run([sys.executable, "-m", "parity", "comm", "collectives", "--nproc", "4", "--backend", "gloo",
                           "--device", "cpu", "--topology", "2x2", "--ops", "all_reduce,broadcast", "--max-bytes",
                           "4KiB", "--factor", "4", "--iterations", "2", "--json", str(out)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    doc = orjson.loads(out.read_bytes())
    topology = doc["provenance"]["topology"]
    assert topology["source"] == "declared" and topology["rank_nodes"] == [0, 0, 1, 1]
    rows = doc["summary"]["rows"]
    assert {(r["dimension"], r["world_size"]) for r in rows} == {("world", 4), ("intra", 2), ("inter", 2)}
    assert all(r["wrong"] == 0 for r in rows) and len(rows) == 12
    refused = subprocess.run([sys.executable, "-m", "parity", "comm", "collectives", "--nproc", "2", "--backend",
                              "gloo", "--device", "cpu", "--topology", "2x2", "--quick"],
                             env=env, capture_output=True, text=True, timeout=300)
    assert refused.returncode != 0 and "holds 4 ranks but the group has 2" in refused.stderr


def test_a_gloo_error_names_the_ranks_and_node_behind_its_address() -> None:
    topology = launcher_topology(["h/netns:1", "h/netns:1", "h/netns:2", "h/netns:2"],
                                 ["198.18.0.1", "198.18.0.1", "198.18.0.2", "198.18.0.2"])
    message = "[pair.cc:553] Connection closed by peer [198.18.0.2]:27860. This is typically caused by"
    assert topology.peer_in(message) == "ranks 2, 3 on node h/netns:2 (198.18.0.2)"
    assert topology.peer_in("Connection closed by peer [10.0.0.9]:1") is None
    assert topology.peer_in("no address here") is None


@pytest.mark.slow
@pytest.mark.torch
def test_moe_bytes_split_into_scale_up_and_out_on_a_declared_topology(tmp_path: Path) -> None:
    import numpy as np
    from test_torchrun_nodes import HIDDEN, ROUTING, SCALE_OUT_BYTES, SCALE_UP_BYTES

    routing = tmp_path / "routing.npy"
    np.save(routing, np.array(ROUTING, dtype=np.int64))
    out = tmp_path / "moe.json"
    done = subprocess.run([sys.executable, "-m", "parity", "comm", "moe", "--nproc", "4", "--backend", "gloo",
                           "--device", "cpu", "--topology", "2x2", "--preset", "custom", "--tokens", "2", "--hidden",
                           str(HIDDEN), "--top-k", "2", "--experts", "4", "--routing-file", str(routing),
                           "--dispatch-dtypes", "bf16", "--iterations", "2", "--json", str(out)],
                          env=plugin_env(tmp_path / "m.sqlite"), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    summary = orjson.loads(out.read_bytes())["summary"]
    assert summary["wrong"] == 0 and summary["topology"] == {"nodes": 2, "ranks_per_node": 2, "source": "declared"}
    for row in summary["rows"]:
        moved = {c["name"]: c["bytes"] for c in row["conventions"]}
        assert (moved["scale_up"], moved["scale_out"]) == (SCALE_UP_BYTES, SCALE_OUT_BYTES)


def test_a_barrier_broken_by_a_killed_peer_names_its_ranks_and_node() -> None:
    # a killed rank's kernel resets its connections: gloo fails the barrier at once with the
    # peer's address, before any rank misses the timeout
    topology = launcher_topology(["h/netns:1", "h/netns:1", "h/netns:2", "h/netns:2"],
                                 ["198.18.0.1", "198.18.0.1", "198.18.0.2", "198.18.0.2"])
    message = "[pair.cc:537] Read error [198.18.0.2]:3770: Connection reset by peer. This is typically caused by"
    line = barrier_failure(message, rank=0, timeout_s=15, node_of=topology.node_of, peer_of=topology.peer_in)
    assert line.startswith("barrier failed on rank 0 on node h/netns:1: the connection to ranks 2, 3 on node "
                           "h/netns:2 (198.18.0.2) broke: it died or hangs")
    assert barrier_failure(message, rank=0, timeout_s=15) == f"barrier failed on rank 0: {message}"
