"""parity's online client and offline engine mode against a real vLLM on the CPU (tier
``serving``; skipped with the reason where vLLM is not installed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def generation_tokens(url: str) -> float:
    """The server's own count of tokens generated so far (Prometheus ``/metrics``)."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as answer:
        lines = answer.read().decode().splitlines()
    return sum(float(line.rpartition(" ")[2]) for line in lines if line.startswith("vllm:generation_tokens_total"))


def parity_command(*args: str, python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([python, "-m", "parity", *args], capture_output=True, text=True, env=env, timeout=600)


def test_online_sweep_counts_every_token_the_server_generated(vllm_server, tmp_path: Path) -> None:
    url, model, _ = vllm_server
    before = generation_tokens(url)
    out = tmp_path / "online.json"
    done = parity_command("decode", "online", "--url", url, "--model", model, "--concurrency", "1,4",
                          "--num-requests", "8", "--input-tokens", "64", "--output-tokens", "16",
                          "--db", str(tmp_path / "p.sqlite"), "--json", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    levels = json.loads(out.read_text())["levels"]
    assert [level["max_concurrency"] for level in levels] == [1, 4]
    for level in levels:
        assert level["completed"] == 8 and level["failed"] == 0
        assert level["total_output_tokens"] == 8 * 16  # ignore_eos honoured, counts from usage
        assert level["token_count_source"] == "usage.completion_tokens"
        assert 0 < level["median_ttft_ms"] < level["median_e2el_ms"]
        assert level["median_tpot_ms"] > 0 and level["output_throughput"] > 0
        # TTFT starts before the post (vLLM's start), so the send time lies inside it, and each
        # request's client TTFT holds the server's own (arrival to first token): so do the means.
        assert 0 <= level["median_send_ms"] < level["median_ttft_ms"]
        assert level["mean_ttft_ms"] >= level["server"]["server_ttft_s"] * 1e3
    # The server generated what the client counted: 2 levels x 8 requests x 16, plus the warm-up request.
    assert generation_tokens(url) - before == 2 * 8 * 16 + 16


def test_offline_engine_gives_a_front_and_the_step_model_beside_it(vllm_python, vllm_server, tmp_path: Path) -> None:
    _, _, model_path = vllm_server
    out = tmp_path / "engine.json"
    done = parity_command("decode", "offline", "--engine", "vllm", "--model", str(model_path), "--batches", "1,4",
                          "--input-tokens", "32", "--output-tokens", "8", "--tpot-ms", "1000",
                          "--budget-s", "0.01", "--db", str(tmp_path / "p.sqlite"), "--json", str(out),
                          python=vllm_python)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert "offline, engine: vllm" in done.stdout and "beside parity's step model" in done.stdout
    doc = json.loads(out.read_text())
    engine = doc["engine"]
    assert engine["mode"] == "offline, engine" and [p["batch"] for p in engine["points"]] == [1, 4]
    assert all(p["ok"] and p["tpot_s"] > 0 for p in engine["points"])
    assert engine["pareto"], "a front of at least one batch"
    for point in engine["points"]:
        assert point["tokens_per_s_per_card"] == pytest.approx(point["batch"] / point["tpot_s"])
    resolved = engine["engine_args"]["resolved"]  # set up as vllm bench throughput: only these asked
    assert resolved["max_num_seqs"] == 4 and resolved["max_model_len"] == 32 + 8 + 16
    assert set(engine["engine_args"]["asked"]) == {"model", "dtype", "seed", "max_model_len", "max_num_seqs",
                                                   "kv_cache_memory_bytes"}
    assert [p["batch"] for p in doc["step_model"]["points"]] == [1, 4]
    assert doc["step_model"]["mode"] == "offline"
