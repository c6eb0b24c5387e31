"""Quality bars of the GEMM ceiling, measured side by side in one run.

CPU mode (default where no accelerator is present): is parity's measured bf16 ceiling (the
budget-bounded search ``parity gemm`` runs) at least 97% of the best rate any shape of a
brute-force (M, N, K) grid reaches through torch on this machine? Each repeat runs the search
and the grid with the same measurement (``gemm_rate_evaluator``: inputs rotated past the
cache, no flush, median of the timed calls); the grid's top shapes are confirmed the same way
the search confirms its own (interleaved re-timing, best median), so neither side profits from
a lucky probe. Finally the two winning shapes are timed alternately, head to head.

GPU mode (an H200 or any CUDA device): the whole 1,055-shape bf16 catalog through the GEMM
suite (every shape timed and checked) must finish in under 10 minutes, and the search's ceiling
must land within 2% of a mamf-finder-style exhaustive grid (default M, N, K in 2048..16384 step
1024, each timed with the same evaluator). The results go to ``results/``.

    python benchmarks/gemm_ceiling.py                      # CPU bar, 2 repeats
    python benchmarks/gemm_ceiling.py --repeats 3 --ceiling-budget 30
    python benchmarks/gemm_ceiling.py --mode gpu --device cuda:0
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from parity.bench.ceiling import SearchPlan, confirm_best, gemm_rate_evaluator, search_ceiling
from parity.bench.gemm.backends import load_backend
from parity.bench.gemm.dtypes import resolve_dtype

CPU_GRID = (16, 32, 48, 64, 96, 128, 192, 256)
CPU_BAR = 0.97
GPU_BAR = 0.98
GPU_CATALOG_LIMIT_S = 600.0
GPU_GRID_PROBE_S = 0.05


def grid_best(evaluate: Any, sides: list[int], *, probe_s: float, confirm_s: float, repeats: int,
              max_call_s: float) -> dict[str, Any]:
    """Time every (M, N, K) of ``sides``^3 once, then confirm the top three like the search does."""
    probes: dict[tuple[int, int, int], float] = {}
    best_rate = 0.0
    started = time.perf_counter()
    for dims in itertools.product(sides, sides, sides):
        if best_rate and 2.0 * dims[0] * dims[1] * dims[2] / best_rate > max_call_s:
            continue  # the same guard the search applies
        probes[dims] = evaluate(*dims, probe_s)
        best_rate = max(best_rate, probes[dims])
    top = sorted(probes, key=probes.__getitem__, reverse=True)[:3]
    dims, rate, rates = confirm_best(evaluate, top, budget_s=confirm_s, repeats=repeats)
    return {"flops": rate, "dims": dims, "rates": rates, "shapes": len(probes),
            "best_probe_flops": max(probes.values()), "seconds": time.perf_counter() - started}


def head_to_head(evaluate: Any, a: tuple[int, int, int], b: tuple[int, int, int], *, budget_s: float,
                 rounds: int) -> tuple[float, float]:
    """Median rates of two shapes timed alternately ``rounds`` times."""
    ra, rb = [], []
    for _ in range(rounds):
        ra.append(evaluate(*a, budget_s))
        rb.append(evaluate(*b, budget_s))
    return statistics.median(ra), statistics.median(rb)


def cpu_mode(args: argparse.Namespace) -> int:
    from parity.device import get_device

    device = get_device(args.device or "cpu")
    dtype = resolve_dtype(args.dtype)
    evaluate = gemm_rate_evaluator(device=device, backend=load_backend("matmul"), dtype=dtype)
    plan = SearchPlan.for_device(device.type, budget_s=args.ceiling_budget)
    sides = [int(s) for s in args.grid.split(",")] if args.grid else list(CPU_GRID)
    rows = []
    for repeat in range(args.repeats):
        found = search_ceiling(evaluate, plan)
        grid = grid_best(evaluate, sides, probe_s=plan.probe_budget_s, confirm_s=plan.confirm_budget_s,
                         repeats=plan.confirm_repeats, max_call_s=plan.max_call_s)
        s_rate, g_rate = head_to_head(evaluate, found.dims, grid["dims"], budget_s=plan.confirm_budget_s,
                                      rounds=args.rounds)
        row = {"repeat": repeat + 1, "ceiling_flops": found.flops, "ceiling_dims": found.dims,
               "search_s": found.spent_s, "search_probes": len(found.probes),
               "grid_flops": grid["flops"], "grid_dims": grid["dims"], "grid_shapes": grid["shapes"],
               "grid_s": grid["seconds"], "grid_best_probe_flops": grid["best_probe_flops"],
               "ratio": found.flops / grid["flops"], "h2h_search_flops": s_rate, "h2h_grid_flops": g_rate,
               "h2h_ratio": s_rate / g_rate}
        rows.append(row)
        print(f"repeat {repeat + 1}: ceiling {found.flops / 1e9:.3f} GFLOP/s at {_dims(found.dims)} "
              f"({len(found.probes)} probes, {found.spent_s:.1f} s) | grid best {grid['flops'] / 1e9:.3f} "
              f"GFLOP/s at {_dims(grid['dims'])} ({grid['shapes']} shapes, {grid['seconds']:.1f} s) | "
              f"ratio {row['ratio']:.3f} | head to head {s_rate / 1e9:.3f} vs {g_rate / 1e9:.3f} "
              f"= {row['h2h_ratio']:.3f}", flush=True)
    ceiling = statistics.median(r["ceiling_flops"] for r in rows)
    grid_rate = statistics.median(r["grid_flops"] for r in rows)
    ratio = ceiling / grid_rate
    h2h = statistics.median(r["h2h_ratio"] for r in rows)
    verdict = "PASS" if ratio >= CPU_BAR else "FAIL"
    print(f"\n{dtype.name} on {device.properties().name} ({device.name}), {args.repeats} repeats, "
          f"search budget {plan.budget_s:g} s, grid {len(sides)}^3 of {sides}")
    print(f"median measured ceiling   {ceiling / 1e9:.4f} GFLOP/s")
    print(f"median grid best          {grid_rate / 1e9:.4f} GFLOP/s")
    print(f"ratio of medians          {ratio:.4f}  (bar >= {CPU_BAR}: {verdict})")
    print(f"median head-to-head ratio {h2h:.4f}  (winning shapes timed alternately)")
    _save(args, {"mode": "cpu", "device": device.properties().name, "dtype": dtype.name, "rows": rows,
                 "median_ceiling_flops": ceiling, "median_grid_flops": grid_rate, "ratio": ratio,
                 "head_to_head_ratio": h2h, "bar": CPU_BAR, "pass": ratio >= CPU_BAR})
    return 0 if ratio >= CPU_BAR else 1


def gpu_mode(args: argparse.Namespace) -> int:
    from parity.bench.registry import get_suite
    from parity.bench.runner import run_suites
    from parity.device import get_device
    from parity.store import Store

    device = get_device(args.device or "cuda")
    dtype = resolve_dtype(args.dtype)
    db = Path(args.db or "results/gemm_ceiling.sqlite")
    db.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with Store.open(db) as store:
        outcome = run_suites(store, device=device, suites=[get_suite("gemm")], quick=False,
                             options={"gemm": {"dtype": dtype.name, "ceiling_budget_s": args.ceiling_budget}},
                             progress=_progress)
    catalog_s = time.perf_counter() - started
    summary = outcome.suites[0].summary
    shapes = sum(1 for c in outcome.cases if c.params.get("kind") == "shape")
    print(f"catalog: {shapes} shapes in {catalog_s:.0f} s (bar < {GPU_CATALOG_LIMIT_S:.0f} s: "
          f"{'PASS' if catalog_s < GPU_CATALOG_LIMIT_S else 'FAIL'}); ceiling "
          f"{(summary.get('ceiling_tflops') or 0):.1f} TFLOP/s at {summary.get('ceiling_shape')}; "
          f"best fraction {summary.get('best_fraction_of_ceiling')}; median efficiency (compute-bound) "
          f"{summary.get('median_efficiency_compute_bound')}", flush=True)
    evaluate = gemm_rate_evaluator(device=device, backend=load_backend("matmul"), dtype=dtype)
    start, stop, step = (int(v) for v in args.gpu_grid.split(":"))
    sides = list(range(start, stop + 1, step))
    plan = SearchPlan.for_device(device.type, budget_s=args.ceiling_budget)
    found = search_ceiling(evaluate, plan)
    # 3,375 shapes by default: a short probe each (every shape runs 1-30 ms), then the same
    # confirmation of the top three as the search's.
    grid = grid_best(evaluate, sides, probe_s=GPU_GRID_PROBE_S, confirm_s=plan.confirm_budget_s,
                     repeats=plan.confirm_repeats, max_call_s=plan.max_call_s)
    ratio = found.flops / grid["flops"]
    print(f"search {found.flops / 1e12:.1f} TFLOP/s at {_dims(found.dims)} in {found.spent_s:.0f} s; "
          f"exhaustive {grid['flops'] / 1e12:.1f} TFLOP/s at {_dims(grid['dims'])} over {grid['shapes']} "
          f"shapes in {grid['seconds']:.0f} s; ratio {ratio:.4f} (bar >= {GPU_BAR}: "
          f"{'PASS' if ratio >= GPU_BAR else 'FAIL'})")
    ok = catalog_s < GPU_CATALOG_LIMIT_S and ratio >= GPU_BAR
    _save(args, {"mode": "gpu", "device": device.properties().name, "dtype": dtype.name,
                 "run_id": outcome.run.run_id, "catalog_seconds": catalog_s, "catalog_shapes": shapes,
                 "summary": {k: v for k, v in summary.items() if k != "rows"},
                 "search": found.to_dict(), "grid": {**grid, "sides": sides}, "ratio": ratio, "pass": ok})
    return 0 if ok else 1


def _progress(event: Any) -> None:
    if event.phase == "measured" and (event.done % 50 == 0 or event.done == event.total):
        eta = f"{event.eta_s:.0f} s" if event.eta_s is not None else "?"
        print(f"  [{event.done}/{event.total}] elapsed {event.elapsed_s:.0f} s, eta {eta}", flush=True)


def _dims(dims: tuple[int, int, int]) -> str:
    return "x".join(str(d) for d in dims)


def _save(args: argparse.Namespace, data: dict[str, Any]) -> None:
    if not args.out:
        return
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")
    print(f"wrote {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("auto", "cpu", "gpu"), default="auto")
    parser.add_argument("--device", default=None)
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--repeats", type=int, default=2, help="CPU mode: search + grid repeats")
    parser.add_argument("--rounds", type=int, default=5, help="CPU mode: head-to-head rounds")
    parser.add_argument("--ceiling-budget", type=float, default=None,
                        help="search budget in seconds (default: what parity gemm --quick uses on a CPU, 20 s; 60 s on a GPU)")
    parser.add_argument("--grid", default=None, help="CPU mode: comma-separated grid sides")
    parser.add_argument("--gpu-grid", default="2048:16384:1024", help="GPU mode: start:stop:step of the grid")
    parser.add_argument("--db", default=None, help="GPU mode: results store for the catalog run")
    parser.add_argument("--out", default=None, help="write the figures as JSON here")
    args = parser.parse_args(argv)
    mode = args.mode
    if mode == "auto":
        import torch

        mode = "gpu" if torch.cuda.is_available() else "cpu"
    if args.ceiling_budget is None:
        args.ceiling_budget = 20.0 if mode == "cpu" else 60.0
    if mode == "gpu" and args.out is None:
        args.out = "results/gemm_ceiling_gpu.json"
    return cpu_mode(args) if mode == "cpu" else gpu_mode(args)


if __name__ == "__main__":
    sys.exit(main())
