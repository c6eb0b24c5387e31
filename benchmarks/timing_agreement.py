"""Bar: parity's timing core agrees with the reference timers on the same work.

For each workload, in the same process and interleaved (parity, reference, parity, reference...)
so machine drift hits both sides alike:

- ``torch.utils.benchmark.Timer.blocked_autorange`` (every device) against
  ``parity.timing.measure(..., flush_cache=False)``: neither flushes. Medians and minima are both
  printed. The bar is on the minima, ``|parity min / torch min - 1| <= 10%``: torch's values are
  means over blocks of calls, so on a busy machine its median absorbs preemptions that parity's
  per-call median leaves out, while both minima estimate the undisturbed cost.
- on CUDA, ``triton.testing.do_bench`` (which flushes the L2 before each call) against
  ``parity.timing.measure(..., flush_cache=True)``, printed beside it for reference.

This compares timers, not devices: on a CPU both sides run with ``--threads`` torch threads
(default 1, since an OpenMP team on a busy machine stalls whenever one thread is descheduled).

Prints one row per workload with both medians (microseconds) and their ratio, and exits 1 when a
workload misses the bar.

    python benchmarks/timing_agreement.py                 # best local device
    python benchmarks/timing_agreement.py --device cpu --rounds 5
"""

from __future__ import annotations

import argparse
import statistics
import sys

BAR = 0.10


def workloads(device, dtype_names: list[str]) -> list[tuple[str, object]]:
    """(label, zero-argument callable) pairs: square matmuls of a few sizes and dtypes."""
    sizes = (128, 256, 512) if device.type == "cpu" else (1024, 4096, 8192)
    work = []
    for dtype in dtype_names:
        for n in sizes:
            a = device.random_tensor((n, n), dtype)
            b = device.random_tensor((n, n), dtype)
            work.append((f"matmul {n}^3 {dtype}", lambda a=a, b=b: a @ b))
    return work


def torch_times_s(fn, device, min_run_time_s: float) -> tuple[float, float]:
    """(median, min) of blocked_autorange's per-block mean times, in seconds.

    The Timer runs with torch's current thread count, like parity (its default is one thread).
    """
    import torch
    from torch.utils import benchmark

    timer = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
    if device.type != "cpu":
        device.synchronize()
    m = timer.blocked_autorange(min_run_time=min_run_time_s)
    return m.median, min(m.times)


def triton_median_s(fn) -> float:
    """``triton.testing.do_bench``'s median (it returns milliseconds)."""
    from triton.testing import do_bench

    return do_bench(fn, warmup=25, rep=200, return_mode="median") * 1e-3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="cpu, cuda:0, ... (default: best here)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per workload")
    parser.add_argument("--budget-s", type=float, default=0.3, help="time budget per measurement")
    parser.add_argument("--dtypes", default="float32,bfloat16", help="comma-separated dtypes")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads for both sides (default 1: least disturbed by other load)",
    )
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)

    from parity.device import get_device
    from parity.timing import measure

    device = get_device(args.device)
    print(f"device {device.name}: {device.properties().name}, {args.threads} CPU thread(s)")
    header = (
        f"{'workload':<24} {'parity med us':>13} {'torch med us':>12} {'ratio':>6}"
        f" {'parity min us':>13} {'torch min us':>12} {'ratio':>6}"
    )
    has_triton = device.type == "cuda"
    if has_triton:
        header += f" {'parity+flush us':>15} {'do_bench us':>11} {'ratio':>6}"
    print(header)
    failed = []
    for label, fn in workloads(device, args.dtypes.split(",")):
        ours, theirs, ours_flushed, bench = [], [], [], []
        for _ in range(args.rounds):
            m = measure(fn, device=device, budget_s=args.budget_s, flush_cache=False)
            ours.append((m.summary.median, m.summary.min))
            theirs.append(torch_times_s(fn, device, args.budget_s))
            if has_triton:
                flushed = measure(fn, device=device, budget_s=args.budget_s, flush_cache=True)
                ours_flushed.append(flushed.summary.median)
                bench.append(triton_median_s(fn))
        p_med = statistics.median(v[0] for v in ours)
        t_med = statistics.median(v[0] for v in theirs)
        p_min = min(v[1] for v in ours)
        t_min = min(v[1] for v in theirs)
        ratio = p_min / t_min
        line = (
            f"{label:<24} {p_med * 1e6:>13.1f} {t_med * 1e6:>12.1f} {p_med / t_med:>6.3f}"
            f" {p_min * 1e6:>13.1f} {t_min * 1e6:>12.1f} {ratio:>6.3f}"
        )
        if has_triton:
            pf, tb = statistics.median(ours_flushed), statistics.median(bench)
            line += f" {pf * 1e6:>15.1f} {tb * 1e6:>11.1f} {pf / tb:>6.3f}"
        if abs(ratio - 1) > BAR:
            failed.append(label)
            line += "  MISSES BAR"
        print(line, flush=True)
    verdict = "OK" if not failed else f"FAILED ({', '.join(failed)})"
    print(f"bar: |parity min / torch min - 1| <= {BAR:.0%} on every workload: {verdict}")
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
