"""The comm commands on real gloo ranks on the CPU: zero wrong results and the JSON fields,
refused mismatched routing, a killed rank named within a bounded time with the committed cases
kept, and the overlap figures. Sizes are small: these check behaviour, never speed."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from plugin_runs import plugin_env, stored_keys
from verdicts import ok_or_contended, verdict_line

from parity.families.collectives.suite import CollectivesSuite
from parity.families.moe.suite import MoeSuite
from parity.report.views import view_for


class SkewedSeedMoe(MoeSuite):
    """Rank r draws its routing from seed + r: the run must be refused before any exchange."""

    def routing_seed(self, options: Any, rank: int) -> int:
        return options.seed + rank


class DyingCollectives(CollectivesSuite):
    """Rank 1 exits with status 3 at the case named by $PARITY_TEST_DIE_AT."""

    def measure(self, case: Any, *, device: Any, options: Any, state: Any) -> Any:
        if case.key == os.environ.get("PARITY_TEST_DIE_AT") and state.rank == 1:
            os._exit(3)
        return super().measure(case, device=device, options=options, state=state)


def _comm(args: list[str], db: Path, *, plugin: str | None = None, extra: dict[str, str] | None = None,
          timeout: float = 200) -> subprocess.CompletedProcess[str]:
    env = {**plugin_env(db, plugin), **(extra or {})}
    return subprocess.run([sys.executable, "-m", "parity", "comm", *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


def _keys(db: Path) -> list[str]:
    return stored_keys(db)


@pytest.mark.slow
@pytest.mark.torch
def test_collectives_on_four_gloo_ranks_have_zero_wrong_and_the_json_fields(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    done = _comm(["collectives", "--nproc", "4", "--backend", "gloo", "--device", "cpu", "--min-bytes", "1KiB",
                  "--max-bytes", "16KiB", "--factor", "16", "--iterations", "3", "--json", str(out)], tmp_path / "c.sqlite")
    assert done.returncode == 0, done.stderr
    doc = orjson.loads(out.read_bytes())
    doc = {**doc["summary"], **doc}  # the family JSON nests the suite's summary
    assert doc["ok"] and doc["wrong"] == 0 and doc["world_size"] == 4 and doc["backend"] == "gloo"
    ops = {row["op"] for row in doc["rows"]}
    assert ops == {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce", "sendrecv"}
    for row in doc["rows"]:
        assert row["wrong"] == 0 and row["algbw_bps"] > 0 and len(row["rank_median_s"]) == 4
        assert row["fastest_rank_s"] <= row["time_s"] <= row["time_p99_s"]
        factor = {"all_reduce": 1.5, "broadcast": 1.0, "reduce": 1.0, "sendrecv": 1.0}.get(row["op"], 0.75)
        assert row["busbw_bps"] == pytest.approx(row["algbw_bps"] * factor)
        assert row["algbw_bps"] == pytest.approx(row["size_bytes"] / row["time_s"])
    assert {r["placement"] for r in doc["rows"] if r["op"] == "all_gather"} == {"in-place", "out-of-place"}
    assert ok_or_contended(verdict_line(done.stdout, f"run {doc['run_id']}: "))
    if view_for("collectives") is not None:  # the family's own text once it registers its view
        assert "# Avg bus bandwidth" in done.stdout
        assert "(B)" in done.stdout and "(GB/s)" in done.stdout


@pytest.mark.torch
def test_a_collective_on_one_rank_has_no_bus_bandwidth_and_each_case_says_why(tmp_path: Path) -> None:
    """One rank moves no data across a link: every case carries a ``one-rank`` warning, no row
    has a busbw and the suite quotes no bus figure, while algbw stays ``S / t``."""
    out = tmp_path / "out.json"
    done = _comm(["collectives", "--nproc", "1", "--backend", "gloo", "--device", "cpu", "--ops", "all_reduce,broadcast",
                  "--min-bytes", "1KiB", "--max-bytes", "4KiB", "--factor", "4", "--iterations", "3", "--json", str(out)],
                 tmp_path / "c.sqlite")
    assert done.returncode == 0, done.stderr
    doc = orjson.loads(out.read_bytes())
    assert doc["summary"]["world_size"] == 1 and doc["figures"] == []
    assert all(row["busbw_bps"] is None and row["algbw_bps"] > 0 for row in doc["summary"]["rows"])
    assert all("one-rank" in {f["code"] for f in case["findings"]} for case in doc["cases"])
    assert "# Avg bus bandwidth    : n/a GB/s" in done.stdout


@pytest.mark.slow
@pytest.mark.torch
def test_moe_on_two_gloo_ranks_checks_and_labels_every_convention(tmp_path: Path) -> None:
    out = tmp_path / "moe.json"
    done = _comm(["moe", "--nproc", "2", "--backend", "gloo", "--device", "cpu", "--preset", "custom",
                  "--tokens", "16", "--hidden", "256", "--top-k", "3", "--experts", "8", "--skew", "1.0",
                  "--iterations", "3", "--json", str(out)], tmp_path / "m.sqlite")
    assert done.returncode == 0, done.stderr
    doc = orjson.loads(out.read_bytes())
    doc = {**doc["summary"], **doc}  # the family JSON nests the suite's summary
    assert doc["ok"] and doc["wrong"] == 0 and doc["routing"] == "zipf(s=1)" and doc["imbalance_ratio"] >= 1
    assert [r["key"] for r in doc["rows"]] == ["custom/fp8/dispatch", "custom/fp8/combine",
                                               "custom/bf16/dispatch", "custom/bf16/combine"]
    for row in doc["rows"]:
        names = {c["name"]: c for c in row["conventions"]}
        assert set(names) == {"algorithm", "logical", "cross_rank", "bus"}
        assert all(c["convention"] for c in row["conventions"])
        # every rank sends each of its 16 tokens' 3 copies: 48 rows of the dispatch format
        row_bytes = 256 + 4 * 2 if row["key"] == "custom/fp8/dispatch" else 512
        assert names["algorithm"]["bytes"] == 48 * row_bytes
        assert names["cross_rank"]["bytes"] < names["logical"]["bytes"] <= names["algorithm"]["bytes"]
        assert names["bus"]["bps"] == pytest.approx(names["logical"]["bps"] * 0.5)
        assert row["busbw_bps"] == pytest.approx(names["bus"]["bps"]) and len(row["rank_median_s"]) == 2


@pytest.mark.slow
@pytest.mark.torch
def test_ranks_with_different_routing_are_refused_before_any_exchange(tmp_path: Path) -> None:
    db = tmp_path / "seed.sqlite"
    done = _comm(["moe", "--nproc", "2", "--backend", "gloo", "--device", "cpu", "--preset", "custom",
                  "--tokens", "8", "--hidden", "128", "--top-k", "2", "--experts", "4", "--rank-timeout", "30"],
                 db, plugin="test_comm_ranks:SkewedSeedMoe")
    assert done.returncode == 2
    line = done.stderr.strip().splitlines()[-1]
    assert "rank 1 has a different routing (digest) than rank 0" in line, done.stderr
    assert _keys(db) == []


@pytest.mark.slow
@pytest.mark.torch
def test_a_rank_killed_mid_run_is_named_within_bounds_and_the_cases_stay(tmp_path: Path) -> None:
    db = tmp_path / "dies.sqlite"
    started = time.monotonic()
    done = _comm(["collectives", "--nproc", "2", "--backend", "gloo", "--device", "cpu", "--ops", "all_reduce",
                  "--min-bytes", "1KiB", "--max-bytes", "16KiB", "--factor", "4", "--iters", "3",
                  "--rank-timeout", "10"], db, plugin="test_comm_ranks:DyingCollectives",
                 extra={"PARITY_TEST_DIE_AT": "all_reduce/fp32/in-place/16384"})
    assert time.monotonic() - started < 60 + 60  # the run itself takes seconds; 60 s beyond it at most
    assert done.returncode == 2
    line = done.stderr.strip().splitlines()[-1]
    assert "rank 1" in line and "continue with parity run --resume" in line, done.stderr
    assert _keys(db) == ["all_reduce/fp32/in-place/1024", "all_reduce/fp32/in-place/4096"]


@pytest.mark.slow
@pytest.mark.torch
def test_overlap_on_two_gloo_ranks_reports_alone_together_and_slowdown(tmp_path: Path) -> None:
    out = tmp_path / "o.json"
    done = _comm(["overlap", "--nproc", "2", "--backend", "gloo", "--device", "cpu", "--tokens", "32",
                  "--hidden", "256", "--gemm-n", "128", "--copy-bytes", "1MiB", "--iterations", "3", "--json", str(out)],
                 tmp_path / "o.sqlite")
    assert done.returncode == 0, done.stderr
    doc = orjson.loads(out.read_bytes())
    doc = {**doc["summary"], **doc}  # the family JSON nests the suite's summary
    assert [r["key"] for r in doc["rows"]] == ["dispatch+gemm", "dispatch+copy"]
    for row in doc["rows"]:
        assert row["ok"]
        for part in ("exchange", "kernel"):
            alone, together = row[f"{part}_alone_s"], row[f"{part}_together_s"]
            assert alone > 0 and together > 0
            assert row[f"{part}_slowdown"] == pytest.approx(together / alone)
        a, b = row["exchange_alone_s"], row["kernel_alone_s"]
        assert row["overlap_fraction"] == pytest.approx((a + b - row["both_s"]) / min(a, b))
    case = doc["cases"][0]
    assert set(case["samples"]) == {"main", "exchange_alone", "kernel_alone", "exchange_together", "kernel_together"}
    assert all(s["method"] == "max-over-ranks" for s in case["samples"].values())
