"""A suite defined here, measured by ``parity run`` on 2 real gloo ranks on the CPU.

``AllReduceSuite`` declares its work (one ``all_reduce`` of a float32 tensor, its algorithm
bytes under the nccl-tests convention) and its check (the sum over ranks is exact); the runner
and harness do the rest: every rank measures, time is the maximum over ranks per iteration,
rank 0 alone writes the store. The tests run the whole command as a user does, kill it with
SIGKILL mid-way and resume it, export it, and end it by killing one rank.
"""

from __future__ import annotations

import csv
import os
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from plugin_runs import kill_after_stored, plugin_env, stored_keys

from parity.harness.options import option
from parity.harness.suite import CaseSpec, SuiteBase
from parity.harness.work import Work
from parity.model.figure import Figure
from parity.model.result import CaseResult

ALGORITHM_BYTES = "nccl-tests algbw: bytes of the buffer per rank"


@dataclass(frozen=True, kw_only=True)
class AllReduceOptions:
    sizes: tuple[int, ...] = option((1024, 4096), help="elements per buffer")
    sleep_s: float = option(0.0, help="pause per case, s, so a test can kill the run mid-way", minimum=0.0)
    die_at: str = option("", help="key at which rank 1 exits with status 3")
    hang_at: str = option("", help="key at which rank 1 sleeps for two minutes")


class AllReduceSuite(SuiteBase):
    """all_reduce(SUM) over the default process group, one case per buffer size."""

    name = "allreduce"
    description = "test-only: all_reduce over the ranks' group"
    options_type = AllReduceOptions

    def setup(self, *, device: Any, options: AllReduceOptions) -> dict[str, Any]:
        import torch.distributed as dist

        return {"rank": dist.get_rank(), "world": dist.get_world_size()}

    def cases(self, *, device: Any, quick: bool, options: AllReduceOptions) -> list[CaseSpec]:
        return [CaseSpec(suite=self.name, key=f"sum/{n}", params={"elements": n}) for n in options.sizes]

    def measure(self, case: CaseSpec, *, device: Any, options: AllReduceOptions, state: dict[str, Any]) -> Work:
        import torch
        import torch.distributed as dist

        if case.key == options.die_at and state["rank"] == 1:
            os._exit(3)
        if case.key == options.hang_at and state["rank"] == 1:
            time.sleep(120)
        time.sleep(options.sleep_s)
        n, rank, world = int(case.params["elements"]), state["rank"], state["world"]
        buffer = torch.empty(n, dtype=torch.float32)

        def call() -> None:
            buffer.fill_(float(rank + 1))
            dist.all_reduce(buffer)

        def check() -> dict[str, Any]:
            expected = world * (world + 1) / 2
            return {"passed": bool((buffer == expected).all()), "method": f"every element is sum(1..{world})"}

        return Work(call=call, check=check, bytes=4.0 * n, bytes_convention=ALGORITHM_BYTES,
                    warmup_s=0.0, budget_s=0.02, min_samples=5, max_samples=20, flush_cache=False,
                    metrics={"world_size": world})

    def summarize(self, results: list[CaseResult], *, options: AllReduceOptions) -> dict[str, Any]:
        good = [r for r in results if r.ok]
        return {"cases": len(good), "largest_bps": max((r.metrics["bytes_per_s"] for r in good), default=None)}

    def figures(self, summary: dict[str, Any]) -> list[Figure]:
        return [Figure(name="allreduce.algbw.largest", value=summary["largest_bps"], unit="B/s",
                       method=f"{ALGORITHM_BYTES} / max-over-ranks median time", scope={"cases": summary["cases"]})]


def _env(db: Path) -> dict[str, str]:
    return plugin_env(db, "test_run_ranks:AllReduceSuite")


def _parity(args: list[str], db: Path, *, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "parity", *args], env=_env(db), capture_output=True,
                          text=True, timeout=timeout)


def _stored_keys(db: Path) -> list[str]:
    return stored_keys(db)


