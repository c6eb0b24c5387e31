"""The interleaved check of ``decode_vs_vllm.py``: vLLM's own request function
(``vllm.benchmarks.lib.endpoint_request_func.async_request_openai_completions``) and parity's
(``parity.families.decode.serving.client.stream_request``) alternated request by request in one
process, so both meet the same host and server moment by moment. Whole-command rounds on a
shared host differ by whatever the host did during each run; this check leaves only what the two
request functions do differently.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

def interleaved_worker(url: str, model: str, model_path: str, pairs: int, seed: int, args: argparse.Namespace) -> dict:
    """Run in vLLM's Python: vLLM's own request function and parity's, each on its own session
    configured as its tool configures it, alternated request by request at concurrency 1 on
    distinct prompts of vLLM's random dataset (never cached), so both see the same host and server
    moment by moment. Returns each tool's per-request TTFT, TPOT (s) and ITL gaps (s)."""
    import asyncio

    import aiohttp
    from transformers import AutoTokenizer
    from vllm.benchmarks.datasets.datasets import RandomDataset
    from vllm.benchmarks.lib.endpoint_request_func import RequestFuncInput, async_request_openai_completions

    sys.path.insert(0, str(ROOT / "src"))
    from parity.families.decode.serving.client import READ_BUFFER_BYTES, request_body, sent_tracing, stream_request
    from parity.families.decode.serving.prompts import Prompt

    api = url + "/v1/completions"
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    prompts = [r.prompt for r in RandomDataset(random_seed=seed).sample(
        tokenizer=tokenizer, num_requests=2 * pairs + 2, input_len=args.input_tokens, output_len=args.output_tokens)]

    async def run() -> dict:
        vllm_session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(
            limit=1, limit_per_host=1, ttl_dns_cache=300, use_dns_cache=True, keepalive_timeout=60,
            enable_cleanup_closed=True, force_close=False, ssl=False), trust_env=True,
            timeout=aiohttp.ClientTimeout(total=600))
        parity_session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), read_bufsize=READ_BUFFER_BYTES,
                                               trace_configs=[sent_tracing()], trust_env=False)

        async def vllm(prompt: str) -> tuple[float, float, list[float]]:
            o = await async_request_openai_completions(RequestFuncInput(
                prompt=prompt, api_url=api, prompt_len=args.input_tokens, output_len=args.output_tokens, model=model,
                ignore_eos=True), vllm_session)
            if not o.success:
                raise RuntimeError(o.error)
            return o.ttft, (o.latency - o.ttft) / max(o.output_tokens - 1, 1), list(o.itl)

        async def parity(prompt: str) -> tuple[float, float, list[float]]:
            body = request_body(Prompt(text=prompt), endpoint_type="completions", model=model,
                                output_tokens=args.output_tokens, ignore_eos=True)
            r = await stream_request(parity_session, url=api, body=body, index=0, headers={})
            if not r.ok:
                raise RuntimeError(r.error)
            return r.ttft_s(), (r.e2e_s() - r.ttft_s()) / max(r.output_tokens - 1, 1), r.itl_s()

        out: dict = {"vllm": [], "parity": []}
        try:
            await vllm(prompts[0])  # each session's connection opened before the measured requests
            await parity(prompts[1])
            for i in range(pairs):
                order = ("vllm", "parity") if i % 2 == 0 else ("parity", "vllm")
                for k, tool in enumerate(order):
                    fn = vllm if tool == "vllm" else parity
                    out[tool].append(await fn(prompts[2 + 2 * i + k]))
        finally:
            await vllm_session.close()
            await parity_session.close()
        return out

    return asyncio.run(run())


def interleaved(url: str, model: str, model_path: str, args: argparse.Namespace) -> dict:
    """``interleaved_worker`` in vLLM's Python (a subprocess), its answer read back."""
    main = str(Path(__file__).resolve().with_name("decode_vs_vllm.py"))
    command = [args.vllm_python, main, "--interleaved-worker", url, model, model_path,
               "--interleaved", str(args.interleaved), "--seed-base", str(args.seed_base),
               "--input-tokens", str(args.input_tokens), "--output-tokens", str(args.output_tokens),
               "--vllm-python", args.vllm_python]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"the interleaved check exited {done.returncode}: {done.stderr[-800:]}")
    return json.loads(lines[-1]) | {"load_after": os.getloadavg()[0]}


def interleaved_lines(result: dict) -> list[str]:
    """The interleaved check as report lines: each tool's medians and the median pair ratio."""
    v, p = result["vllm"], result["parity"]
    lines = [f"same requests, interleaved (concurrency 1, one process, {len(v)} pairs, alternated request by request, "
             f"load average {result['load_after']:.1f}):",
             f"  {'figure':<16}{'parity':>10}{'vLLM':>10}{'pair ratio p/v':>16}"]
    for k, label in ((0, "TTFT p50 (ms)"), (1, "TPOT p50 (ms)")):
        ratio = statistics.median(a[k] / b[k] for a, b in zip(p, v) if b[k] > 0)
        lines.append(f"  {label:<16}{statistics.median(a[k] for a in p) * 1e3:>10.3f}"
                     f"{statistics.median(b[k] for b in v) * 1e3:>10.3f}{ratio:>16.3f}")
    pi, vi = [g for a in p for g in a[2]], [g for b in v for g in b[2]]
    lines.append(f"  {'ITL p50 (ms)':<16}{statistics.median(pi) * 1e3:>10.3f}{statistics.median(vi) * 1e3:>10.3f}"
                 f"{statistics.median(pi) / statistics.median(vi):>16.3f}  (pooled medians' ratio)")
    return lines
