"""parity's online client against ``vllm bench serve`` on one real vLLM server (the CPU build),
alternated, with the server's own Prometheus metrics beside both.

The server is the tiny random-weight Llama of ``scripts/vllm_cpu_server.py`` (or ``--url``).
Per round, per concurrency (1, 4, 16 by default), both clients send the same load shape (128
input tokens, 32 output tokens, ``ignore_eos``, ``--num-requests`` requests, completions
endpoint), one after the other, the order reversed every round, fresh prompts per run (seeded by
round, concurrency and a base drawn per invocation, so the server's prefix cache cannot serve one
run from another, nor from an earlier invocation on a reused ``--url`` server; each run's hit rate
is printed). Each run is bracketed by two scrapes of ``/metrics``; the deltas give the server's
view of the same requests (parity's one warm-up request included; vLLM sends none).

Reported per concurrency and figure (median TTFT, median TPOT, median ITL, output throughput):
each tool's median over rounds, and the ratio parity / vLLM per round, with its median and
spread (min to max). Bar: the median ratio within 5% of 1, or the definition that differs named
(see ``DEFINITIONS``: read from vLLM 0.32.0's ``vllm/benchmarks/serve.py`` and
``lib/endpoint_request_func.py``).

    PARITY_VLLM=/work/venvs/vllm/bin/python python benchmarks/decode_vs_vllm.py \\
        --out results/cpu-amd-epyc-2026-12-03/decode_vs_vllm.txt
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from decode_vs_vllm_interleaved import interleaved, interleaved_lines, interleaved_worker  # noqa: E402
from vllm_cpu_server import started_server  # noqa: E402

FIGURES = (("median_ttft_ms", "TTFT p50 (ms)"), ("median_tpot_ms", "TPOT p50 (ms)"),
           ("median_itl_ms", "ITL p50 (ms)"), ("output_throughput", "output tok/s"))
BAR = 0.05
BURST_S = 0.0005  # an ITL gap under this is two events of one TCP read: the server sent a burst
CACHE_FLOOR = 0.01  # a run whose prefix-cache hit rate exceeds this did not measure cold prefills
DEFINITIONS = """Definitions compared (vLLM 0.32.0, vllm/benchmarks/lib/endpoint_request_func.py and serve.py):
- start: both stamp perf_counter just before session.post, once a concurrency slot is free, so TTFT and
  E2E include getting a connection and writing the request (parity adopted vLLM's start). parity also
  stamps the last body byte written; that send time is printed per concurrency above.
- token chunk: vLLM counts every event whose "choices" is non-empty, text or not; parity counts
  events whose text is non-empty. They differ where a token decodes to no text (a special token,
  part of a multi-byte character): parity's ITL then pools the two gaps around it as one, and its
  TTFT/E2E move to the nearest token with text. The tiny model's tokenizer is ASCII-only, so here
  only its two special tokens (2 of 380 ids, ~0.5% of sampled tokens) decode to nothing.
- stamp: vLLM stamps after json.loads of each event, per TCP read (iter_any); parity stamps each
  line as read, before parsing. Events of one read get stamps microseconds apart in both (the burst
  share above). Both pool ITL over all requests; TPOT = (E2E - TTFT)/(tokens - 1) per request,
  tokens from usage.completion_tokens, in both.
- duration: vLLM from before the first request is created to after the last completes; parity from
  the first start stamp to the last request's end. Output throughput = output tokens / duration.
- warm-up: parity sends one request of its own fresh prompt, on a connection of its own, before the
  measured ones; vllm bench serve 0.32.0 sends none by default (--num-warmups 0, and its warm-up
  would repeat the first measured prompt): the server counts 17 and 16 requests per run, and vLLM's
  first measured request is the server's first of the run (its TTFT is printed above). Both clients
  open their measured connections inside the measured requests.
- ratios: per round parity / vLLM of each tool's own median (or throughput); the bar is the median
  over rounds. A round's ratio is only as steady as the host: on 2 shared cores each run's median
  moves by more than 5% between runs of the same tool (the spread column)."""


def scrape(url: str) -> dict[str, float]:
    """``/metrics`` as ``{series: value}`` (labels kept in the series name; comments dropped)."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, _, value = line.rpartition(" ")
        try:
            out[name] = float(value)
        except ValueError:
            continue
    return out


def _series(metrics: dict[str, float], name: str) -> dict[str, float]:
    return {k: v for k, v in metrics.items() if k == name or k.startswith(name + "{")}


def histogram_delta(before: dict[str, float], after: dict[str, float], name: str) -> dict[str, float | None]:
    """Mean (sum/count) and median (linear within the bucket holding half the count) of a
    histogram's change between two scrapes, in its own unit."""
    count = sum(after.get(k, 0) - before.get(k, 0) for k in _series(after, f"{name}_count"))
    total = sum(after.get(k, 0) - before.get(k, 0) for k in _series(after, f"{name}_sum"))
    buckets = []
    for key, value in _series(after, f"{name}_bucket").items():
        le = key.split('le="', 1)[1].split('"', 1)[0]
        buckets.append((float("inf") if le == "+Inf" else float(le), value - before.get(key, 0)))
    buckets.sort()
    median = None
    if count > 0:
        half, low, below = count / 2, 0.0, 0.0
        for upper, cumulative in buckets:
            if cumulative >= half:
                share = (half - below) / (cumulative - below) if cumulative > below else 0.0
                median = low + (upper - low) * share if upper != float("inf") else low
                break
            low, below = upper, cumulative
    return {"count": count, "mean": total / count if count else None, "median": median}


def server_view(before: dict[str, float], after: dict[str, float]) -> dict[str, float | None]:
    """The server's own figures for the requests between two scrapes (ms, tokens)."""
    def counter(name: str) -> float:
        return sum(after.get(k, 0) - before.get(k, 0) for k in _series(after, name))

    ttft = histogram_delta(before, after, "vllm:time_to_first_token_seconds")
    itl = histogram_delta(before, after, "vllm:inter_token_latency_seconds")
    tpot = histogram_delta(before, after, "vllm:request_time_per_output_token_seconds")
    hits, queries = counter("vllm:prefix_cache_hits_total"), counter("vllm:prefix_cache_queries_total")
    ms = lambda v: None if v is None else v * 1e3  # noqa: E731
    return {"requests": ttft["count"], "ttft_mean_ms": ms(ttft["mean"]), "ttft_p50_ms": ms(ttft["median"]),
            "tpot_mean_ms": ms(tpot["mean"]), "tpot_p50_ms": ms(tpot["median"]),
            "itl_mean_ms": ms(itl["mean"]), "itl_p50_ms": ms(itl["median"]),
            "generation_tokens": counter("vllm:generation_tokens_total"),
            "prompt_tokens": counter("vllm:prompt_tokens_total"),
            "prefix_cache_hit_rate": hits / queries if queries else None}


def run_parity(url: str, model: str, *, concurrency: int, requests: int, seed: int, folder: Path,
               args: argparse.Namespace) -> dict:
    out = folder / f"parity-c{concurrency}-s{seed}.json"
    command = [sys.executable, "-m", "parity", "decode", "online", "--url", url, "--model", model,
               "--concurrency", str(concurrency), "--num-requests", str(requests),
               "--input-tokens", str(args.input_tokens), "--output-tokens", str(args.output_tokens),
               "--seed", str(seed), "--db", str(folder / "parity.sqlite"), "--json", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    if not out.is_file():
        raise RuntimeError(f"parity decode online exited {done.returncode}: {done.stderr[-800:]}")
    level = json.loads(out.read_text())["levels"][0]
    return {key: level.get(key) for key, _ in FIGURES} | {
        "completed": level.get("completed"), "total_output_tokens": level.get("total_output_tokens"),
        "duration_s": level.get("duration"), "client_busy": (level.get("client") or {}).get("busy_fraction_max"),
        "median_send_ms": level.get("median_send_ms"), "mean_ttft_ms": level.get("mean_ttft_ms")}


def run_vllm(url: str, model: str, model_path: str, *, concurrency: int, requests: int, seed: int, folder: Path,
             args: argparse.Namespace) -> dict:
    name = f"vllm-c{concurrency}-s{seed}.json"
    vllm = str(Path(args.vllm_python).parent / "vllm")
    command = [vllm, "bench", "serve", "--backend", "vllm", "--base-url", url, "--model", model,
               "--tokenizer", model_path, "--dataset-name", "random",
               "--random-input-len", str(args.input_tokens), "--random-output-len", str(args.output_tokens),
               "--ignore-eos", "--max-concurrency", str(concurrency), "--num-prompts", str(requests),
               "--seed", str(seed), "--percentile-metrics", "ttft,tpot,itl,e2el", "--disable-tqdm",
               "--save-result", "--save-detailed", "--result-dir", str(folder), "--result-filename", name]
    done = subprocess.run(command, capture_output=True, text=True)
    path = folder / name
    if not path.is_file():
        raise RuntimeError(f"vllm bench serve exited {done.returncode}: {(done.stderr or done.stdout)[-800:]}")
    result = json.loads(path.read_text())
    ttfts = [t * 1e3 for t in result.get("ttfts") or [] if t]
    gaps = [g for itl in result.get("itls") or [] for g in itl]
    return {key: result.get(key) for key, _ in FIGURES} | {
        "completed": result.get("completed"), "total_output_tokens": result.get("total_output_tokens"),
        "duration_s": result.get("duration"), "mean_ttft_ms": result.get("mean_ttft_ms"),
        "first_ttft_ms": ttfts[0] if ttfts else None,
        "burst_itl_share": sum(g < BURST_S for g in gaps) / len(gaps) if gaps else None}


def measured(fn, url: str, **kwargs) -> dict:
    """One tool's run with the server's metrics scraped before and after it."""
    load = os.getloadavg()[0]
    before = scrape(url)
    client = fn(url, **kwargs)
    return {"client": client, "server": server_view(before, scrape(url)), "load_before": load,
            "load_after": os.getloadavg()[0]}


def ratio_summary(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def report(runs: list[dict], args: argparse.Namespace, header: list[str]) -> tuple[str, dict]:
    lines = [*header, ""]
    verdicts = {}
    for c in args.concurrency:
        mine = [r for r in runs if r["concurrency"] == c]
        lines.append(f"concurrency {c}: {len(mine)} alternated rounds, {mine[0]['requests']} requests per run")
        lines.append(f"  {'figure':<16}{'parity':>10}{'vLLM':>10}{'ratio p/v':>11}{'spread':>17}{'server':>10}  bar")
        for key, label in FIGURES:
            pairs = [(r["parity"]["client"][key], r["vllm"]["client"][key]) for r in mine
                     if r["parity"]["client"][key] and r["vllm"]["client"][key]]
            if not pairs:
                continue
            ratios = ratio_summary([p / v for p, v in pairs])
            server = _server_figure(key, mine)
            ok = abs(ratios["median"] - 1) <= BAR
            verdicts[f"c{c}:{key}"] = {**ratios, "within_bar": ok}
            lines.append(f"  {label:<16}{statistics.median(p for p, _ in pairs):>10.3f}"
                         f"{statistics.median(v for _, v in pairs):>10.3f}{ratios['median']:>11.3f}"
                         f"{'[' + format(ratios['min'], '.3f') + ', ' + format(ratios['max'], '.3f') + ']':>17}"
                         f"{server:>10}  {'within 5%' if ok else 'OUTSIDE 5%'}")
        lines += context_lines(mine)
        lines.append("")
    inside = sum(v["within_bar"] for v in verdicts.values())
    lines.append(f"bar (median ratio within 5%): {inside} of {len(verdicts)} figures")
    lines.append("server column: the server's own figure over both tools' runs (median of per-run values): TTFT p50 and "
                 "ITL p50 interpolated in /metrics histogram buckets, TPOT its request_time_per_output_token p50, "
                 "output tok/s = generation tokens delta / the client's duration")
    lines += ["", DEFINITIONS]
    return "\n".join(lines) + "\n", verdicts


def _median(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def context_lines(mine: list[dict]) -> list[str]:
    """What the ratios rest on, per concurrency: the host's load, the server's exact TTFT mean
    in each tool's runs, vLLM's first (cold) request, parity's send time, bursts, cache hits."""
    loads = [r[t][k] for r in mine for t in ("parity", "vllm") for k in ("load_before", "load_after")]
    hit = [r[t]["server"]["prefix_cache_hit_rate"] for r in mine for t in ("parity", "vllm")]
    cached = any(h is not None and h > CACHE_FLOOR for h in hit)
    busy = _median([r["parity"]["client"].get("client_busy") for r in mine])
    bursts = [r["vllm"]["client"].get("burst_itl_share") for r in mine]
    return [
        f"  load average (1 min) around these runs: {min(loads):.1f} to {max(loads):.1f} on {os.cpu_count()} cores",
        f"  server TTFT mean (its sum/count, exact; median over rounds): parity's runs "
        f"{_ms(_median([r['parity']['server']['ttft_mean_ms'] for r in mine]))} ms (its warm-up request included), "
        f"vLLM's {_ms(_median([r['vllm']['server']['ttft_mean_ms'] for r in mine]))} ms; client TTFT mean: parity "
        f"{_ms(_median([r['parity']['client'].get('mean_ttft_ms') for r in mine]))}, vLLM "
        f"{_ms(_median([r['vllm']['client'].get('mean_ttft_ms') for r in mine]))} ms",
        f"  vLLM's first request (no warm-up: a new connection, the server's first request of the run) TTFT "
        f"{_ms(_median([r['vllm']['client'].get('first_ttft_ms') for r in mine]))} ms (median over rounds); "
        f"parity's send time (start stamp to last body byte, inside its TTFT) median "
        f"{_median([r['parity']['client'].get('median_send_ms') for r in mine]) or 0:.3f} ms",
        f"  vLLM ITL gaps under {BURST_S * 1e3:g} ms (events of one TCP read: server bursts) per round: "
        + ", ".join("-" if b is None else f"{b:.0%}" for b in bursts),
        f"  server prefix-cache hit rate per run: {', '.join('-' if h is None else f'{h:.0%}' for h in hit)}"
        + (" (CACHED: some run reused prompts the server had seen)" if cached else " (cold prefills)")
        + (f"; parity client busy (median): {busy:.0%}" if busy is not None else ""),
    ]


def _server_figure(key: str, runs: list[dict]) -> str:
    field = {"median_ttft_ms": "ttft_p50_ms", "median_tpot_ms": "tpot_p50_ms", "median_itl_ms": "itl_p50_ms"}.get(key)
    values = []
    for r in runs:
        for tool in ("parity", "vllm"):
            s, c = r[tool]["server"], r[tool]["client"]
            if field:
                values.append(s.get(field))
            elif c.get("duration_s"):
                values.append(s["generation_tokens"] / c["duration_s"])
    values = [v for v in values if v is not None]
    return f"{statistics.median(values):.3f}" if values else "-"



def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vllm-python", default=os.environ.get("PARITY_VLLM"),
                        help="Python of an environment with vllm-cpu (default: $PARITY_VLLM)")
    parser.add_argument("--url", default=None, help="a running vLLM server (default: start the tiny one)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=lambda s: [int(x) for x in s.split(",")], default=[1, 4, 16])
    parser.add_argument("--num-requests", type=int, default=16, help="per run; at least 2 x concurrency is used")
    parser.add_argument("--seed-base", type=int, default=None,
                        help="added to every run's prompt seed (default: from the clock, printed), so a reused "
                             "server (--url) has never seen this invocation's prompts in its prefix cache")
    parser.add_argument("--input-tokens", type=int, default=128)
    parser.add_argument("--output-tokens", type=int, default=32)
    parser.add_argument("--time-limit", type=float, default=1800.0, help="the server stops after this many s")
    parser.add_argument("--layers", type=int, default=4, help="decoder layers of the served model")
    parser.add_argument("--hidden", type=int, default=1024,
                        help="its hidden size: 1024 makes a decode step a few ms here; at 256 (under 1 ms) the "
                             "server delivers tokens in bursts on a busy host and median ITL and TPOT are ~0")
    parser.add_argument("--workdir", type=Path, default=None, help="server folder (the model is kept and reused)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--interleaved", type=int, default=0,
                        help="after the rounds, this many request pairs of vLLM's and parity's request functions "
                             "alternated in one process at concurrency 1 (0: none)")
    parser.add_argument("--interleaved-worker", nargs=3, metavar=("URL", "MODEL", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.interleaved_worker:
        print(json.dumps(interleaved_worker(*args.interleaved_worker, args.interleaved, args.seed_base or 0, args)))
        return 0
    if not args.vllm_python:
        parser.error("give --vllm-python or set PARITY_VLLM to the Python of an environment with vllm-cpu")
    if args.seed_base is None:
        args.seed_base = int(time.time()) % 100_000 * 10_000
    folder = Path(tempfile.mkdtemp(prefix="decode-vs-vllm-"))
    runs: list[dict] = []
    begin = time.monotonic()
    workdir = args.workdir or folder / "server"
    shape = ("--layers", str(args.layers), "--hidden", str(args.hidden))
    with started_server(args.vllm_python, workdir, time_limit_s=args.time_limit, url=args.url, extra=shape) as (url, model):
        info = json.loads((workdir / "server.json").read_text())
        model_path = info.get("model_path") or model
        for rnd in range(args.rounds):
            for c in args.concurrency:
                requests = max(args.num_requests, 2 * c)
                seed = args.seed_base + 1000 * (rnd + 1) + c
                order = ("parity", "vllm") if rnd % 2 == 0 else ("vllm", "parity")
                row: dict = {"round": rnd, "concurrency": c, "requests": requests, "order": order}
                for tool in order:
                    if tool == "parity":
                        row[tool] = measured(run_parity, url, model=model, concurrency=c, requests=requests,
                                             seed=seed, folder=folder, args=args)
                    else:
                        row[tool] = measured(run_vllm, url, model=model, model_path=model_path, concurrency=c,
                                             requests=requests, seed=seed + 500, folder=folder, args=args)
                runs.append(row)
                if args.out and c == args.concurrency[-1]:  # a round's report, kept if a later round is cut
                    write(args.out, *report(runs, args, header(args, info, model_path, begin, rnd + 1)), runs)
                print(f"[{time.monotonic() - begin:6.0f} s] round {rnd + 1}/{args.rounds} c={c}: "
                      + "; ".join(f"{t} TTFT {row[t]['client']['median_ttft_ms']:.2f} TPOT "
                                  f"{row[t]['client']['median_tpot_ms']:.2f} tok/s "
                                  f"{row[t]['client']['output_throughput']:.1f}" for t in order), flush=True)
        check = interleaved(url, model, model_path, args) if args.interleaved else None
    text, verdicts = report(runs, args, header(args, info, model_path, begin, args.rounds))
    if check:
        check_lines = "\n".join(["", *interleaved_lines(check), "", "Definitions compared"])
        text = text.replace("\nDefinitions compared", check_lines, 1)
        verdicts["interleaved"] = check
    print(text)
    if args.out:
        write(args.out, text, verdicts, runs)
    return 0


def header(args: argparse.Namespace, info: dict, model_path: str, begin: float, rounds: int) -> list[str]:
    command = " ".join(["python", "benchmarks/decode_vs_vllm.py", *sys.argv[1:]])
    return [f"PARITY_VLLM={args.vllm_python} {command}",
            f"parity decode online vs vllm bench serve on vLLM {info.get('vllm_version', '0.32.0 (vllm-cpu)')}, "
            f"CPU, model {info.get('shape') or model_path}",
            f"{args.input_tokens} in, {args.output_tokens} out, ignore_eos, completions, {rounds} of {args.rounds} "
            f"rounds, order reversed each round, prompt seeds from {args.seed_base}; "
            f"{time.monotonic() - begin:.0f} s in all; "
            f"load average at the end {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"]


def write(out: Path, text: str, verdicts: dict, runs: list[dict]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    out.with_suffix(".json").write_text(json.dumps({"runs": runs, "verdicts": verdicts}, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