@pytest.mark.slow
@pytest.mark.torch
def test_two_gloo_ranks_measure_store_resume_and_export(tmp_path: Path) -> None:
    db = tmp_path / "ranks.sqlite"
    sizes = [256 * (i + 1) for i in range(8)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "parity", "run", "--ranks", "2", "--device", "cpu", "--suite", "allreduce",
         "--set", f"allreduce.sizes={orjson.dumps(sizes).decode()}", "--set", "allreduce.sleep_s=0.3"],
        env=_env(db), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    kill_after_stored(proc, db, cases=2, within_s=180)
    before = _stored_keys(db)
    assert 2 <= len(before) < len(sizes)
    conn = sqlite3.connect(db)
    (run_id,) = {r for (r,) in conn.execute("SELECT DISTINCT run_id FROM cases")}
    conn.close()
    time.sleep(1.0)  # the killed launch's ranks are gone (the launcher ends them with it)

    resumed = _parity(["run", "--resume", run_id, "--json", str(tmp_path / "r.json")], db)
    assert resumed.returncode == 0, resumed.stderr
    assert sorted(_stored_keys(db)) == sorted(f"sum/{n}" for n in sizes)
    doc = orjson.loads((tmp_path / "r.json").read_bytes())
    assert doc["ok"] and doc["run"]["status"] == "complete"
    target = doc["run"]["provenance"]["target"]
    assert target["kind"] == "ranks" and target["identity"]["world_size"] == 2
    assert [p["rank"] for p in target["provenance"]] == [0, 1]
    for case in doc["cases"]:
        assert case["samples"]["main"]["method"] == "max-over-ranks"
        assert len(case["samples"]["main"]["meta"]["min_over_ranks_s"]) == len(case["samples"]["main"]["values_s"])
        assert case["check"]["passed"] and [c["passed"] for c in case["check"]["ranks"]] == [True, True]
        assert case["metrics"]["world_size"] == 2 and case["metrics"]["bytes_per_s"] > 0
    (figure,) = doc["suites"][0]["figures"]
    assert figure["name"] == "allreduce.algbw.largest" and figure["unit"] == "B/s" and figure["value"] > 0

    exported = tmp_path / "run.csv"
    export = _parity(["runs", "export", run_id, "--format", "csv", "--output", str(exported)], db)
    assert export.returncode == 0, export.stderr
    rows = list(csv.DictReader(exported.open()))
    assert len(rows) == len(sizes) and all(r["check_passed"] == "True" for r in rows)


@pytest.mark.slow
@pytest.mark.torch
def test_a_rank_that_dies_ends_the_run_naming_it_and_keeps_the_cases(tmp_path: Path) -> None:
    db = tmp_path / "dies.sqlite"
    done = _parity(["run", "--ranks", "2", "--device", "cpu", "--suite", "allreduce", "--rank-timeout", "20",
                    "--set", "allreduce.sizes=[64,128,256]", "--set", "allreduce.die_at=sum/256"], db)
    assert done.returncode == 2
    line = done.stderr.strip().splitlines()[-1]
    assert "rank 1" in line and "continue with parity run --resume" in line, done.stderr
    assert sorted(_stored_keys(db)) == ["sum/128", "sum/64"]


@pytest.mark.slow
@pytest.mark.torch
def test_a_rank_that_hangs_ends_the_run_within_the_rank_timeout(tmp_path: Path) -> None:
    db = tmp_path / "hangs.sqlite"
    started = time.monotonic()
    done = _parity(["run", "--ranks", "2", "--device", "cpu", "--suite", "allreduce", "--rank-timeout", "5",
                    "--set", "allreduce.sizes=[64,128]", "--set", "allreduce.hang_at=sum/128"], db, timeout=110)
    assert time.monotonic() - started < 100  # the hang lasts 120 s; the run ends on the 5 s step timeout
    assert done.returncode == 2
    line = done.stderr.strip().splitlines()[-1]
    assert "rank 1" in line and "continue with parity run --resume" in line, done.stderr
    assert _stored_keys(db) == ["sum/64"]


def test_rank_zeros_progress_travels_as_json_lines_read_whole(tmp_path: Path) -> None:
    from parity.harness.progress import ProgressEvent
    from parity.harness.ranked import _progress_writer, read_progress

    path = tmp_path / "events.jsonl"
    write = _progress_writer(str(path))
    first = ProgressEvent(phase="start", done=0, total=3, run_id="r")
    write(first)
    with path.open("a") as out:
        out.write('{"phase": "case", "done"')  # a line still being written is not read yet
    events, offset = read_progress(str(path), offset=0)
    assert events == [first]
    with path.open("a") as out:
        out.write(': 1, "total": 3}\n')
    events, _ = read_progress(str(path), offset=offset)
    assert events == [ProgressEvent(phase="case", done=1, total=3)]
    assert read_progress(str(tmp_path / "none.jsonl"), offset=0) == ([], 0)
