"""Validate what-if predictions against reality: make the matrix work faster for real, predict.

A transformer-block step (norms, attention, MLP, some host bookkeeping; a second thread
preparing the next batch) runs under the PyTorch profiler, alternating step by step between a
base variant (fp32 matrix work) and a fast one (some matrix ops in a faster dtype). From the
base steps alone, with ``k`` measured from the matrix ops themselves (median over pairs of the
ratio of their summed leaf times), each what-if method predicts the fast step; the script
prints each method's error against the measured step (``whatif_scoring``: pairs of adjacent
steps, medians over pairs) and whether the measured step lies inside the bounds.

The sweep covers k of about 1.5, 2 and 4 by choosing which matrix ops run fast
(``SWEEP``). The fast dtype (``--fast``): ``bf16`` (AMX tiles), ``int8`` (dynamically
quantised linear layers, fbgemm), or ``auto`` (default): ``bf16`` where the host's CPU flags
(``parity.device.host.cpu_flags``) include ``amx_bf16``, else ``int8``; int8 keeps attention in
fp32, so its sweep has no k = 4 point.

A run whose measured steps are not steady is flagged and not scored (``whatif_scoring``: pairs
where other processes kept a thread off the CPU are left out; a drifting or bimodal measured
speed-up marks the run unstable). On a CUDA device (``--device cuda``): a two-stream step
(matmuls on one stream, copies and elementwise work on another, joined by events) with fp32
versus ``tf32`` or ``bf16`` matmuls; it writes its record under ``results/``.

Targets: replay within 5% of the measured step (median over scored repeats) at every k; the
measured step inside the bounds.

    python benchmarks/whatif_validation.py            # CPU, the k sweep, 5 repeats (minutes)
    python benchmarks/whatif_validation.py --small    # CPU, one repeat per k, seconds
    python benchmarks/whatif_validation.py --points k4 --repeats 2 --keep /tmp/wv
    python benchmarks/whatif_validation.py --rescore /tmp/wv   # score kept traces again
    python benchmarks/whatif_validation.py --device cuda --fast bf16
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from whatif_scoring import METHODS, REPLAY_TARGET, validate_interleaved, validate_pair
from whatif_workload import PREP_SHARE, Variant, profile_cpu, profile_cuda

from parity.device.host import cpu_flags
from parity.trace import load_trace

LINEARS = ("qkv", "out", "up", "down")
# Sweep points per fast dtype: the matrix ops that run fast and the block's width, chosen so
# that the matrix work's speed-up k lands near the label. A block's matrix work is 12 units of
# linear layers (qkv 3, out 1, up 4, down 4) plus about 1.5 of attention; bf16 on AMX runs a
# linear layer about 4.5x faster than fp32 at width 768 (so up + out give about 1.4, up + down
# + out about 2), and everything in bf16 gave 3.2-4.7 at width 1024 (768 gave 2.5-3.4), where
# AMX tiles pay off more; int8 runs a linear layer about 2x faster. The measured k is what
# gets reported.
SWEEP = {
    "bf16": {"k1.5": (frozenset({"up", "out"}), 768),
             "k2": (frozenset({"up", "down", "out"}), 768),
             "k4": (frozenset(LINEARS) | {"attention"}, 1024)},
    "int8": {"k1.5": (frozenset({"up", "down"}), 768), "k2": (frozenset(LINEARS), 768)},
}


def fast_default() -> str:
    """``bf16`` where the CPU has AMX bf16 tiles (the kernel's ``amx_bf16`` flag), else ``int8``."""
    return "bf16" if "amx_bf16" in cpu_flags() else "int8"


def sweep_points(fast: str, names: list[str] | None) -> dict[str, tuple[frozenset[str], int]]:
    """The sweep points to run for ``fast``; int8 has no k4 point (its attention stays fp32)."""
    if fast not in SWEEP:
        raise SystemExit(f"--fast {fast} is not a cpu dtype; use bf16, int8 or auto")
    points = SWEEP[fast]
    if names:
        unknown = [n for n in names if n not in points]
        if unknown:
            raise SystemExit(f"no sweep point {unknown[0]!r} for {fast}; choose from "
                             f"{', '.join(points)}")
        points = {n: point for n, point in points.items() if n in names}
    return points


def _print(result: dict, label: str) -> None:
    ms = lambda ns: f"{ns / 1e6:9.3f} ms"
    pairs = result.get("pairs", {})
    print(f"\n{label}: matrix work k = {result['k_matrix']:.3f}x (measured from the matrix ops)")
    print(f"  measured base step   {ms(result['measured_base_step_ns'])}")
    print(f"  measured fast step   {ms(result['measured_fast_step_ns'])}   "
          f"(speedup {result['measured_speedup']:.3f}x)")
    if pairs:
        print(f"  pairs {pairs['kept']}/{pairs['all']} kept ({pairs['contended']} contended by "
              f"other processes, {pairs['outliers']} outliers)"
              + ("" if pairs["run_queue_known"] else "; run-queue wait unknown"))
    print(f"  {'method':<22}{'error':>10}")
    for method in METHODS:
        print(f"  {method:<22}{result['errors'][method]:>+10.2%}")
    if result.get("errors_contended_pairs"):
        e = result["errors_contended_pairs"]
        print(f"  (contended pairs, not scored: replay {e['replay']:+.2%}, first order "
              f"{e['first_order']:+.2%})")
    if result["unstable"]:
        print("  NOT SCORED (unstable measurement): " + "; ".join(result["unstable"]))
    else:
        print(f"  measured inside bounds: {result['inside_bounds']}; replay within "
              f"{REPLAY_TARGET:.0%}: {result['replay_within_target']}")


def summarize(runs: list[dict]) -> dict:
    """Per sweep point: scored and unstable runs, median errors over scored runs, counts."""
    out = {}
    for point in dict.fromkeys(r["point"] for r in runs):
        mine = [r for r in runs if r["point"] == point]
        scored = [r for r in mine if r["scored"]]
        row = {"runs": len(mine), "scored": len(scored),
               "k_matrix": statistics.median(r["k_matrix"] for r in mine)}
        if scored:
            row["median_errors"] = {m: statistics.median(r["errors"][m] for r in scored)
                                    for m in METHODS}
            row["replay_within_target"] = sum(r["replay_within_target"] for r in scored)
            row["inside_bounds"] = sum(r["inside_bounds"] for r in scored)
            row["target_held"] = (abs(row["median_errors"]["replay"]) <= REPLAY_TARGET
                                  and row["inside_bounds"] == len(scored))
        out[point] = row
    return out


def _print_summary(summary: dict) -> None:
    print(f"\n{'point':<7}{'k':>7}{'scored':>9}{'replay':>10}{'1st order':>11}"
          f"{'in bounds':>11}{'replay<5%':>11}  target")
    for point, row in summary.items():
        if not row["scored"]:
            print(f"{point:<7}{row['k_matrix']:>7.2f}{0:>5}/{row['runs']:<3}  not scored: every "
                  "run was unstable")
            continue
        e = row["median_errors"]
        print(f"{point:<7}{row['k_matrix']:>7.2f}{row['scored']:>5}/{row['runs']:<3}"
              f"{e['replay']:>+10.2%}{e['first_order']:>+11.2%}"
              f"{row['inside_bounds']:>7}/{row['scored']:<3}{row['replay_within_target']:>7}/"
              f"{row['scored']:<3}  {'held' if row['target_held'] else 'MISSED'}")


def run_cpu(args, out: Path) -> tuple[list[dict], str]:
    fast = fast_default() if args.fast == "auto" else args.fast
    points = sweep_points(fast, args.points)
    repeats = args.repeats or (1 if args.small else 5)
    size = ({"tokens": 128, "heads": 4, "prep_rounds": 0} if args.small
            else {"tokens": 256, "heads": 8, "prep_rounds": 0})  # 0: calibrate
    steps = args.steps or (8 if args.small else 20)
    print(f"cpu capability {torch.backends.cpu.get_cpu_capability()}, amx_bf16 "
          f"{'amx_bf16' in cpu_flags()}; fast dtype {fast}; points {', '.join(points)}; {size}; "
          f"{steps} pairs x {repeats} repeats; threads: main + worker (its share calibrated to "
          f"{args.worker_share:.0%} of a base step)")
    runs = []
    for r in range(repeats):
        for point, (layers, dim) in points.items():
            base = Variant(name="fp32", dtype="fp32", layers=frozenset())
            variant = Variant(name=fast, dtype=fast, layers=layers)
            folder = out / f"{point}-r{r}"
            folder.mkdir(parents=True, exist_ok=True)
            dim = 256 if args.small else (args.dim or dim)
            trace, waits = profile_cpu((base, variant), steps=steps, out=folder, dim=dim,
                                       share=args.worker_share, **size)
            (folder / "run_queue.json").write_text(json.dumps(waits))
            run = validate_interleaved(load_trace([trace]), base.name, variant.name, waits)
            run.update(point=point, repeat=r, fast_layers=sorted(layers), dim=dim)
            runs.append(run)
            _print(run, f"cpu {point} run {r + 1}/{repeats}")
    return runs, fast


def rescore_cpu(folder: Path) -> tuple[list[dict], str]:
    """Score again the traces a ``--keep`` run left in ``folder`` (``POINT-rN`` subfolders, each
    with its trace ``cpu_BASE_FAST.json`` and ``run_queue.json``), without profiling."""
    runs, fast = [], ""
    for sub in sorted(p for p in folder.iterdir() if p.is_dir() and "-r" in p.name):
        traces = sorted(sub.glob("cpu_*_*.json"))
        if not traces:
            continue
        base, fast = traces[0].stem.split("_")[1:3]
        waits = json.loads((sub / "run_queue.json").read_text())
        point, _, repeat = sub.name.rpartition("-r")
        run = validate_interleaved(load_trace([traces[0]]), base, fast, waits)
        run.update(point=point, repeat=int(repeat))
        runs.append(run)
        _print(run, f"cpu {point} run {int(repeat) + 1} (rescored)")
    if not runs:
        raise SystemExit(f"no POINT-rN folders with a cpu_BASE_FAST.json trace in {folder}")
    return runs, fast


def run_cuda(args, out: Path) -> tuple[list[dict], str] | None:
    if not torch.cuda.is_available():
        print("no CUDA device: the cuda mode needs one", file=sys.stderr)
        return None
    fast = "bf16" if args.fast == "auto" else args.fast
    steps = args.steps or 20
    size = {"tokens": 4096, "dim": 4096} if not args.small else {"tokens": 1024, "dim": 1024}
    runs = []
    for r in range(args.repeats or 5):
        (out / f"r{r}").mkdir(parents=True, exist_ok=True)
        a = profile_cuda("fp32", steps=steps, out=out / f"r{r}", **size)
        b = profile_cuda(fast, steps=steps, out=out / f"r{r}", **size)
        runs.append(validate_pair(load_trace([a]), load_trace([b])) | {"point": fast, "repeat": r})
        _print(runs[-1], f"cuda run {r + 1} ({torch.cuda.get_device_name()})")
    return runs, fast


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--fast", default="auto", choices=["auto", "bf16", "int8", "tf32"],
                        help="cpu: bf16 | int8 | auto; cuda: tf32 | bf16 (default bf16)")
    parser.add_argument("--points", nargs="+", default=None, metavar="POINT",
                        help="cpu sweep points to run: k1.5 k2 k4 (bf16), k1.5 k2 (int8); default all")
    parser.add_argument("--small", action="store_true", help="a small size that runs in seconds")
    parser.add_argument("--repeats", type=int, default=None,
                        help="repeats of each sweep point (default 5, 1 with --small)")
    parser.add_argument("--dim", type=int, default=None,
                        help="model width of the cpu block (default per sweep point: 768, 1024)")
    parser.add_argument("--steps", type=int, default=None, help="base/fast step pairs per run")
    parser.add_argument("--worker-share", type=float, default=PREP_SHARE,
                        help="the worker thread's work as a share of a base step (default 0.5; "
                             "0.8 makes it bind once the matmuls are faster)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the traces in this folder")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--rescore", type=Path, default=None, metavar="FOLDER",
                        help="cpu: score again the traces a --keep run left in FOLDER")
    parser.add_argument("--synthetic", type=int, default=None, metavar="KERNELS",
                        help="only time graph and replay on a synthetic trace of this many kernels")
    args = parser.parse_args(argv)
    if args.synthetic:
        from whatif_synthetic import time_synthetic

        result = time_synthetic(args.synthetic)
        print(json.dumps(result, indent=2))
        return 0 if result["k1_exact"] else 1
    out = args.rescore or args.keep or Path(tempfile.mkdtemp(prefix="whatif-validation-"))
    out.mkdir(parents=True, exist_ok=True)
    if args.rescore:
        done = rescore_cpu(args.rescore)
    else:
        done = run_cpu(args, out) if args.device == "cpu" else run_cuda(args, out)
    if done is None:
        return 2
    runs, fast = done
    summary = summarize(runs)
    _print_summary(summary)
    load = os.getloadavg()[0]
    if load > (os.cpu_count() or 1):
        print(f"warning: load average {load:.1f} exceeds the {os.cpu_count()} CPUs: other "
              "processes share the cores")
    record = {"device": args.device, "fast": fast, "small": args.small, "runs": runs,
              "summary": summary, "torch": torch.__version__,
              "cpu_capability": torch.backends.cpu.get_cpu_capability(),
              "amx_bf16": "amx_bf16" in cpu_flags(), "traces": str(out),
              "load_average_1min": load, "cpus": os.cpu_count()}
    if args.device == "cuda":
        results = Path(__file__).resolve().parents[1] / "results"
        results.mkdir(exist_ok=True)
        target = results / f"whatif_validation_cuda_{time.strftime('%Y%m%dT%H%M%S')}.json"
        target.write_text(json.dumps(record, indent=2, default=str))
        print(f"wrote {target}")
    if args.json:
        args.json.write_text(json.dumps(record, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
