"""Quality bars of the GEMM ceiling, measured side by side in one run.

CPU mode (default where no accelerator is present): is parity's measured bf16 ceiling (the
budget-bounded search ``parity gemm`` runs) at least 97% of the best rate any shape of a
brute-force (M, N, K) grid reaches through torch on this machine?

One run times, with the same measurement (``gemm_rate_evaluator`` as ``parity gemm`` uses it:
the cache flushed before each call, as the sweep times every shape; median of the timed calls):

1. the brute-force grid: every (M, N, K) with sides in ``--grid`` (by default the eight
   largest squares of the search's own ladder, 16·√2^i, whose call fits the search's time
   limit per call at the rate of a 256-cube probe: with the cache flushed before each call, as
   the sweep times shapes, the best shapes are large where the rate allows). A shared CPU's
   speed swings by tens of percent within seconds, so with a relative
   plan (CPUs) each shape is timed between two timings of the grid's middle square and scored
   by the ratio (the rule the search's grid phase uses); the top ``confirm_top`` shapes then
   meet in the contest the search ends with (interleaved rounds, best score wins), and the
   winner is timed in fresh confirmation rounds as the search's is (rate = their median, the
   statistic the library quotes ``P`` by, with the best round beside it);
2. ``--repeats`` searches, each followed by the honest check: the search's winning shape and
   the grid's winning shape timed alternately (A B, B A, ... for ``--rounds`` pairs).

It prints, per search and as medians over searches, the side-by-side ratio (the ceiling the
library reports over the grid's best, each measured at its own moment) and two alternating
ratios: the ratio of the two sides' medians, and the median of the per-pair ratios (each pair
timed next to each other). The verdict uses the median pair ratio: only the paired figure is
immune to the machine's speed at the moment each side happened to be measured.

GPU mode (an H200 or any CUDA device): the whole 1,055-shape bf16 catalog through the GEMM
suite (every shape timed and checked) must finish in under 10 minutes, and the search's ceiling
must land within 2% of a mamf-finder-style exhaustive grid (default M, N, K in 2048..16384 step
1024, each timed with the same evaluator). The results go to ``results/``.

    python benchmarks/gemm_ceiling.py                      # CPU bar: grid once, 3 searches
    python benchmarks/gemm_ceiling.py --repeats 5 --rounds 21 --out /tmp/ceiling.json
    python benchmarks/gemm_ceiling.py --mode gpu --device cuda:0
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

from parity.ceilings.compute import confirm_rounds, search_ceiling
from parity.harness.strategies import Stopwatch
from parity.ceilings.plan import SearchPlan, scout_sizes
from parity.families.gemm.backends import load_backend
from parity.families.gemm.dtypes import resolve_dtype
from parity.families.gemm.evaluator import gemm_rate_evaluator
from parity.ceilings.contest import Bracket, alternate, run_contest
from parity.stats import median

# The CPU grid's sides: the GRID_SIDES largest of the search's ladder whose cube's call fits its
# ``max_call_s`` at a probe's rate (``default_grid``).
GRID_SIDES = 8
GRID_PROBE_SIDE = 256
CPU_BAR = 0.97
GPU_BAR = 0.98
GPU_CATALOG_LIMIT_S = 600.0
GPU_GRID_PROBE_S = 0.05

Dims = tuple[int, int, int]


def grid_best(evaluate: Any, sides: list[int], *, plan: SearchPlan, probe_s: float) -> dict[str, Any]:
    """Time every (M, N, K) of ``sides``^3 once (with ``plan.relative``: bracketed by timings of
    the middle square and scored by the rate ratio, as the search's grid phase does), then let
    the ``plan.confirm_top`` best-scored shapes meet in the search's own contest, whose winner is
    timed in fresh rounds (``confirm_rounds``) as the search's is. Shapes whose
    call would exceed ``plan.max_call_s`` at the best rate seen are skipped
    (``SearchPlan.too_slow``, the guard the search applies)."""
    middle = sides[len(sides) // 2]
    bracket = Bracket(evaluate, (middle, middle, middle), budget_s=probe_s)
    scores: dict[Dims, float] = {}
    best_rate = 0.0
    started = time.perf_counter()
    for dims in itertools.product(sides, sides, sides):
        if plan.too_slow(dims, best_rate):
            continue
        if plan.relative:
            rate, scores[dims] = bracket.score(dims)
        else:
            rate = scores[dims] = evaluate(*dims, probe_s)
        best_rate = max(best_rate, rate)
    scan_s = time.perf_counter() - started
    top = sorted(scores, key=scores.__getitem__, reverse=True)[: plan.confirm_top]
    contest = run_contest(evaluate, top, budget_s=plan.confirm_budget_s, rounds=plan.confirm_repeats)
    rounds = confirm_rounds(evaluate, contest.winner, plan)
    return {"flops": median(rounds), "best_flops": max(rounds), "dims": contest.winner, "confirm_flops": rounds,
            "shapes": len(scores), "contest": contest.to_dict(), "scan_s": scan_s,
            "seconds": time.perf_counter() - started}


def default_grid(rate: float, plan: SearchPlan) -> list[int]:
    """The ``GRID_SIDES`` largest sides of the search's ladder (``scout_sizes``) whose cube's call
    at ``rate`` FLOP/s fits the search's ``max_call_s`` (``SearchPlan.too_slow``): the grid then
    spans the sizes the search can reach. Example: at 180 GFLOP/s and 0.2 s, sides up to 2048
    (2 * 2048^3 / 180e9 = 0.095 s; 2896 would take 0.27 s), so 176..2048."""
    ladder = scout_sizes(plan)
    fits = [s for s in ladder if not plan.too_slow((s, s, s), rate)]
    return fits[-GRID_SIDES:] or ladder[:1]


def cpu_mode(args: argparse.Namespace) -> int:
    from parity.device import get_device

    device = get_device(args.device or "cpu")
    dtype = resolve_dtype(args.dtype)
    evaluate = gemm_rate_evaluator(device=device, backend=load_backend("matmul"), dtype=dtype, flush=True)
    plan = SearchPlan.for_device(device.type, budget_s=args.ceiling_budget)
    evaluate(GRID_PROBE_SIDE, GRID_PROBE_SIDE, GRID_PROBE_SIDE, plan.probe_budget_s)  # library start-up, untimed
    sides = ([int(s) for s in args.grid.split(",")] if args.grid
             else default_grid(evaluate(GRID_PROBE_SIDE, GRID_PROBE_SIDE, GRID_PROBE_SIDE, plan.probe_budget_s), plan))
    grid = grid_best(evaluate, sides, plan=plan, probe_s=plan.probe_budget_s)
    print(f"grid: {grid['shapes']} shapes in {grid['seconds']:.0f} s; best {_g(grid['flops'])} at "
          f"{_dims(grid['dims'])} (median round; best round {_g(grid['best_flops'])}); contest "
          + ", ".join(f"{c['m']}x{c['n']}x{c['k']} {c['score']:.3f}" for c in grid["contest"]["candidates"]),
          flush=True)
    rows = []
    for repeat in range(args.repeats):
        found = search_ceiling(evaluate, plan, clock=Stopwatch())
        duel = alternate(evaluate, found.dims, grid["dims"], budget_s=plan.confirm_budget_s, rounds=args.rounds)
        row = {"repeat": repeat + 1, "ceiling_flops": found.flops, "ceiling_dims": found.dims,
               "search_s": found.spent_s, "search_probes": len(found.probes), "search_phases": found.phases,
               "search_contest": found.contest.to_dict(),
               "side_by_side_ratio": found.flops / grid["flops"],
               "alternating_search_flops": median(duel.rates_a),
               "alternating_grid_flops": median(duel.rates_b),
               "alternating_ratio": duel.ratio_of_medians, "alternating_pair_ratio": duel.median_pair_ratio,
               "alternating_rates": {"search": duel.rates_a, "grid": duel.rates_b}}
        rows.append(row)
        print(f"search {repeat + 1}: ceiling {_g(found.flops)} at {_dims(found.dims)} ({len(found.probes)} "
              f"shapes, {found.spent_s:.1f} s) | side by side {row['side_by_side_ratio']:.3f} | alternating "
              f"{_g(row['alternating_search_flops'])} vs {_g(row['alternating_grid_flops'])} = "
              f"{row['alternating_ratio']:.3f} (median pair ratio {row['alternating_pair_ratio']:.3f})", flush=True)
    ceiling = median([r["ceiling_flops"] for r in rows])
    side = ceiling / grid["flops"]
    of_medians = median([r["alternating_ratio"] for r in rows])
    honest = median([r["alternating_pair_ratio"] for r in rows])
    verdict = "PASS" if honest >= CPU_BAR else "FAIL"
    print(f"\n{dtype.name} on {device.properties().name} ({device.name}); search budget {plan.budget_s:g} s, "
          f"{args.repeats} searches; grid {len(sides)}^3 of {sides}; {args.rounds} alternating rounds")
    print(f"median measured ceiling          {_g(ceiling)}")
    print(f"grid best                        {_g(grid['flops'])}")
    print(f"side-by-side ratio of medians    {side:.4f}  (each side measured at its own moment)")
    print(f"alternating, ratio of medians    {of_medians:.4f}")
    print(f"alternating, median pair ratio   {honest:.4f}  (bar >= {CPU_BAR}: {verdict})")
    _save(args, {"mode": "cpu", "device": device.properties().name, "dtype": dtype.name, "grid_sides": sides,
                 "grid": grid, "rows": rows, "median_ceiling_flops": ceiling, "grid_flops": grid["flops"],
                 "side_by_side_ratio": side, "alternating_ratio_of_medians": of_medians,
                 "alternating_pair_ratio": honest, "bar": CPU_BAR,
                 "pass": honest >= CPU_BAR})
    return 0 if honest >= CPU_BAR else 1


def gpu_mode(args: argparse.Namespace) -> int:
    from parity.harness.registry import get_suite
    from parity.harness.runner import run_suites
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
          f"{(summary.get('ceiling_flops') or 0) / 1e12:.1f} TFLOP/s at {summary.get('ceiling_shape')}; "
          f"best fraction {summary.get('best_fraction_of_ceiling')}; median efficiency (compute-bound) "
          f"{(summary.get('efficiency_compute_bound') or {}).get('median')}", flush=True)
    evaluate = gemm_rate_evaluator(device=device, backend=load_backend("matmul"), dtype=dtype, flush=True)
    start, stop, step = (int(v) for v in args.gpu_grid.split(":"))
    sides = list(range(start, stop + 1, step))
    plan = SearchPlan.for_device(device.type, budget_s=args.ceiling_budget)
    found = search_ceiling(evaluate, plan, clock=Stopwatch())
    # 3,375 shapes by default: a short probe each (every shape runs 1-30 ms), then the same
    # confirmation of the top three as the search's.
    grid = grid_best(evaluate, sides, plan=plan, probe_s=GPU_GRID_PROBE_S)
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


def _g(flops: float) -> str:
    return f"{flops / 1e9:.3f} GFLOP/s"


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
    parser.add_argument("--repeats", type=int, default=3, help="CPU mode: searches, each checked against the grid")
    parser.add_argument("--rounds", type=int, default=15, help="CPU mode: alternating rounds per check")
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
