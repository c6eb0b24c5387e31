"""Bars (a) and (b): parity against HTA (HolisticTraceAnalysis) on the real Kineto traces.

(a) Correctness: HTA's temporal breakdown gives, per rank, ``kernel_time`` (first kernel start
    to last kernel end) and ``idle_time``; device union busy = kernel_time - idle_time. parity's
    figure is ``analyze(...).device.busy_ns`` over the same kernels and span: HTA keeps the
    device activities whose launching CPU event starts before the last ``ProfilerStep``
    (``include_last_profiler_step=False``, its default) and counts ``cuda_sync`` waits on a
    stream as busy, so the benchmark gives parity the same rows (syncs relabelled as kernels
    for this comparison only) and a window equal to their span. HTA runs with
    ``HTA_DISABLE_NS_ROUNDING=1``: by default it rounds each start up and each end down to a
    whole µs, which on traces of short kernels loses percent of the busy time; that default
    figure is printed beside it, as is parity's own figure (syncs not counted).
    Bar: within 0.1% on every trace where HTA's GPU set holds only device events (where HTA
    counts a host event that carries a ``stream`` argument, such as a Triton launcher's CPU op,
    the trace is listed with the reason instead).
    Then a renamed case: a real NCCL trace whose NCCL kernels are renamed to DeepEP, HCCL and MC2
    names. HTA (name rule ``^nccl.*Kernel``) moves them to compute; parity keeps them in
    communication.
(b) Speed: wall time of parity's ``load_trace`` + ``analyze`` (default window, every metric)
    against HTA's ``TraceAnalysis(trace_dir)`` + ``get_temporal_breakdown()``, same trace, same
    machine, in rounds: each round runs HTA (in its own process, kept alive between rounds)
    twice in a row and parity twice in a row, the order of the two tools swapped every round,
    so that both sides of a round see the machine in the same state. The second call of each
    pair is the *warm* time (code and data cached, the CPU busy already), the one the bar uses,
    as each tool would run inside a longer session; the first is the *cold* time, right after
    the other tool ran, printed beside it (a few-millisecond call pays for its caches and a
    sleeping CPU there, which a call of seconds does not notice). parity reads a file from
    ``parallel.TWO_PROCESS_BYTES`` up in two processes, the second one forked for each read. The
    speed-up of a trace is the median over rounds of HTA's time over parity's; a first round
    of each is left out. Short traces get more rounds (until HTA has run ``--min-seconds`` in
    all), because on a noisy machine a few milliseconds move by tens of percent between
    moments.
    Bar: HTA / parity >= 10 (warm) on the largest trace; the last line says whether it holds on
    every trace, naming those below it with both medians.

HTA runs in its own virtual environment (``benchmarks/.venv-hta``, made on first use from
``benchmarks/requirements-hta.txt``: HTA needs pandas below 3) through ``hta_breakdown.py``.

    python benchmarks/trace_vs_hta.py                 # all Kineto traces HTA can read
    python benchmarks/trace_vs_hta.py --repeats 7 --traces negative_queue_length_values_check
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import orjson

from parity.trace import RankAnalysis, analyze, load_trace
from parity.trace.categories import COMMUNICATION
from parity.trace.table import NO_ID, ActivityTable, Kind
from parity.trace.window import step_markers

HERE = Path(__file__).resolve().parent
VENV = HERE / ".venv-hta"
TRACES = HERE.parent.parent / "shared/data/traces/kineto/hta"
CORRECTNESS_BAR = 0.001
SPEED_BAR = 10.0
RENAMES = ("void deep_ep::intranode::dispatch<8, 768, 4096>(int4*, float*)",
           "hcom_allReduce__586_0_1", "aclnnMatmulAllReduce_MatmulAllReduce_0")


def hta_python() -> Path:
    """The venv's interpreter, creating the venv with HTA on first use."""
    python = VENV / "bin" / "python"
    if not python.exists():
        print(f"creating {VENV} with {HERE / 'requirements-hta.txt'} (first run only)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "-r", str(HERE / "requirements-hta.txt")],
                       check=True)
    return python


