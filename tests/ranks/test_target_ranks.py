"""Real gloo groups on the CPU, started by parity's own elastic launch.

Each launch starts fresh interpreters that import torch (several seconds on a 2-core host), so
the healthy group is launched once for the module and its ranks return everything the tests
check. Failure tests bound the run at 2 s after the ranks start and check that the error names
the rank and that no rank process survives the launch.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from parity.device.fake import FakeDevice  # noqa: E402
from parity.model.errors import ParityError  # noqa: E402
from parity.harness.strategies import TogetherAndAlone # noqa: E402
from parity.harness.work import Work  # noqa: E402
from parity.ranks import (  # noqa: E402
    agree,
    all_gather,
    barrier,
    close_group,
    joined_group,
    launch_local_ranks,
    open_group,
)
from parity.ranks.supervisor import rank_threads  # noqa: E402
from parity.timing.ranks import max_over_ranks, time_iterations_over_ranks  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.slow]

RUN_TIMEOUT_S = 2.0
# Known per-rank, per-iteration times (s) injected into the reduction, and what it must give.
INJECTED = {0: (1.0, 5.0, 3.0, 0.5), 1: (4.0, 2.0, 3.0, 0.25)}
SCRIPTED = {0: (0.010, 0.030), 1: (0.020, 0.005)}


def healthy_rank(tag: str) -> dict:
    """Join, gather, reduce injected times and time scripted fake-device iterations."""
    rank = int(os.environ["RANK"])
    device = FakeDevice(durations_s=SCRIPTED[rank])
    with joined_group(device=device, timeout_s=20) as group:
        reduced = max_over_ranks(INJECTED[rank], group=group, rank_method="injected")
        timed = time_iterations_over_ranks(lambda: None, group=group, iterations=2, warmup=0)
        everyone = all_gather((group.rank, tag), group=group, timeout_s=10)
        ops = list(device.ops)
        suite = open_group(device)  # a suite measures on the joined group, not a second one
        agree(suite, {"tag": tag}, what="configuration")
        try:
            agree(suite, {"rank": rank}, what="configuration")
            refused = ""
        except ParityError as exc:
            refused = str(exc)
        close_group(suite)
        together = TogetherAndAlone(companion=lambda: None, iterations=2, names=("a", "b"))
        work = Work(call=lambda: None, check=lambda: {"passed": True, "method": "none"}, strategy=together)
        both = together.time(work, device=device, group=group)
        return {
            "suite_is_joined": suite is group and suite.control is group.control,
            "refused": refused,
            "together": {name: s.to_dict() for name, s in both.samples.items()},
            "rank": group.rank,
            "is_writer": group.is_writer,
            "launcher": group.launcher,
            "record": group.record().to_dict(),
            "reduced": reduced.to_dict(),
            "timed": timed.to_dict(),
            "everyone": everyone,
            "ops": ops,
            "threads": torch.get_num_threads(),
        }


def _mark_pid(folder: str) -> None:
    Path(folder, f"rank{os.environ['RANK']}.pid").write_text(str(os.getpid()))


def dying_rank(folder: str) -> None:
    """Rank 1 leaves with exit status 3 once the group is formed; rank 0 waits at a barrier."""
    _mark_pid(folder)
    with joined_group(device="cpu", timeout_s=20) as group:
        if group.rank == 1:
            os._exit(3)
        barrier(group, timeout_s=20)


def hanging_rank(folder: str) -> None:
    """Rank 1 sleeps far past the launch's bound; rank 0 returns."""
    _mark_pid(folder)
    if os.environ["RANK"] == "1":
        time.sleep(600)


def hanging_at_barrier(folder: str) -> None:
    """Rank 1 sleeps inside the group; rank 0 waits for it at a 2 s barrier."""
    _mark_pid(folder)
    with joined_group(device="cpu", timeout_s=20) as group:
        if group.rank == 1:
            time.sleep(600)
        barrier(group, timeout_s=RUN_TIMEOUT_S)


def hanging_while_timed(folder: str) -> None:
    """Rank 1 stops answering between two timed iterations; the group's timeout is 3 s and
    the timing loop is given none of its own."""
    _mark_pid(folder)
    with joined_group(device=FakeDevice(durations_s=(0.001,)), timeout_s=3) as group:
        calls = []

        def step() -> None:
            calls.append(1)
            if group.rank == 1 and len(calls) == 2:
                time.sleep(600)

        time_iterations_over_ranks(step, group=group, iterations=5, warmup=0)


@pytest.fixture(scope="module")
def healthy() -> list[dict]:
    return launch_local_ranks(2, healthy_rank, ("hello",), timeout_s=60)


def _assert_no_rank_left(folder: Path) -> None:
    pids = [int(p.read_text()) for p in folder.glob("rank*.pid")]
    assert pids, "the ranks never started"
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_launch_returns_every_rank_value_in_rank_order(healthy: list[dict]) -> None:
    assert [r["rank"] for r in healthy] == [0, 1]
    assert [r["is_writer"] for r in healthy] == [True, False]
    assert {r["launcher"] for r in healthy} == {"parity"}
    assert healthy[1]["everyone"] == [(0, "hello"), (1, "hello")]


