"""``map_ranks``: the local process pool and a real Dask LocalCluster (loopback, two workers)
write the same files; progress counts ranks; nothing outlives the call."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from parity.model.errors import ParityError
from parity.trace.fleet.executor import map_ranks
from parity.trace.fleet.tables import MAP_TABLES

pytest.importorskip("pyarrow")
psutil = pytest.importorskip("psutil")
SOURCE = "kineto/hta/trace_filter/sampled_rank-{}.json.gz"


def replicate(traces_dir: Path, folder: Path, ranks: int) -> Path:
    """A fleet of ``ranks`` Kineto files: the two real ranks alternately, each with its
    ``distributedInfo.rank`` rewritten."""
    folder.mkdir(parents=True, exist_ok=True)
    sources = [json.loads(gzip.decompress((traces_dir / SOURCE.format(i)).read_bytes())) for i in (0, 1)]
    for rank in range(ranks):
        document = sources[rank % 2]
        document["distributedInfo"]["rank"] = rank
        (folder / f"trace-{rank:03d}.json.gz").write_bytes(gzip.compress(json.dumps(document).encode(), mtime=0))
    return folder


def _files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted((out / "map").rglob("*.parquet"))}


def _children() -> set[int]:
    return {c.pid for c in psutil.Process().children(recursive=True)}


def test_local_and_dask_write_the_same_tables(traces_dir: Path, tmp_path: Path) -> None:
    fleet = replicate(traces_dir, tmp_path / "fleet", 6)
    before = _children()
    seen: list[tuple[int, int]] = []
    local = map_ranks([fleet], tmp_path / "local", workers=2, progress=lambda d, t: seen.append((d, t)))
    assert _children() <= before, "a worker process outlived the local map"
    dask = map_ranks([fleet], tmp_path / "dask", executor="dask", scheduler="local", workers=2)
    assert _children() <= before, "a LocalCluster process outlived the dask map"
    assert [r["rank"] for r in local] == list(range(6)) and local == dask
    assert seen[-1] == (6, 6) and [d for d, _ in seen] == list(range(1, 7))
    files = _files(tmp_path / "local")
    assert len(files) == 6 * len(MAP_TABLES)
    assert files == _files(tmp_path / "dask")


def test_a_second_map_replaces_the_first(traces_dir: Path, tmp_path: Path) -> None:
    map_ranks([replicate(traces_dir, tmp_path / "four", 4)], tmp_path / "out", workers=1)
    map_ranks([replicate(traces_dir, tmp_path / "two", 2)], tmp_path / "out", workers=1)
    assert len(_files(tmp_path / "out")) == 2 * len(MAP_TABLES)


def test_two_files_of_one_rank_are_refused(traces_dir: Path, tmp_path: Path) -> None:
    path = traces_dir / SOURCE.format(0)
    copy = tmp_path / "copy" / "again.json.gz"
    copy.parent.mkdir()
    copy.write_bytes(path.read_bytes())
    with pytest.raises(ParityError, match="both claim rank 0"):
        map_ranks([path, copy], tmp_path / "out", workers=1)


def test_bad_arguments_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(ParityError, match="no such file"):
        map_ranks([tmp_path / "missing.json"], tmp_path / "out")
    with pytest.raises(ParityError, match="unknown executor"):
        map_ranks([tmp_path], tmp_path / "out", executor="ray")
    with pytest.raises(ParityError, match="scheduler"):
        map_ranks([tmp_path], tmp_path / "out", executor="dask")


def test_one_worker_maps_in_this_process_and_writes_what_the_pool_writes(traces_dir: Path, tmp_path: Path) -> None:
    """With one worker (or one rank) the calling process maps the ranks itself, no process
    started; the files are the pool's, byte for byte."""
    import parity.trace.fleet.executor as executor

    fleet = replicate(traces_dir, tmp_path / "fleet", 3)
    before = _children()
    started: list[int] = []
    real = executor.ProcessPoolExecutor

    class Counting(real):  # type: ignore[misc, valid-type]
        def __init__(self, *args, **kwargs) -> None:
            started.append(kwargs["max_workers"])
            super().__init__(*args, **kwargs)

    executor.ProcessPoolExecutor = Counting
    try:
        one = map_ranks([fleet], tmp_path / "one", workers=1)
        single = map_ranks([fleet / "trace-000.json.gz"], tmp_path / "single", workers=4)
        assert started == []
        pool = map_ranks([fleet], tmp_path / "pool", workers=8)
        assert started == [3], "the pool holds min(workers, ranks) processes"
    finally:
        executor.ProcessPoolExecutor = real
    assert _children() <= before
    assert one == pool and single == pool[:1]
    assert _files(tmp_path / "one") == _files(tmp_path / "pool")


def test_the_pool_forks_on_linux() -> None:
    import sys

    from parity.trace.fleet.executor import start_method

    assert start_method() == ("fork" if sys.platform.startswith("linux") else "spawn")


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc (Linux)")
def test_the_fleet_command_holds_no_other_thread_when_its_pool_forks() -> None:
    """A process that forks must be single-threaded (Python 3.12 warns otherwise, and a child
    may inherit a lock a vanished thread held): numpy comes without OpenBLAS's threads and
    pyarrow without jemalloc's background thread, as ``parity trace fleet`` loads them."""
    import os
    import subprocess
    import sys

    script = (
        "import os\n"
        "from parity.cli.numpy_load import import_numpy_single_threaded\n"
        "import_numpy_single_threaded()\n"
        "from parity.trace.fleet.executor import import_pyarrow_for_fork\n"
        "import_pyarrow_for_fork()\n"
        "import pyarrow.parquet, numpy\n"
        "print(len(os.listdir('/proc/self/task')), 'JE_ARROW_MALLOC_CONF' in os.environ)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "JE_ARROW_MALLOC_CONF")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "False"], done.stdout  # one thread; the environment as it was