def run_hta(trace: Path, repeats: int, *, exact: bool = True) -> dict | None:
    """HTA's breakdown; ``exact`` sets HTA_DISABLE_NS_ROUNDING=1 (HTA otherwise rounds every
    start up and every end down to a whole µs, shrinking each kernel by up to 2 µs)."""
    env = dict(os.environ, HTA_DISABLE_NS_ROUNDING="1" if exact else "0")
    done = subprocess.run([str(hta_python()), str(HERE / "hta_breakdown.py"), str(trace), str(repeats)],
                          capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        print(f"  HTA failed on {trace.name}: {last[:160]}")
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def hta_kernel_set(table: ActivityTable, *, with_sync: bool) -> np.ndarray:
    """Device rows HTA keeps: launched (by correlation) before the last ProfilerStep starts, or
    without a correlation id;
    ``with_sync`` adds the ``cuda_sync`` rows on a stream, which HTA counts as busy time."""
    device = table.device_mask()
    if with_sync:
        device |= (table.kind == Kind.SYNC) & (table.device >= 0) & (table.stream >= 0)
    steps, starts, _ = step_markers(table)
    if len(steps) < 2:
        return device
    host = np.flatnonzero((table.device < 0) & (table.kind != Kind.STEP) & (table.correlation != NO_ID))
    launch = dict(zip(table.correlation[host].tolist(), table.start_ns[host].tolist()))
    last = int(starts.max())
    rows = np.flatnonzero(device)
    # a row without a correlation id is kept: HTA fills the missing id with a value that
    # matches host events (the MTIA traces have such rows)
    early = np.array([c == NO_ID or launch.get(c, last) < last for c in table.correlation[rows].tolist()],
                     dtype=bool)
    keep = np.zeros(len(table), dtype=bool)
    keep[rows[early]] = True
    return keep


def parity_like_hta(table: ActivityTable, *, with_sync: bool) -> RankAnalysis:
    """parity's ``analyze`` over HTA's rows and span. With ``with_sync`` the stream syncs are
    counted as device activity, as HTA does (parity's own figure leaves waits out: a stream
    waiting on an event does no work)."""
    keep = hta_kernel_set(table, with_sync=with_sync)
    kind = table.kind.copy()
    if with_sync:
        kind[keep & (kind == Kind.SYNC)] = Kind.KERNEL
    relabelled = ActivityTable(**{c: getattr(table, c) for c in ActivityTable.COLUMNS if c != "kind"},
                               kind=kind, names=table.names, extra=table.extra, meta=table.meta)
    device = relabelled.device_mask()
    sub = relabelled.take(keep | ~device)
    span = (int(table.start_ns[keep].min()), int(table.end_ns[keep].max()))
    return analyze(sub, window=span).first


def time_parity(trace: Path) -> float:
    start = time.perf_counter()
    analyze(load_trace([trace]))
    return time.perf_counter() - start


def _reply(process: subprocess.Popen, errors) -> dict:
    """The next JSON line HTA's process writes (anything HTA itself prints is skipped)."""
    for line in process.stdout:
        if line.startswith("{"):
            return json.loads(line)
    errors.seek(0)
    raise RuntimeError(f"HTA's process ended early: {errors.read().decode(errors='replace').strip()[-300:]}")


def paired_rounds(trace: Path, repeats: int, min_seconds: float) -> dict[str, list[float]]:
    """HTA and parity timed in alternating rounds (HTA first in even rounds, parity first in odd
    ones), each tool called twice in a row per round (cold, then warm), after one round left
    out; at least ``repeats`` rounds and, for short traces, more, until HTA's warm calls have
    run ``min_seconds`` in all (at most ``4 * repeats``). Returns the per-round times under
    ``hta``, ``parity``, ``hta_cold``, ``parity_cold`` and HTA's report (rows of its last run)
    under ``report``."""
    env = dict(os.environ, HTA_DISABLE_NS_ROUNDING="1")
    errors = tempfile.TemporaryFile()  # a file, not a pipe: HTA's chatter cannot block it
    process = subprocess.Popen([str(hta_python()), str(HERE / "hta_breakdown.py"), str(trace), "--serve"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors,
                               text=True, env=env)

    def hta_once() -> float:
        process.stdin.write("run\n")
        process.stdin.flush()
        return _reply(process, errors)["t"]

    times: dict = {"hta": [], "parity": [], "hta_cold": [], "parity_cold": []}

    def pair(tool: str, call) -> None:
        times[f"{tool}_cold"].append(call())
        times[tool].append(call())

    try:
        for line in process.stdout:
            if line.strip() == "ready":
                break
        hta_once(), time_parity(trace)  # a round left out: imports, first allocations
        while len(times["hta"]) < repeats or (sum(times["hta"]) < min_seconds and len(times["hta"]) < 4 * repeats):
            order = [("hta", hta_once), ("parity", lambda: time_parity(trace))]
            for tool, call in order if len(times["hta"]) % 2 == 0 else order[::-1]:
                pair(tool, call)
        process.stdin.write("\n")
        process.stdin.flush()
        times["report"] = _reply(process, errors)
    finally:
        process.stdin.close()
        process.wait()
        errors.close()
    return times


def renamed_copy(source: Path, folder: Path) -> Path:
    """The trace with its NCCL kernels renamed, in turn, to DeepEP, HCCL and MC2 names."""
    with gzip.open(source, "rb") as handle:
        data = orjson.loads(handle.read())
    k = 0
    for event in data["traceEvents"]:
        if event.get("cat") == "kernel" and str(event.get("name", "")).startswith("nccl"):
            event["name"] = RENAMES[k % len(RENAMES)]
            k += 1
    target = folder / source.name
    with gzip.open(target, "wb") as handle:
        handle.write(orjson.dumps(data))
    return target


def _busy_us(row: dict) -> float:
    """HTA's device busy: kernel_time (first start to last end) minus idle_time, µs."""
    return row["kernel_time(us)"] - row["idle_time(us)"]


def comm_us(trace: Path) -> float:
    """parity's communication time over the same kernels and span as HTA's breakdown, µs."""
    rank = parity_like_hta(load_trace([trace]), with_sync=False)
    return next((c.time_ns for c in rank.categories if c.category == COMMUNICATION), 0) / 1e3


def deepep_case(repeats: int) -> None:
    source = TRACES / "nccl_parser_config/nccl_data.json.gz"
    with tempfile.TemporaryDirectory(prefix="parity-renamed-") as tmp:
        renamed = renamed_copy(source, Path(tmp))
        rows = []
        for label, path in (("original (ncclKernel_*)", source), ("renamed (DeepEP/HCCL/MC2)", renamed)):
            hta = run_hta(path, 1)
            if hta is None:
                return
            h = hta["rows"][0]
            rows.append((label, h["compute_time(us)"], h["non_compute_time(us)"], comm_us(path)))
    print("\n(a') communication kernels that HTA does not know: " + ", ".join(r.split("(")[0] for r in RENAMES))
    print(f"  {'trace':28} {'HTA compute us':>15} {'HTA non-compute us':>19} {'parity communication us':>24}")
    for label, comp, non, comm in rows:
        print(f"  {label:28} {comp:15.1f} {non:19.1f} {comm:24.1f}")
    moved = rows[1][1] - rows[0][1]
    print(f"  HTA moves {moved:.1f} us of communication into compute; parity's communication changes by "
          f"{rows[1][3] - rows[0][3]:+.1f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description="parity vs HTA: device busy time and speed")
    parser.add_argument("--repeats", type=int, default=7, help="rounds per trace, at least (default 7)")
    parser.add_argument("--min-seconds", type=float, default=5.0,
                        help="add rounds until HTA has run this long in all (default 5.0)")
    parser.add_argument("--traces", nargs="*", help="folder names under kineto/hta (default: all)")
    args = parser.parse_args()
    traces = sorted(p for p in TRACES.rglob("*.json*") if not p.name.endswith("_et.json.gz"))
    if args.traces:
        traces = [p for p in traces if any(t in str(p) for t in args.traces)]
    print(f"{'trace':50} {'HTA busy us':>12} {'parity us':>12} {'diff':>9} {'HTA rounded':>12} "
          f"{'parity no-sync':>14} {'HTA s':>7} {'parity s':>8} {'ratio':>6} {'cold':>5}")
    worst, ratios, excluded = 0.0, {}, {}
    hta_times, parity_times, rounds, cold = {}, {}, {}, {}
    for trace in traces:
        try:
            table = load_trace([trace])
        except Exception as exc:  # noqa: BLE001 - a trace parity refuses is reported, not fatal
            print(f"{str(trace.relative_to(TRACES))[-50:]:50} parity refuses: {str(exc)[:60]}")
            continue
        if not table.device_mask().any():
            continue
        rounded = run_hta(trace, 1, exact=False)
        if rounded is None:
            continue
        runs = paired_rounds(trace, args.repeats, args.min_seconds)
        hta = runs["report"]
        hta_busy = _busy_us(hta["rows"][0])
        busy = parity_like_hta(table, with_sync=True).device.busy_ns / 1e3
        own = parity_like_hta(table, with_sync=False).device.busy_ns / 1e3
        diff = (busy - hta_busy) / hta_busy if hta_busy else 0.0
        if hta.get("host_rows"):
            name, cat, dur = hta["host_rows"][0]
            excluded[trace] = (f"HTA counts {len(hta['host_rows'])} host event(s) with a stream argument as "
                               f"GPU time, e.g. {cat} '{name[:40]}' ({dur:.1f} us); parity does not")
        else:
            worst = max(worst, abs(diff))
        hta_s, parity_s = statistics.median(runs["hta"]), statistics.median(runs["parity"])
        ratios[trace] = statistics.median(h / p for h, p in zip(runs["hta"], runs["parity"]))
        cold[trace] = statistics.median(h / p for h, p in zip(runs["hta_cold"], runs["parity_cold"]))
        rounds[trace] = len(runs["hta"])
        hta_times[trace], parity_times[trace] = hta_s, parity_s
        print(f"{str(trace.relative_to(TRACES))[-50:]:50} {hta_busy:12.1f} {busy:12.1f} {diff:+9.5%} "
              f"{_busy_us(rounded['rows'][0]):12.1f} {own:14.1f} {hta_s:7.3f} {parity_s:8.3f} {ratios[trace]:6.1f} {cold[trace]:5.1f}")
    print("HTA busy: HTA_DISABLE_NS_ROUNDING=1; 'HTA rounded': HTA's default, which rounds each start up "
          "and end down to whole us; 'parity no-sync': parity's own figure, cuda_sync waits not counted")
    deepep_case(args.repeats)
    if not ratios:
        sys.exit("no trace could be compared")
    largest = max(ratios, key=lambda p: p.stat().st_size)
    for trace, reason in excluded.items():
        print(f"not in bar (a): {trace.relative_to(TRACES)}: {reason}")
    print(f"\n(a) worst |busy difference| {worst:.5%} (bar {CORRECTNESS_BAR:.1%}): "
          f"{'PASS' if worst <= CORRECTNESS_BAR else 'FAIL'}")
    print(f"(b) speed-up on the largest trace {largest.relative_to(TRACES)}: {ratios[largest]:.1f}x "
          f"(median of {rounds[largest]} rounds; bar {SPEED_BAR:.0f}x): {'PASS' if ratios[largest] >= SPEED_BAR else 'FAIL'}; "
          f"median over traces {statistics.median(ratios.values()):.1f}x, lowest {min(ratios.values()):.1f}x; "
          f"cold calls: median {statistics.median(cold.values()):.1f}x, lowest {min(cold.values()):.1f}x")
    below = {t: r for t, r in ratios.items() if r < SPEED_BAR}
    print(f"(b) every trace: {len(ratios) - len(below)} of {len(ratios)} at >= {SPEED_BAR:.0f}x: "
          f"{'PASS' if not below else 'FAIL'}" + "".join(
              f"\n    below: {t.relative_to(TRACES)} {r:.1f}x (HTA {hta_times[t]:.3f} s, parity {parity_times[t]:.3f} s; "
              f"cold {cold[t]:.1f}x)"
              for t, r in sorted(below.items(), key=lambda x: x[1])))


if __name__ == "__main__":
    main()
