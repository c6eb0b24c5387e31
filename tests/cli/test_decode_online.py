"""``parity decode online`` against the scripted streaming server: both real processes over
127.0.0.1. The script's schedule is the truth (TTFT, per-token gap); the tests check the JSON,
the store, the client processes, the labels, the errors, and the accuracy bar (TTFT and TPOT
within 2% of the script at 1 and 32 concurrent streams)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from serving_script import scripted_server

pytest.importorskip("aiohttp")

TTFT_MS, GAP_MS = 200.0, 10.0
LEVEL_KEYS = {"median_ttft_ms", "median_tpot_ms", "p99_tpot_ms", "median_itl_ms", "output_throughput",
              "request_throughput", "completed", "failed", "mean_ttft_ms", "p99_ttft_ms", "mean_tpot_ms",
              "p90_tpot_ms", "mean_itl_ms", "p99_itl_ms", "median_e2el_ms", "p99_e2el_ms", "duration",
              "total_output_tokens", "max_concurrency", "request_rate", "output_throughput_per_card",
              "interactivity_per_user", "output_throughput_per_concurrency", "request_goodput",
              "token_count_source", "client"}


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with scripted_server("--ttft-ms", str(TTFT_MS), "--gap-ms", str(GAP_MS)) as (url, _):
        yield url


def _parity(args: list[str], tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    out = tmp_path / "out.json"
    done = subprocess.run([sys.executable, "-m", "parity", "decode", "online", *args, "--json", str(out),
                           "--db", str(tmp_path / "r.sqlite")], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})
    return done, (orjson.loads(out.read_bytes()) if out.exists() else {})


def _stored(tmp_path: Path, run_id: str) -> tuple[object, list]:
    from parity.store import Store

    with Store.open(tmp_path / "r.sqlite") as store:
        return store.get_run(run_id), store.cases(run_id)


def test_the_headline_command_writes_levels_and_stores_a_run(server: str, tmp_path: Path) -> None:
    done, doc = _parity(["--url", server, "--model", "scripted-model", "--concurrency", "1,4", "--num-requests", "4",
                         "--output-tokens", "8", "--slo", "ttft_ms=1000,tpot_ms=50", "--tpot-ms", "10.5,1",
                         "--cards", "2"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert [level["max_concurrency"] for level in doc["levels"]] == [1, 4]
    for level in doc["levels"]:
        assert LEVEL_KEYS <= set(level), LEVEL_KEYS - set(level)
        assert level["completed"] == 4 and level["total_output_tokens"] == 32
        assert level["token_count_source"] == "usage.completion_tokens" and level["check"]["passed"]
        assert level["request_goodput"] == pytest.approx(level["request_throughput"])
        assert level["output_throughput_per_card"] == pytest.approx(level["output_throughput"] / 2)
    assert doc["labels"]["source"] == "parity decode online" and doc["labels"]["tpot_excludes_first_token"]
    search = doc["tpot_target"]
    assert search["tpot_statistic"] == "p50" and search["cards"] == 2 and search["pareto"]
    slow_end = max(p["tpot_ms"] for p in search["pareto"])
    above, below = search["at_target"]
    assert below["value"] == "not reached" and "below the fastest" in below["reason"]
    assert (above["value"] == "not reached") == (slow_end < 10.5)
    run, cases = _stored(tmp_path, doc["run_id"])
    assert run.config["mode"] == "online" and run.config["suites"] == ["serving"]
    assert run.provenance["target"]["identity"]["model"] == "scripted-model"
    assert [c.key for c in cases] == ["concurrency/1", "concurrency/4"]
    for case in cases:
        assert {"median_tpot_s", "p99_tpot_s", "median_ttft_s", "median_itl_s", "output_throughput",
                "output_throughput_per_card"} <= set(case.metrics)
        assert len(case.samples["ttft"]) == 4 and len(case.samples["itl"]) == 4 * 7 and case.ok


# An 800 ms first token and 20 ms between tokens: 32 requests arriving at once cost the 2-core
# machine's server and client about 4 ms of accept and send work (measured +1% at 400 ms), well
# inside 2% of this first token, and 32 streams at 20 ms leave both event loops time to spare.
ACCURACY_TTFT_MS, ACCURACY_GAP_MS = 800.0, 20.0


@pytest.mark.slow
def test_ttft_and_tpot_are_within_two_percent_of_the_script_at_1_and_32_streams(tmp_path: Path) -> None:
    with scripted_server("--ttft-ms", str(ACCURACY_TTFT_MS), "--gap-ms", str(ACCURACY_GAP_MS)) as (url, _):
        levels = []
        for concurrency, requests in ((1, 6), (32, 64)):
            done, doc = _parity(["--url", url, "--concurrency", str(concurrency), "--num-requests", str(requests),
                                 "--output-tokens", "32"], tmp_path)
            assert done.returncode == 0, done.stderr
            levels.extend(doc["levels"])
    for level in levels:
        assert level["median_ttft_ms"] == pytest.approx(ACCURACY_TTFT_MS, rel=0.02), level
        assert level["median_tpot_ms"] == pytest.approx(ACCURACY_GAP_MS, rel=0.02), level
        assert level["median_itl_ms"] == pytest.approx(ACCURACY_GAP_MS, rel=0.05), level


def test_chat_without_usage_counts_content_chunks_and_says_so(tmp_path: Path) -> None:
    with scripted_server("--ttft-ms", "20", "--gap-ms", "2", "--no-usage") as (url, _):
        done, doc = _parity(["--url", url, "--endpoint-type", "chat", "--request-rate", "50", "--burstiness", "0.5",
                             "--num-requests", "6", "--output-tokens", "5", "--client-procs", "2"], tmp_path)
    assert done.returncode == 0, done.stderr
    (level,) = doc["levels"]
    assert level["max_concurrency"] is None and level["request_rate"] == 50.0 and level["client"]["procs"] == 2
    assert level["completed"] == 6 and level["total_output_tokens"] == 30  # the role-only delta is no token
    assert level["token_count_source"].startswith("content chunks")
    assert "tokens-from-chunks" in {f["code"] for f in level["findings"]}
    assert doc["labels"]["tokens"] == "chunks (no usage)"


def test_the_api_key_is_sent_and_never_stored(tmp_path: Path) -> None:
    with scripted_server("--ttft-ms", "5", "--gap-ms", "1", "--api-key", "s3cret-k3y") as (url, _):
        refused, _ = _parity(["--url", url, "--num-requests", "1"], tmp_path)
        done, doc = _parity(["--url", url, "--num-requests", "2", "--output-tokens", "3",
                             "--api-key-env", "PARITY_TEST_KEY"], tmp_path, PARITY_TEST_KEY="s3cret-k3y")
    assert refused.returncode == 2 and "HTTP 401" in refused.stderr and len(refused.stderr.splitlines()) == 1
    assert done.returncode == 0, done.stderr and doc["levels"][0]["completed"] == 2
    for path in tmp_path.iterdir():
        assert b"s3cret-k3y" not in path.read_bytes(), path


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_bad_url_and_a_server_that_does_not_stream_are_one_line_errors(tmp_path: Path) -> None:
    done, _ = _parity(["--url", f"http://127.0.0.1:{_closed_port()}", "--num-requests", "1"], tmp_path)
    assert done.returncode == 2 and "cannot reach" in done.stderr and len(done.stderr.splitlines()) == 1
    done, _ = _parity(["--url", "ftp://x", "--num-requests", "1"], tmp_path)
    assert done.returncode == 2 and "is not http(s)" in done.stderr
    with scripted_server("--no-stream") as (url, _):
        done, _ = _parity(["--url", url, "--num-requests", "1"], tmp_path)
    assert done.returncode == 2 and "does not stream" in done.stderr and len(done.stderr.splitlines()) == 1
    done, _ = _parity(["--url", "http://127.0.0.1:1", "--slo", "ttft=3"], tmp_path)
    assert done.returncode == 2 and "--slo" in done.stderr