def test_rank0_gathers_every_rank_provenance(healthy: list[dict]) -> None:
    record = healthy[0]["record"]
    assert record["kind"] == "ranks"
    assert record["identity"] == {
        "world_size": 2,
        "backend": "gloo",
        "device_type": "fake",
        "hosts": 1,
    }
    provenance = record["provenance"]
    assert [p["rank"] for p in provenance] == [0, 1]
    assert len({p["pid"] for p in provenance}) == 2
    assert all(p["device"]["type"] == "fake" and "affinity" in p["placement"] for p in provenance)
    assert all(p["environment"].get("TORCHELASTIC_RUN_ID") for p in provenance)
    # a rank other than 0 keeps only its own
    assert [p["rank"] for p in healthy[1]["record"]["provenance"]] == [1]


def test_ranks_share_the_cpus_out_unless_the_user_set_their_threads(healthy: list[dict]) -> None:
    # torch's default gives every rank every core: 2 ranks' threads would outnumber the CPUs
    expected = os.environ.get("OMP_NUM_THREADS", str(rank_threads(2)))
    assert [r["threads"] for r in healthy] == [int(expected)] * 2
    assert all(p["environment"]["OMP_NUM_THREADS"] == expected for p in healthy[0]["record"]["provenance"])
    assert rank_threads(2, cpus=2) == 1 and rank_threads(4, cpus=16) == 4 and rank_threads(3, cpus=8) == 2
    assert rank_threads(8, cpus=2) == 1 and rank_threads(1, cpus=6) == 6


def test_a_suite_measures_on_the_joined_group_and_ranks_must_agree(healthy: list[dict]) -> None:
    assert all(r["suite_is_joined"] for r in healthy)
    assert all(r["refused"].startswith("rank 1 has a different configuration than rank 0") for r in healthy)


def test_together_and_alone_reduces_every_series_over_the_ranks(healthy: list[dict]) -> None:
    assert healthy[0]["together"].keys() == {"a_alone", "b_alone", "main", "a_together", "b_together"}
    for series in healthy[0]["together"].values():
        assert series["meta"]["world_size"] == 2 and series["meta"]["rank_method"] == "host-clock"
        assert len(series["values_s"]) == 2
    assert healthy[0]["together"] == healthy[1]["together"]  # the max over ranks is the same on each


def test_max_over_ranks_keeps_max_as_timing_and_min_beside(healthy: list[dict]) -> None:
    for result in healthy:
        reduced = result["reduced"]
        assert reduced["method"] == "max-over-ranks"
        assert reduced["values_s"] == [4.0, 5.0, 3.0, 0.5]
        assert reduced["meta"]["min_over_ranks_s"] == [1.0, 2.0, 3.0, 0.25]
        assert reduced["meta"]["world_size"] == 2
        assert reduced["meta"]["rank_method"] == "injected"


def test_time_iterations_over_ranks_reduces_each_rank_timer(healthy: list[dict]) -> None:
    timed = healthy[0]["timed"]
    assert timed["values_s"] == [0.020, 0.030]
    assert timed["meta"]["min_over_ranks_s"] == [0.010, 0.005]
    assert timed["meta"]["rank_method"] == "device-events"
    assert timed["resolution_s"] == 1e-9
    # every iteration is drained and timed by the rank's own device timer
    assert healthy[1]["ops"].count("start") == 2
    assert healthy[1]["ops"][:2] == ["sync", "start"]


def test_a_rank_that_exits_ends_the_launch_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ParityError, match=r"^rank 1 of 2 exited with code 3$"):
        launch_local_ranks(2, dying_rank, (str(tmp_path),), timeout_s=20)
    _assert_no_rank_left(tmp_path)


def test_a_rank_that_hangs_is_named_and_ended_after_the_timeout(tmp_path: Path) -> None:
    begun = time.monotonic()
    with pytest.raises(ParityError, match=r"^rank 1 of 2 did not return within 2 s of starting"):
        launch_local_ranks(2, hanging_rank, (str(tmp_path),), timeout_s=RUN_TIMEOUT_S)
    _assert_no_rank_left(tmp_path)
    assert time.monotonic() - begun < 120  # the start bound plus the run bound, at most


def test_a_rank_that_hangs_at_a_barrier_is_named_by_rank0(tmp_path: Path) -> None:
    with pytest.raises(ParityError) as caught:
        launch_local_ranks(2, hanging_at_barrier, (str(tmp_path),), timeout_s=30)
    assert str(caught.value).startswith(
        "rank 0 of 2 stopped: rank 1 did not reach the barrier within 2 s (seen from rank 0)"
    )
    assert "\n" not in str(caught.value)
    _assert_no_rank_left(tmp_path)


def test_a_rank_that_hangs_while_timed_is_named_within_the_groups_timeout(tmp_path: Path) -> None:
    """The timing loop's barriers wait as long as the group does (``--rank-timeout``), not a
    fixed minute of their own."""
    begun = time.monotonic()
    with pytest.raises(ParityError) as caught:
        launch_local_ranks(2, hanging_while_timed, (str(tmp_path),), timeout_s=30)
    assert str(caught.value).startswith(
        "rank 0 of 2 stopped: rank 1 did not reach the barrier within 3 s (seen from rank 0)"
    ), caught.value
    _assert_no_rank_left(tmp_path)
    assert time.monotonic() - begun < 50  # joining takes seconds; the barrier's own 60 s would exceed it
