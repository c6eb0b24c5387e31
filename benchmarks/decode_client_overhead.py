"""The online client's own overhead per streamed chunk, and the concurrency at which one client
process saturates, against the scripted streaming server (tests/serving_script.py) on loopback.

For each concurrency (up to 1,000 streams) one wave of requests per stream runs twice, each
request streaming ``--tokens`` tokens ``--gap-ms`` apart after ``--ttft-ms``; the script's
schedule is the truth. Per level it prints:

- the client's CPU per streamed event (its process CPU time over the events it handled: aiohttp,
  the kernel's socket work and parity's parsing) and, within it, parity's own handling (parse
  and bookkeeping, timed per event);
- the client process's busy fraction and event-loop lag p99, and the server process's busy
  fraction (psutil), so a saturated server is told apart from a saturated client;
- measured median TTFT and TPOT against the script (error in %).

One client process saturates at the first level where its busy fraction reaches 80% or its
median TPOT is more than 2% off the script while the server is under 80% busy (a server at 80%
is reported as the limit instead). The one-process ceiling in events/s is ``1 / CPU per
event``; at ``--gap-ms`` it is ``gap / CPU per event`` streams. Bounded: loopback only, every
level ends by itself, the server stops after ``--lifetime-s``.

    python benchmarks/decode_client_overhead.py
    python benchmarks/decode_client_overhead.py --levels 1,100,1000 --gap-ms 50 --json out.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import psutil  # noqa: E402
from serving_script import scripted_server  # noqa: E402

from parity.families.decode.serving.client import request_body  # noqa: E402
from parity.families.decode.serving.level import summarize_level  # noqa: E402
from parity.families.decode.serving.load import level_items, run_level, split_shares  # noqa: E402
from parity.families.decode.serving.prompts import random_prompts  # noqa: E402

BUSY_LIMIT = 0.8
TPOT_TOLERANCE = 0.02


def measure(url: str, server: psutil.Process, *, concurrency: int, args: argparse.Namespace) -> dict:
    count = 2 * concurrency
    bodies = [request_body(p, endpoint_type="completions", model="scripted-model", output_tokens=args.tokens,
                           ignore_eos=True) for p in random_prompts(count, length=(32, 32), seed=concurrency)]
    shares = split_shares(level_items(bodies, [0.0] * count), procs=args.client_procs, concurrency=concurrency,
                          url=url + "/v1/completions", headers={}, timeout_s=120)
    server_cpu0, wall0 = sum(server.cpu_times()[:2]), time.perf_counter()
    run = run_level(shares)
    server_busy = (sum(server.cpu_times()[:2]) - server_cpu0) / (time.perf_counter() - wall0)
    level = summarize_level(run, concurrency=concurrency, rate_per_s_asked=math.inf, burstiness=1.0, cards=1)
    f, client = level.fields, level.fields["client"]
    events = sum(c.events for c in run.clients)
    cpu = sum(c.cpu_s for c in run.clients)
    return {
        "concurrency": concurrency, "completed": f["completed"], "requests": count, "events": events,
        "client_cpu_us_per_event": cpu / events * 1e6 if events else None,
        "handling_us_per_event": client["handling_us_per_event"],
        "client_busy": client["busy_fraction_max"], "loop_lag_p99_ms": client["loop_lag_p99_ms"],
        "server_busy": server_busy,
        "median_ttft_ms": f["median_ttft_ms"], "median_tpot_ms": f["median_tpot_ms"],
        "ttft_error": (f["median_ttft_ms"] - args.ttft_ms) / args.ttft_ms if f["median_ttft_ms"] else None,
        "tpot_error": (f["median_tpot_ms"] - args.gap_ms) / args.gap_ms if f["median_tpot_ms"] else None,
        "findings": [x.code for x in level.findings],
    }


def verdict(rows: list[dict]) -> str:
    for row in rows:
        off = row["tpot_error"] is None or abs(row["tpot_error"]) > TPOT_TOLERANCE
        if row["server_busy"] >= BUSY_LIMIT and (off or row["client_busy"] < BUSY_LIMIT):
            return f"the server saturated first, at {row['concurrency']} streams (server {row['server_busy']:.0%} busy)"
        if row["client_busy"] >= BUSY_LIMIT or off:
            return (f"one client process saturates at {row['concurrency']} streams "
                    f"(client {row['client_busy']:.0%} busy, TPOT {row['tpot_error']:+.1%} off the script)")
    return f"one client process did not saturate up to {rows[-1]['concurrency']} streams"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="1,10,50,100,200,400,700,1000")
    parser.add_argument("--ttft-ms", type=float, default=100.0)
    parser.add_argument("--gap-ms", type=float, default=50.0)
    parser.add_argument("--tokens", type=int, default=20)
    parser.add_argument("--client-procs", type=int, default=1)
    parser.add_argument("--lifetime-s", type=float, default=600.0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    rows = []
    with scripted_server("--ttft-ms", str(args.ttft_ms), "--gap-ms", str(args.gap_ms),
                         "--lifetime-s", str(args.lifetime_s)) as (url, proc):
        server = psutil.Process(proc.pid)
        print(f"scripted server {url}: TTFT {args.ttft_ms:g} ms, gap {args.gap_ms:g} ms, {args.tokens} tokens; "
              f"{args.client_procs} client process(es)")
        print(f"{'streams':>7} {'done':>9} {'cpu us/ev':>9} {'parse us/ev':>11} {'client':>6} {'lag p99':>8} "
              f"{'server':>6} {'TTFT ms':>8} {'err':>6} {'TPOT ms':>8} {'err':>6}  findings")
        for concurrency in levels:
            row = measure(url, server, concurrency=concurrency, args=args)
            rows.append(row)
            print(f"{row['concurrency']:>7} {row['completed']:>4}/{row['requests']:<4} "
                  f"{row['client_cpu_us_per_event']:>9.1f} {row['handling_us_per_event']:>11.1f} "
                  f"{row['client_busy']:>6.0%} {row['loop_lag_p99_ms']:>6.2f}ms {row['server_busy']:>6.0%} "
                  f"{row['median_ttft_ms']:>8.2f} {row['ttft_error']:>+6.1%} {row['median_tpot_ms']:>8.3f} "
                  f"{row['tpot_error']:>+6.1%}  {','.join(row['findings']) or '-'}", flush=True)
    best = min(r["client_cpu_us_per_event"] for r in rows if r["client_cpu_us_per_event"])
    print(f"client CPU per event (lowest level figure): {best:.1f} us -> one process handles at most "
          f"{1e6 / best:,.0f} events/s, {args.gap_ms * 1e3 / best:,.0f} streams at a {args.gap_ms:g} ms gap")
    print(verdict(rows))
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "levels": rows, "verdict": verdict(rows)}, indent=2))


if __name__ == "__main__":
    main()
