"""The warm fixed cost of a small copy: parity's membw fit against a bare timed torch copy loop.

One run, alternated rounds. Each round measures, in alternating order:

1. parity: the membw suite's own warm cases (``copy/<bytes>/warm``: repeated, no flush) at
   1 KiB .. 1 MiB, one per octave, and the fit ``t = a + V/b`` over them; the figure is ``a``,
   the warm fixed cost the suite quotes (and, beside it, the 1 KiB point's median);
2. bare: ``dst.copy_(src)`` of 1 KiB called ``--calls`` times back to back between two
   ``time.perf_counter`` reads, the total divided by the calls (no per-call synchronisation:
   the CPU copy is synchronous), repeated ``--loops`` times, the median kept.

Bar: the median over rounds of parity's warm ``a`` is within 2x of the median bare 1 KiB copy
(``0.5 <= a / bare <= 2``). The cold fixed cost (the same sizes with the cache flushed before
each call) is printed beside it, to show what the flush adds.

    python benchmarks/membw_fixed_cost.py --rounds 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

BAR = 2.0
SIZES = [2**k for k in range(10, 21)]


def parity_fit(*, flush: bool, budget_s: float) -> dict[str, float]:
    """The membw suite's cases at SIZES (warm, or cold with ``flush``) and their fit."""
    from parity.families.membw.suite import MembwSuite
    from parity.families.membw.options import MembwOptions
    from parity.harness.suite import CaseSpec
    from parity.device import get_device
    from parity.metrics.bandwidth import fit_fixed_cost

    cpu = get_device("cpu")
    suite = MembwSuite()
    options = MembwOptions(budget_s=budget_s)
    volumes, times = [], []
    regime = "cold" if flush else "warm"
    for size in SIZES:
        key = f"copy/{size}" + ("" if flush else "/warm")
        case = CaseSpec(suite="membw", key=key, params={
            "op": "copy", "bytes": size, "dtype": "float32", "flush": flush, "regime": regime, "quick": False,
            "device_name": "cpu"})
        result = suite.measure(case, device=cpu, options=options)
        if not result.ok:
            raise SystemExit(f"parity copy {size} failed: {result.error or result.check}")
        volumes.append(result.metrics["bytes_moved"])
        times.append(result.metrics["median_s"])
    fit = fit_fixed_cost(volumes, times)
    return {"fixed_cost_s": fit.fixed_cost_s, "first_point_s": times[0], "asymptotic_gbps": fit.asymptotic_gbps}


def bare_copy_s(*, nbytes: int, calls: int, loops: int) -> float:
    """Median over ``loops`` of (perf_counter span of ``calls`` back-to-back copies) / calls, s."""
    import torch

    src = torch.rand(nbytes // 4)
    dst = torch.empty_like(src)
    for _ in range(calls):
        dst.copy_(src)
    spans = []
    for _ in range(loops):
        start = time.perf_counter()
        for _ in range(calls):
            dst.copy_(src)
        spans.append((time.perf_counter() - start) / calls)
    return statistics.median(spans)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--loops", type=int, default=15)
    parser.add_argument("--budget-s", type=float, default=0.05, help="parity's timing budget per case")
    parser.add_argument("--out", default=None, help="write the figures as JSON here")
    args = parser.parse_args(argv)
    rows: list[dict[str, Any]] = []
    for index in range(args.rounds):
        first_bare = index % 2 == 1
        bare = bare_copy_s(nbytes=1024, calls=args.calls, loops=args.loops) if first_bare else None
        warm = parity_fit(flush=False, budget_s=args.budget_s)
        if not first_bare:
            bare = bare_copy_s(nbytes=1024, calls=args.calls, loops=args.loops)
        cold = parity_fit(flush=True, budget_s=args.budget_s)
        row = {"round": index + 1, "bare_s": bare, "warm": warm, "cold": cold, "ratio": warm["fixed_cost_s"] / bare}
        rows.append(row)
        print(f"round {index + 1}: warm a {warm['fixed_cost_s'] * 1e6:.3g} us (1 KiB point "
              f"{warm['first_point_s'] * 1e6:.3g} us), bare 1 KiB copy {bare * 1e6:.3g} us, ratio {row['ratio']:.3g}; "
              f"cold a {cold['fixed_cost_s'] * 1e6:.3g} us", flush=True)
    warm_a = statistics.median(r["warm"]["fixed_cost_s"] for r in rows)
    bare_s = statistics.median(r["bare_s"] for r in rows)
    cold_a = statistics.median(r["cold"]["fixed_cost_s"] for r in rows)
    ratio = statistics.median(r["ratio"] for r in rows)
    ok = 1 / BAR <= ratio <= BAR
    print(f"\nmedian over {args.rounds} rounds: warm fixed cost a {warm_a * 1e6:.3g} us, bare 1 KiB copy "
          f"{bare_s * 1e6:.3g} us, median ratio {ratio:.3g} (bar within {BAR:g}x: {'PASS' if ok else 'FAIL'}); "
          f"cold fixed cost a {cold_a * 1e6:.3g} us")
    if args.out:
        Path(args.out).write_text(json.dumps({"rows": rows, "warm_fixed_cost_s": warm_a, "bare_copy_s": bare_s,
                                              "cold_fixed_cost_s": cold_a, "ratio": ratio, "pass": ok}, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
