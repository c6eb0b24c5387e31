"""Run the map (:func:`parity.trace.fleet.mapper.summarize_rank`) over many ranks' traces.

Two executors, chosen by the caller, writing the same files:

- ``"local"``: ``min(workers, ranks)`` processes, one rank per task, closed before the call
  returns; with one worker asked or one rank, the calling process maps the ranks itself, one
  after another (the choice is the arguments', never the machine's load). The pool's processes
  are forked where the platform forks safely (Linux) once this module and pyarrow's Parquet
  writer are imported, so a worker starts with the analysis loaded instead of importing numpy,
  pyarrow and parity again (about a second of fixed cost on a small job); elsewhere they are
  spawned. A process that forks must hold no other thread: ``parity trace fleet`` loads numpy
  without OpenBLAS's threads and pyarrow without jemalloc's (:func:`import_pyarrow_for_fork`). The caller holds only imported modules when it forks (no trace), so a worker holds
  one rank at a time and memory is bounded by the largest rank times the workers.
- ``"dask"``: the same tasks on a Dask distributed cluster: ``distributed.Client(scheduler)``
  for a scheduler address (the cluster's workers must reach the trace paths and ``out``: a
  shared filesystem), or with ``scheduler="local"`` a ``LocalCluster`` of ``workers``
  single-threaded worker processes on loopback, created and closed by the call.

Each task writes its own rank's files; the executor never merges anything, so the output does
not depend on it. ``progress(done, total)`` is called as ranks finish (for an ETA).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from pathlib import Path

from parity.model.errors import ParityError
from parity.trace.fleet.mapper import MAP_DIR, summarize_rank
from parity.trace.fleet.tables import MAP_TABLES
from parity.trace.load import _FAMILY, _expand

log = logging.getLogger(__name__)
EXECUTORS = ("local", "dask")
Progress = Callable[[int, int], None]


def rank_paths(paths: list[str | Path]) -> list[str]:
    """Every rank trace in ``paths`` (files, Ascend folders or folders of ranks, expanded as
    ``load_trace`` does), as absolute paths in the order given."""
    units = [str(unit.resolve()) for p in paths for unit in _expand(Path(p))]
    if not units:
        raise ParityError("no trace paths given; pass rank trace files or folders of them")
    return units


def default_workers() -> int:
    """Processes when the caller names none: the CPUs this process may use."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


@contextmanager
def own_resource_tracker():
    """Stop multiprocessing's resource tracker on the way out if this call started it: spawned
    pools and clusters start that helper process, which otherwise outlives the call (one the
    caller had running already is left alone)."""
    from multiprocessing import resource_tracker

    tracker = getattr(resource_tracker, "_resource_tracker", None)
    running = getattr(tracker, "_pid", None) is not None
    try:
        yield
    finally:
        if tracker is not None and not running and getattr(tracker, "_pid", None) is not None:
            stop = getattr(tracker, "_stop", None)
            if stop is not None:
                stop()


def import_pyarrow_for_fork() -> None:
    """Import pyarrow's Parquet module without the background thread of the jemalloc that
    libarrow carries (``JE_ARROW_MALLOC_CONF=background_thread:false``, read once as the library
    loads, then removed so that processes started later see the environment as it was), unless
    pyarrow is loaded already or the user configured that jemalloc. The local pool forks this
    process: a process holding other threads when it forks risks a child stuck on a lock one of
    them held (Python 3.12 warns of it), and arrow's default memory pool is not jemalloc, so the
    thread does nothing for the map."""
    if "pyarrow" in sys.modules or "JE_ARROW_MALLOC_CONF" in os.environ:
        import pyarrow.parquet  # noqa: F401
        return
    os.environ["JE_ARROW_MALLOC_CONF"] = "background_thread:false"
    try:
        import pyarrow.parquet  # noqa: F401
    finally:
        del os.environ["JE_ARROW_MALLOC_CONF"]


def clear_map(out: str | Path) -> None:
    """Remove the rank files a previous map left in ``OUT/map`` (only ``rank-*.parquet``)."""
    for name in MAP_TABLES:
        for old in (Path(out) / MAP_DIR / name).glob("rank-*.parquet"):
            old.unlink()


def start_method() -> str:
    """How the local pool starts its processes: ``fork`` on Linux (the parent has imported the
    map and holds no trace, so a child inherits the imports and nothing else), ``spawn``
    elsewhere (macOS and Windows do not fork safely)."""
    return "fork" if sys.platform.startswith("linux") else "spawn"


def _in_process(units: list[str], out: str, rules, progress: Progress | None) -> list[dict]:
    """The ranks mapped by the calling process, one after another."""
    results = []
    for done, unit in enumerate(units, start=1):
        results.append(summarize_rank(unit, out, rules=rules))
        if progress is not None:
            progress(done, len(units))
    return results


