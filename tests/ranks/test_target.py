"""Targets without a second process: records, the rank environment, messages, a 1-rank group."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from parity.device.fake import FakeDevice
from parity.model.errors import ParityError
from parity.ranks import LocalTarget, Target, check_same_target, read_rank_env
from parity.ranks.gather import barrier_failure
from parity.ranks.group import distributed_backend, rank_device
from parity.ranks.launch import failure_message, free_port, hang_message, start_message
from parity.ranks.supervisor import RankFailure, rank_failure

TORCHRUN = {
    "RANK": "3",
    "WORLD_SIZE": "8",
    "LOCAL_RANK": "1",
    "MASTER_ADDR": "10.0.0.7",
    "MASTER_PORT": "29400",
}
SLURM = {"SLURM_PROCID": "5", "SLURM_NTASKS": "16", "SLURM_LOCALID": "1", "MASTER_ADDR": "n01"}


def test_target_record_round_trips_and_rejects_unknown_kinds() -> None:
    record = Target(
        kind="ranks", name="2 ranks", identity={"world_size": 2}, provenance=({"rank": 0},)
    )
    assert Target.from_dict(record.to_dict()) == record
    with pytest.raises(ValueError, match="'gpu' is not one of local, ranks, remote"):
        Target(kind="gpu", name="x")


def test_local_target_is_identified_by_its_device() -> None:
    record = LocalTarget(device=FakeDevice()).record()
    assert record.kind == "local"
    assert record.identity == {"device": "fake", "device_type": "fake"}
    (provenance,) = record.provenance
    assert provenance["device"] == {"selected": "fake", "type": "fake", "name": "fake device"}
    assert provenance["rank"] == 0 and provenance["pid"] > 0
    assert "affinity" in provenance["placement"]


def test_resume_refuses_another_target_naming_the_field() -> None:
    stored = Target(kind="ranks", name="a", identity={"world_size": 4, "backend": "nccl"})
    check_same_target(stored, Target(kind="ranks", name="b", identity=dict(stored.identity)))
    smaller = Target(kind="ranks", name="b", identity={"world_size": 2, "backend": "nccl"})
    with pytest.raises(ParityError, match="target world_size was 4 when the run started and is 2"):
        check_same_target(stored, smaller)
    with pytest.raises(ParityError, match="measured a ranks target"):
        check_same_target(stored, Target(kind="local", name="cpu"))


def test_torchrun_environment() -> None:
    env = read_rank_env(TORCHRUN)
    assert (env.rank, env.world_size, env.local_rank, env.launcher) == (3, 8, 1, "torchrun")
    assert env.init_method == "tcp://10.0.0.7:29400"
    assert read_rank_env({**TORCHRUN, "PARITY_LOCAL_LAUNCH": "1"}).launcher == "parity"
    ipv6 = read_rank_env({**TORCHRUN, "MASTER_ADDR": "fe80::1"})
    assert ipv6.init_method == "tcp://[fe80::1]:29400"


def test_srun_environment_with_default_port_and_torchrun_winning() -> None:
    env = read_rank_env(SLURM)
    assert (env.rank, env.world_size, env.local_rank, env.launcher) == (5, 16, 1, "srun")
    assert env.master_port == 29500
    assert read_rank_env({**SLURM, "MASTER_PORT": "1234"}).master_port == 1234
    assert read_rank_env({**SLURM, **TORCHRUN}).launcher == "torchrun"


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({}, "no rank environment"),
        ({"RANK": "0", "WORLD_SIZE": "2"}, "LOCAL_RANK, MASTER_ADDR, MASTER_PORT not"),
        ({**TORCHRUN, "RANK": "8"}, "RANK=8 is not below WORLD_SIZE=8"),
        ({**TORCHRUN, "WORLD_SIZE": "two"}, "WORLD_SIZE='two' is not an integer >= 1"),
        ({**TORCHRUN, "MASTER_PORT": "70000"}, "MASTER_PORT='70000' is not a TCP port"),
        ({k: v for k, v in SLURM.items() if k != "MASTER_ADDR"}, "MASTER_ADDR is not set"),
        ({"SLURM_PROCID": "0"}, "SLURM_NTASKS, SLURM_LOCALID not"),
    ],
)
def test_bad_rank_environment_is_one_line_naming_the_variable(environ: dict, message: str) -> None:
    with pytest.raises(ParityError, match=message) as caught:
        read_rank_env(environ)
    assert "\n" not in str(caught.value)


def test_backend_comes_from_the_device_interface() -> None:
    from parity.device.distributed import DistributedBackend

    assert distributed_backend(FakeDevice()) == "gloo"

    class Reporting(FakeDevice):
        def distributed_backend(self) -> DistributedBackend:
            return DistributedBackend(name="xccl")

    assert distributed_backend(Reporting()) == "xccl"

    class Fallback(FakeDevice):
        def distributed_backend(self) -> DistributedBackend:
            return DistributedBackend(name="gloo", fallback_reason="xccl is not in this torch build")

    assert distributed_backend(Fallback()) == "gloo"


def test_rank_device_keeps_a_device_and_the_cpu_unindexed() -> None:
    device = FakeDevice()
    assert rank_device(device, 3) is device
    assert rank_device("fake", 3).name == "fake"


def test_barrier_failures_name_the_missing_ranks() -> None:
    seen_by_0 = "[Rank 0]: Ranks 1, 3 failed to pass monitoredBarrier in 2000 ms"
    assert barrier_failure(seen_by_0, rank=0, timeout_s=2.0) == (
        "ranks 1, 3 did not reach the barrier within 2 s (seen from rank 0): it died or hangs; "
        "see its log"
    )
    seen_by_1 = (
        "[Rank 1]: Rank 1 successfully reached monitoredBarrier, but received errors while "
        "waiting for send/recv from rank 0. Please check rank 0 logs for faulty rank."
    )
    assert barrier_failure(seen_by_1, rank=1, timeout_s=2.0).startswith(
        "rank 0 stopped answering at a barrier (seen from rank 1"
    )
    assert barrier_failure("socket\nclosed", rank=2, timeout_s=1) == (
        "barrier failed on rank 2: socket closed"
    )


def test_failure_message_names_the_first_failure_and_the_others() -> None:
    failures = [
        RankFailure(rank=0, exitcode=1, message="RuntimeError: peer gone\n  at 3", timestamp=20),
        RankFailure(rank=2, exitcode=-9, message="Signal 9 (SIGKILL) received", timestamp=10),
    ]
    assert failure_message(failures, nproc=4) == (
        "rank 2 of 4 was killed by SIGKILL: Signal 9 (SIGKILL) received (also failed: rank 0)"
    )
    filler = "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
    silent = RankFailure(rank=1, exitcode=3, message=filler, timestamp=0)
    assert failure_message([silent], nproc=2) == "rank 1 of 2 exited with code 3"
    own = "ParityError: rank 1 did not reach the barrier within 2 s"
    stopped = RankFailure(rank=0, exitcode=1, message=own, timestamp=0)
    assert failure_message([stopped], nproc=2) == (
        "rank 0 of 2 stopped: rank 1 did not reach the barrier within 2 s"
    )


def test_a_torch_process_failure_becomes_a_plain_record() -> None:
    class ProcessFailure:  # what torch's elastic agent reports for a rank that raised
        exitcode = 1
        timestamp = 7
        message = {"message": "RuntimeError: boom", "extraInfo": {"py_callstack": "Traceback"}}

    assert rank_failure(1, ProcessFailure()) == RankFailure(
        rank=1, exitcode=1, message="RuntimeError: boom", timestamp=7.0, traceback="Traceback"
    )


def test_timeout_messages_read_the_rank_marks(tmp_path: Path) -> None:
    (tmp_path / "rank0.started").write_text("1")
    assert start_message(tmp_path, nproc=3, start_timeout_s=5) == (
        "ranks 1, 2 of 3 did not start within 5 s; raise start_timeout_s on a busy host; the "
        "processes were ended"
    )
    (tmp_path / "rank0.done").write_text("1")
    assert hang_message(tmp_path, nproc=2, timeout_s=2.5).startswith(
        "rank 1 of 2 did not return within 2.5 s of starting"
    )
    (tmp_path / "rank1.done").write_text("1")
    assert hang_message(tmp_path, nproc=2, timeout_s=1).startswith(
        "all 2 ranks returned but the launcher did not finish"
    )


def test_an_entry_that_cannot_be_pickled_is_refused_before_any_process_starts() -> None:
    from parity.ranks import launch_local_ranks

    with pytest.raises(ParityError, match="pass a module-level function"):
        launch_local_ranks(2, lambda: None, timeout_s=5)


def test_free_port_is_bindable_on_loopback() -> None:
    import socket

    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


@pytest.mark.torch
def test_one_rank_group_joins_gathers_and_reduces_in_process() -> None:
    pytest.importorskip("torch")
    from parity.device import get_device
    from parity.ranks import joined_group
    from parity.timing.ranks import max_over_ranks, time_iterations_over_ranks

    environ = {**TORCHRUN, "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0"}
    environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    with joined_group(device=FakeDevice(), timeout_s=10, environ=environ) as group:
        assert group.is_writer and group.world_size == 1 and group.launcher == "torchrun"
        assert [p["rank"] for p in group.rank_provenance] == [0]
        samples = max_over_ranks(
            (0.5, 0.25), group=group, rank_method="injected", resolution_s=1e-6
        )
        assert samples.values_s == (0.5, 0.25)
        assert samples.meta["min_over_ranks_s"] == [0.5, 0.25]
        assert samples.resolution_s == 1e-6
        with pytest.raises(ParityError, match="no iteration was timed"):
            max_over_ranks((), group=group, rank_method="injected")
        on_cpu = replace(group, device=get_device("cpu"))
        timed = time_iterations_over_ranks(lambda: sum(range(100)), group=on_cpu, iterations=3)
        assert len(timed) == 3 and timed.method == "max-over-ranks"
        assert timed.meta["rank_method"] == "host-clock" and timed.warmup_calls == 1
        assert timed.meta["min_over_ranks_s"] == list(timed.values_s)  # one rank: min is max
        with pytest.raises(ParityError, match="already belongs to a process group"):
            from parity.ranks import join_group

            join_group(device=FakeDevice(), environ=environ)
    import torch.distributed as dist

    assert not dist.is_initialized()


@pytest.mark.torch
def test_a_peer_that_never_comes_fails_the_join_in_bounded_time() -> None:
    pytest.importorskip("torch")
    import torch.distributed as dist

    from parity.ranks import join_group

    environ = {**TORCHRUN, "RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0"}
    environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    with pytest.raises(ParityError, match=r"^rank 0 of 2 could not join the gloo group at 127"):
        join_group(device=FakeDevice(), timeout_s=1, environ=environ)
    assert not dist.is_initialized()


@pytest.mark.torch
def test_a_suite_in_one_process_gets_a_group_of_one_rank_and_closes_it() -> None:
    pytest.importorskip("torch")
    import torch.distributed as dist

    from parity.ranks import agree, close_group, open_group

    group = open_group(FakeDevice(), timeout_s=10)
    try:
        assert group.owned and group.world_size == 1 and group.rank == 0 and group.backend == "gloo"
        assert group.control is dist.group.WORLD  # gloo already: no second group
        agree(group, {"a": 1}, what="configuration")  # one rank agrees with itself
    finally:
        close_group(group)
    assert not dist.is_initialized()
    close_group(None)


@pytest.mark.torch
def test_a_joined_group_is_the_suite_group_and_outlives_its_close() -> None:
    pytest.importorskip("torch")
    import torch.distributed as dist

    from parity.ranks import close_group, joined_group, open_group

    environ = {**TORCHRUN, "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0"}
    environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    with joined_group(device=FakeDevice(), timeout_s=10, environ=environ) as group:
        suite = open_group(FakeDevice())
        assert suite is group and not suite.owned
        close_group(suite)
        assert dist.is_initialized()
    assert not dist.is_initialized()