def _local(units: list[str], out: str, workers: int, rules, progress: Progress | None) -> list[dict]:
    if workers == 1 or len(units) == 1:
        return _in_process(units, out, rules, progress)
    results: list[dict | None] = [None] * len(units)
    context = multiprocessing.get_context(start_method())
    with ProcessPoolExecutor(max_workers=min(workers, len(units)), mp_context=context) as pool:
        futures = {pool.submit(summarize_rank, unit, out, rules=rules): i for i, unit in enumerate(units)}
        try:
            for done, future in enumerate(as_completed(futures), start=1):
                results[futures[future]] = future.result()
                if progress is not None:
                    progress(done, len(units))
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    return results  # type: ignore[return-value]


def _dask(units: list[str], out: str, workers: int, scheduler: str, rules, progress: Progress | None) -> list[dict]:
    try:
        from distributed import Client, LocalCluster, as_completed as dask_completed
    except ImportError:
        raise ParityError("the dask executor needs dask.distributed; install parity's extra: "
                          "pip install 'parity[fleet]'") from None  # fmt: skip
    cluster = None
    if scheduler == "local":
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                               host="127.0.0.1")  # fmt: skip
    try:
        with Client(cluster if cluster is not None else scheduler) as client:
            futures = [client.submit(summarize_rank, unit, out, rules=rules, key=f"parity-map-{i}-{unit}", pure=False)
                       for i, unit in enumerate(units)]  # fmt: skip
            index = {f.key: i for i, f in enumerate(futures)}
            results: list[dict | None] = [None] * len(units)
            for done, future in enumerate(dask_completed(futures), start=1):
                results[index[future.key]] = future.result()
                if progress is not None:
                    progress(done, len(units))
            return results  # type: ignore[return-value]
    except OSError as exc:
        raise ParityError(f"cannot reach the dask scheduler {scheduler!r} ({exc}); give its address, "
                          "e.g. tcp://10.0.0.1:8786, or 'local'") from None  # fmt: skip
    finally:
        if cluster is not None:
            cluster.close()


def check_ranks(results: list[dict]) -> None:
    """Refuse what ``load_trace`` refuses: two traces claiming one rank, or traces of different
    profilers (they cannot be ranks of one job)."""
    seen: dict[int, str] = {}
    for r in results:
        if r["rank"] in seen:
            raise ParityError(f"{seen[r['rank']]} and {r['source']} both claim rank {r['rank']}; "
                              "pass the files of one run, one per rank")  # fmt: skip
        seen[r["rank"]] = r["source"]
    families = {_FAMILY.get(r["format"], r["format"]): r["source"] for r in results}
    if len(families) > 1:
        named = ", ".join(f"{family} ({source})" for family, source in families.items())
        raise ParityError(f"traces of different profilers cannot be ranks of one job: {named}; "
                          "pass the files of one run, one per rank")


def map_ranks(paths, out: str | Path, *, executor: str = "local", workers: int | None = None,
              scheduler: str | None = None, progress: Progress | None = None, rules=None) -> list[dict]:
    """Map every rank trace of ``paths`` into ``OUT/map`` (module docstring); the tasks'
    results (:func:`summarize_rank`) sorted by rank. ``rules``: a category rules file, as
    ``parity trace analyze --rules`` (a path: each task loads it)."""
    if executor not in EXECUTORS:
        raise ParityError(f"unknown executor {executor!r}; use one of {', '.join(EXECUTORS)}")
    if executor == "dask" and not scheduler:
        raise ParityError("the dask executor needs a scheduler address, or 'local' for a LocalCluster")
    try:
        import_pyarrow_for_fork()  # before the pool forks: its workers inherit it
    except ImportError:
        raise ParityError("the fleet analysis writes Parquet and needs pyarrow; install parity's extra: "
                          "pip install 'parity[fleet]'") from None  # fmt: skip
    units = rank_paths(list(paths) if isinstance(paths, (list, tuple)) else [paths])
    rules = str(Path(rules).resolve()) if rules is not None else None
    workers = workers or default_workers()
    if workers < 1:
        raise ParityError(f"workers={workers}; give 1 or more")
    out = str(Path(out).resolve())
    Path(out).mkdir(parents=True, exist_ok=True)
    clear_map(out)
    log.info("mapping %d ranks with the %s executor, %d workers", len(units), executor, workers)
    with own_resource_tracker():
        if executor == "local":
            results = _local(units, out, workers, rules, progress)
        else:
            results = _dask(units, out, workers, scheduler, rules, progress)
    check_ranks(results)
    return sorted(results, key=lambda r: r["rank"])
