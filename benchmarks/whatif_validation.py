"""Validate what-if predictions against reality: make the matrix work faster for real, predict.

A transformer-block step (norms, attention, MLP, some host bookkeeping; a second thread
preparing the next batch) runs twice under the PyTorch profiler: once as is (fp32 matmuls) and
once with only its matrix work changed to a faster kind. From the first trace alone, with ``k``
measured from the matrix ops themselves (ratio of their summed leaf times per step), each what-if
method predicts the second step; the script prints the prediction error of each method against
the measured step (medians over the steady steps) side by side.

Matrix variants (``--fast``):
- ``bf16``: linear layers in bf16 (AMX tiles on Xeons that have them; both variants cast the
  activations with a real copy before and after each matmul, so only the matmul dtype differs);
- ``int8``: linear layers as dynamically quantised int8 (fbgemm; faster on AVX2 CPUs);
- ``auto`` (default): ``bf16`` where the CPU reports AMX, else ``int8``.
On a CUDA device (``--device cuda``): a two-stream step (matmuls on one stream, copies and
elementwise work on another, joined by events) with fp32 versus ``tf32`` or ``bf16`` matmuls;
it writes its record under ``results/``.

Targets: replay within 5% of the measured step; the measured step inside the bounds. The
defaults (20 steady steps per variant, 5 repeats, medians) keep the step-to-step noise of a
shared 2-core machine (about 10% per step) well inside that 5%.

    python benchmarks/whatif_validation.py            # CPU, full size (about 90 s)
    python benchmarks/whatif_validation.py --small    # CPU, seconds
    python benchmarks/whatif_validation.py --device cuda --fast bf16
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch._C._profiler import _ExperimentalConfig

from parity.trace import Kind, load_trace
from parity.trace.whatif import parse_scale
from parity.trace.whatif.bounds import bounds
from parity.trace.whatif.first_order import first_order
from parity.trace.whatif.graph import build_graph
from parity.trace.whatif.prediction import step_boundaries
from parity.trace.whatif.replay import schedule, step_lengths
from parity.trace.whatif.selection import Window, choose_window, scale_factors
from parity.trace.whatif.timeline import build_timeline

REPLAY_TARGET = 0.05


# --------------------------------------------------------------------------- the workload (CPU)

class CastLinear(torch.nn.Module):
    """``y = linear(x.to(dtype), W_dtype).to(float32)``; the casts copy in every dtype."""

    def __init__(self, weight: torch.Tensor, dtype: torch.dtype):
        super().__init__()
        self.weight = weight.to(dtype)
        self.dtype = dtype

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.linear(x.to(self.dtype, copy=True), self.weight)
        return y.to(torch.float32, copy=True)


def make_linear(weight: torch.Tensor, variant: str) -> torch.nn.Module:
    """The matrix op of one variant: fp32 / bf16 (both with casts), plain fp32 / int8."""
    if variant in ("fp32-cast", "bf16"):
        return CastLinear(weight, torch.float32 if variant == "fp32-cast" else torch.bfloat16)
    linear = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=False)
    linear.weight.data.copy_(weight)
    if variant == "fp32":
        return linear
    if variant == "int8":
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.ao.quantization.quantize_dynamic(
                torch.nn.Sequential(linear), {torch.nn.Linear}, dtype=torch.qint8)
    raise ValueError(variant)


class Block(torch.nn.Module):
    """Pre-norm transformer block: RMSNorm, attention (bmm), LayerNorm, GELU MLP."""

    def __init__(self, dim: int, heads: int, variant: str, seed: int = 0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        w = lambda o, i: torch.randn(o, i, generator=g) / i ** 0.5
        self.heads = heads
        self.qkv = make_linear(w(3 * dim, dim), variant)
        self.out = make_linear(w(dim, dim), variant)
        self.up = make_linear(w(4 * dim, dim), variant)
        self.down = make_linear(w(dim, 4 * dim), variant)
        self.rms_weight = torch.ones(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens, dim = x.shape
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.rms_weight
        q, k, v = self.qkv(h).view(tokens, 3, self.heads, dim // self.heads).unbind(1)
        q, k, v = (t.transpose(0, 1) for t in (q, k, v))
        scores = torch.bmm(q, k.transpose(1, 2)) / (dim // self.heads) ** 0.5
        attn = torch.bmm(torch.softmax(scores, dim=-1), v).transpose(0, 1).reshape(tokens, dim)
        x = x + self.out(attn)
        h = F.layer_norm(x, (dim,))
        return x + self.down(F.gelu(self.up(h)))


def prepare_batch(tokens: int, dim: int, rounds: int) -> torch.Tensor:
    """The worker thread's share: make and normalise the next batch (vector work)."""
    torch.set_num_threads(1)
    x = torch.randn(tokens, dim)
    for _ in range(rounds):
        x = F.layer_norm(torch.tanh(x * 1.01 + 0.1), (dim,))
    return x


def host_bookkeeping(step: int) -> None:
    """Small host-side work every step: positions, a mask, counters (dozens of tiny ops)."""
    pos = torch.arange(16)
    for i in range(12):
        pos = (pos + step + i) % 97
    torch.triu(torch.ones(16, 16), diagonal=1).sum()


VARIANT_TAG = "whatif-variant="


PREP_SHARE = 0.5  # default share of a base step the worker's batch preparation takes


def calibrate_prep(blocks: list, tokens: int, dim: int, *, share: float) -> int:
    """Rounds of :func:`prepare_batch` that take about ``share`` of one base step (median of 3)."""
    def median_s(fn) -> float:
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    def step() -> None:
        x = torch.randn(tokens, dim)
        for block in blocks:
            x = block(x)

    with torch.no_grad():
        per_round = median_s(lambda: prepare_batch(tokens, dim, 10)) / 10
        return max(1, round(share * median_s(step) / per_round))


def profile_cpu(variants: tuple[str, str], *, tokens: int, dim: int, heads: int, steps: int,
                prep_rounds: int, out: Path, share: float = PREP_SHARE) -> Path:
    """Profile ``steps`` steady steps of each variant, alternating step by step, in one trace.

    Interleaving puts both variants under the same machine conditions (other processes, clock
    changes), so their medians compare like with like. Each step is tagged with a
    ``whatif-variant=NAME`` annotation on the main thread.
    """
    torch.set_num_threads(1)  # one core per thread: main thread and worker thread
    torch.manual_seed(0)
    models = {v: [Block(dim, heads, v, seed=i) for i in range(2)] for v in variants}
    pool = ThreadPoolExecutor(1)
    path = out / f"cpu_{variants[0]}_{variants[1]}.json"
    with torch.no_grad():  # untimed warm-up: first calls pay allocation and weight packing
        x = prepare_batch(tokens, dim, 1)
        for blocks in models.values():
            for _ in range(2):
                for block in blocks:
                    block(x)
    if prep_rounds <= 0:
        prep_rounds = calibrate_prep(models[variants[0]], tokens, dim, share=share)
    schedule = torch.profiler.schedule(wait=1, warmup=4, active=2 * steps + 2, repeat=1)
    with torch.no_grad(), torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        schedule=schedule,
        experimental_config=_ExperimentalConfig(profile_all_threads=True),
        on_trace_ready=lambda p: p.export_chrome_trace(str(path)),
    ) as prof:
        batch = prepare_batch(tokens, dim, prep_rounds)
        for step in range(2 * steps + 7):
            variant = variants[step % 2]
            with torch.profiler.record_function(VARIANT_TAG + variant):
                future = pool.submit(prepare_batch, tokens, dim, prep_rounds)
                host_bookkeeping(step)
                x = batch
                for block in models[variant]:
                    x = block(x)
                float(x[0, 0])
                batch = future.result()
            prof.step()
    pool.shutdown()
    return path


# --------------------------------------------------------------------------- the workload (CUDA)

def profile_cuda(fast: str, *, tokens: int, dim: int, steps: int, out: Path) -> Path:
    """Two streams joined by events: matmuls (+GELU) on ``main``; copies and scaling on ``side``.

    Each step ``main`` waits for ``ready`` (this step's batch, copied in by ``side`` during the
    previous step), runs four matmul+GELU layers, records ``mid``, and runs four more. ``side``
    waits for ``mid``, copies the intermediate activations to pinned host memory (a logging
    snapshot), copies the next batch in from pinned memory, scales it and records ``ready``: its
    work overlaps ``main``'s second half. A synchronize ends every step so the host step markers
    bound the device work. ``fast``: ``fp32`` (TF32 off), ``tf32`` or ``bf16`` matmuls.
    """
    torch.backends.cuda.matmul.allow_tf32 = fast == "tf32"
    dtype = torch.bfloat16 if fast == "bf16" else torch.float32
    dev = torch.device("cuda")
    main, side = torch.cuda.Stream(), torch.cuda.Stream()
    gen = torch.Generator(device=dev).manual_seed(0)
    ws = [(torch.randn(dim, dim, device=dev, generator=gen) / dim ** 0.5).to(dtype)
          for _ in range(8)]
    host_in = torch.randn(tokens, dim).pin_memory()
    host_snapshot = torch.empty(tokens, dim, dtype=dtype).pin_memory()
    buffers = [torch.empty(tokens, dim, device=dev) for _ in range(2)]
    ready, mid = torch.cuda.Event(), torch.cuda.Event()
    path = out / f"cuda_{fast}.json"
    with torch.cuda.stream(side):
        buffers[0].copy_(host_in, non_blocking=True)
        ready.record(side)
    torch.cuda.synchronize()
    schedule = torch.profiler.schedule(wait=1, warmup=3, active=steps, repeat=1)
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
        schedule=schedule,
        experimental_config=_ExperimentalConfig(enable_cuda_sync_events=True),
        on_trace_ready=lambda p: p.export_chrome_trace(str(path)),
    ) as prof:
        for step in range(steps + 5):
            cur, nxt = buffers[step % 2], buffers[(step + 1) % 2]
            with torch.cuda.stream(main):
                main.wait_event(ready)
                x = cur.to(dtype)
                for w in ws[:4]:
                    x = F.gelu(x @ w)
                half = x
                mid.record(main)
                for w in ws[4:]:
                    x = F.gelu(x @ w)
            with torch.cuda.stream(side):
                side.wait_event(mid)
                host_snapshot.copy_(half, non_blocking=True)
                nxt.copy_(host_in, non_blocking=True)
                nxt.mul_(1.0001).add_(0.001)
                ready.record(side)
            torch.cuda.synchronize()
            prof.step()
    return path


# --------------------------------------------------------------------------- measure and predict

def tagged_steps(table) -> list[tuple[int, int, str]]:
    """``(start_ns, end_ns, variant)`` of every steady step (first skipped), from the tags."""
    window = choose_window(table, build_timeline(table))
    tags = [(int(table.start_ns[i]), table.name_of(i)[len(VARIANT_TAG):])
            for i in np.flatnonzero(table.kind == Kind.OTHER)
            if table.name_of(i).startswith(VARIANT_TAG)]
    steps = []
    for a, b in zip(window.boundaries_ns[:-1], window.boundaries_ns[1:]):
        inside = [v for t, v in tags if a <= t < b]
        steps.append((a, b, inside[0] if len(inside) == 1 else "cuda"))
    return steps


def matrix_ns(timeline, a: int, b: int) -> float:
    """Summed time of matrix work in ``[a, b)``, ns, every lane (leaf time on host threads)."""
    sel = timeline.compute & (timeline.category == "matrix")
    s = np.maximum(timeline.start_ns[sel], a)
    e = np.minimum(timeline.end_ns[sel], b)
    return float(np.clip(e - s, 0, None).sum())


def validate(base_table, base_steps, fast_table, fast_steps) -> dict:
    """Predict the fast step from the base steps alone with each method; compare with measured.

    ``k`` = median matrix time of a base step / median matrix time of a fast step. Every base
    step is predicted on its own span by each method (first order, bounds, and the replay of the
    whole trace's dependency graph); the prediction is the median over base steps, compared with
    the median measured fast step.
    """
    if len(base_steps) < 2 or len(fast_steps) < 2:
        raise RuntimeError(f"too few steps: {len(base_steps)} base, {len(fast_steps)} fast")
    base_tl, fast_tl = build_timeline(base_table), build_timeline(fast_table)
    k = (statistics.median(matrix_ns(base_tl, a, b) for a, b in base_steps)
         / statistics.median(matrix_ns(fast_tl, a, b) for a, b in fast_steps))
    scale = [parse_scale(f"matrix={k!r}")]
    lengths = [b - a for a, b in base_steps]
    t_base = statistics.median(lengths)
    t_fast = statistics.median(b - a for a, b in fast_steps)
    started = time.perf_counter()
    per_step = predict_steps(base_table, base_tl, base_steps, scale)
    predict_s = time.perf_counter() - started
    predicted = {
        "first_order": statistics.median(p["first_order"] for p in per_step),
        "bound_low_speedup": statistics.median(p["bound_low_speedup"] for p in per_step),
        "bound_high_speedup": statistics.median(p["bound_high_speedup"] for p in per_step),
        "replay": statistics.median(p["replay"] for p in per_step),
    }
    errors = {m: v / t_fast - 1 for m, v in predicted.items()}
    lo, hi = sorted((predicted["bound_low_speedup"], predicted["bound_high_speedup"]))
    return {
        "k_matrix": k,
        "measured_base_step_ns": t_base,
        "measured_fast_step_ns": t_fast,
        "measured_speedup": t_base / t_fast,
        "steps": {"base": len(base_steps), "fast": len(fast_steps)},
        "predicted_step_ns": predicted,
        "errors": errors,
        "inside_bounds": bool(lo * (1 - 1e-9) <= t_fast <= hi * (1 + 1e-9)),
        "replay_within_target": bool("replay" in errors and abs(errors["replay"]) <= REPLAY_TARGET),
        "replay_reproduction_error": max(p["reproduction_error"] for p in per_step),
        "predict_s": predict_s,
        "assumptions": per_step[0]["assumptions"],
        "graph": per_step[0]["graph"],
    }


def predict_steps(table, timeline, steps: list[tuple[int, int]], scale) -> list[dict]:
    """Each method's predicted length of every step in ``steps`` (ns), from one graph and one
    replay of the whole trace (the library's parts, as :func:`parity.trace.whatif.predict`
    uses them, shared across steps)."""
    window = choose_window(table, timeline)
    graph = build_graph(table, timeline, step_boundaries=step_boundaries(table, timeline))
    base = schedule(graph, np.ones(len(timeline)))
    new = schedule(graph, scale_factors(timeline, scale))
    out = []
    for a, b in steps:
        step = Window(start_ns=a, end_ns=b, boundaries_ns=(a, b), marker_lane=window.marker_lane)
        fo = first_order(timeline, step, scale)
        bd = bounds(timeline, step, scale)
        reproduced = float(step_lengths(graph, step, *base)[0])
        out.append({
            "first_order": fo.new_step_ns,
            "bound_low_speedup": (b - a) / bd.low,
            "bound_high_speedup": (b - a) / bd.high,
            "replay": float(step_lengths(graph, step, *new)[0]),
            "reproduction_error": abs(reproduced - (b - a)) / (b - a),
            "assumptions": graph.assumptions(),
            "graph": graph.to_dict(),
        })
    return out


def validate_interleaved(trace: Path, base: str, fast: str) -> dict:
    """:func:`validate` on one trace whose steps alternate between the two variants."""
    table = load_trace([trace])
    steps = tagged_steps(table)
    return validate(table, [(a, b) for a, b, v in steps if v == base],
                    table, [(a, b) for a, b, v in steps if v == fast])


def validate_pair(base_trace: Path, fast_trace: Path) -> dict:
    """:func:`validate` on two traces, one per variant (the CUDA mode)."""
    base, fast = load_trace([base_trace]), load_trace([fast_trace])
    return validate(base, [(a, b) for a, b, _ in tagged_steps(base)],
                    fast, [(a, b) for a, b, _ in tagged_steps(fast)])


def synthetic_table(kernels: int, *, seed: int = 0):
    """A two-stream device trace of ``kernels`` kernels, each launched by a host call, with a
    device synchronize (and its ``cuda_sync`` record) every 1000 launches; ns times."""
    from parity.trace.table import ActivityTable

    rng = np.random.default_rng(seed)
    n = kernels
    launch = np.cumsum(rng.integers(3_000, 6_000, n)).astype(np.int64)
    dur = rng.integers(1_000, 9_000, n).astype(np.int64)
    stream = np.where(rng.random(n) < 0.7, 7, 8)
    start = np.empty(n, np.int64)
    free = {7: 0, 8: 0}
    for i, (t, s, d) in enumerate(zip(launch.tolist(), stream.tolist(), dur.tolist())):
        start[i] = max(t + 4_000, free[s])
        free[s] = start[i] + d
    end = start + dur
    names = ("sgemm_128x64_nn", "vectorized_elementwise_kernel", "cudaLaunchKernel",
             "cudaDeviceSynchronize", "Context Sync")
    syncs = np.arange(999, n, 1000)
    sync_start = launch[syncs] + 2_500
    sync_end = np.maximum(np.maximum.accumulate(end)[syncs], sync_start) + 1_000
    n_rows = 2 * n + 2 * len(syncs)
    col = lambda *parts: np.concatenate(parts)
    sync_corr = n + np.arange(len(syncs))
    return ActivityTable(
        rank=np.zeros(n_rows, np.int32),
        device=col(np.zeros(n), -np.ones(n), -np.ones(len(syncs)), np.zeros(len(syncs))).astype(np.int32),
        stream=col(stream, np.full(n, 100), np.full(len(syncs), 100), np.full(len(syncs), -1)).astype(np.int64),
        kind=col(np.full(n, int(Kind.KERNEL)), np.full(n, int(Kind.RUNTIME)),
                 np.full(len(syncs), int(Kind.RUNTIME)), np.full(len(syncs), int(Kind.SYNC))).astype(np.int8),
        name_id=col(np.where(rng.random(n) < 0.5, 0, 1), np.full(n, 2), np.full(len(syncs), 3),
                    np.full(len(syncs), 4)).astype(np.int32),
        start_ns=col(start, launch, sync_start, sync_start),
        end_ns=col(end, launch + 2_000, sync_end, sync_end),
        correlation=col(np.arange(n), np.arange(n), sync_corr, sync_corr).astype(np.int64),
        step=np.full(n_rows, -1, np.int32),
        names=names,
        extra={"sync_type": np.array([None] * (2 * n + len(syncs)) + ["Context Sync"] * len(syncs),
                                     dtype=object)},
    )


def time_synthetic(kernels: int) -> dict:
    """Seconds to build the graph of a synthetic trace and to replay it (first and second
    pass); checks that k = 1 reproduces every activity."""
    table = synthetic_table(kernels)
    t0 = time.perf_counter()
    timeline = build_timeline(table)
    t1 = time.perf_counter()
    graph = build_graph(table, timeline)
    t2 = time.perf_counter()
    start, _ = schedule(graph, np.ones(len(timeline)))
    t3 = time.perf_counter()
    schedule(graph, scale_factors(timeline, [parse_scale("matrix=2")]))
    t4 = time.perf_counter()
    exact = bool(np.allclose(start, timeline.start_ns - graph.origin_ns, atol=1))
    return {"events": len(table), "timeline_s": t1 - t0, "graph_s": t2 - t1,
            "first_replay_s": t3 - t2, "replay_s": t4 - t3, "k1_exact": exact,
            "edges": graph.to_dict()["edges"]}


def _print(result: dict, label: str) -> None:
    ms = lambda ns: f"{ns / 1e6:9.3f} ms"
    print(f"\n{label}: matrix work k = {result['k_matrix']:.3f}x (measured from the matrix ops)")
    print(f"  measured base step   {ms(result['measured_base_step_ns'])}")
    print(f"  measured fast step   {ms(result['measured_fast_step_ns'])}   "
          f"(speedup {result['measured_speedup']:.3f}x)")
    print(f"  {'method':<22}{'predicted':>12}{'error':>10}")
    for method, value in result["predicted_step_ns"].items():
        print(f"  {method:<22}{ms(value):>12}{result['errors'][method]:>+10.2%}")
    print(f"  measured inside bounds: {result['inside_bounds']}; replay within "
          f"{REPLAY_TARGET:.0%}: {result['replay_within_target']}; prediction took "
          f"{result['predict_s']:.2f} s")


def _fast_default() -> str:
    capability = torch.backends.cpu.get_cpu_capability()
    return "bf16" if "AMX" in capability.upper() else "int8"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--fast", default="auto",
                        help="cpu: bf16 | int8 | auto; cuda: tf32 | bf16 (default bf16)")
    parser.add_argument("--small", action="store_true", help="a small size that runs in seconds")
    parser.add_argument("--repeats", type=int, default=None,
                        help="repeat the pair of runs (default 5, 1 with --small)")
    parser.add_argument("--steps", type=int, default=None, help="steady steps profiled per run")
    parser.add_argument("--worker-share", type=float, default=PREP_SHARE,
                        help="the worker thread's work as a share of a base step (default 0.5; "
                             "0.8 makes it bind once the matmuls are faster)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the traces in this folder")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--synthetic", type=int, default=None, metavar="KERNELS",
                        help="only time graph and replay on a synthetic trace of this many kernels")
    args = parser.parse_args(argv)
    if args.synthetic:
        result = time_synthetic(args.synthetic)
        print(json.dumps(result, indent=2))
        return 0 if result["k1_exact"] else 1
    repeats = args.repeats or (1 if args.small else 5)
    out = args.keep or Path(tempfile.mkdtemp(prefix="whatif-validation-"))
    out.mkdir(parents=True, exist_ok=True)
    runs = []
    if args.device == "cpu":
        fast = _fast_default() if args.fast == "auto" else args.fast
        base_variant = "fp32-cast" if fast == "bf16" else "fp32"
        size = ({"tokens": 128, "dim": 256, "heads": 4, "prep_rounds": 0} if args.small
                else {"tokens": 256, "dim": 768, "heads": 8, "prep_rounds": 0})  # 0: calibrate
        steps = args.steps or (6 if args.small else 20)
        print(f"cpu capability {torch.backends.cpu.get_cpu_capability()}; fast variant {fast} vs "
              f"{base_variant}; {size}; {steps} steps x {repeats} repeats; threads: main + worker "
              f"(its share calibrated to {args.worker_share:.0%} of a base step)")
        for r in range(repeats):
            folder = out / f"r{r}"
            folder.mkdir(parents=True, exist_ok=True)
            trace = profile_cpu((base_variant, fast), steps=steps, out=folder,
                                share=args.worker_share, **size)
            runs.append(validate_interleaved(trace, base_variant, fast))
            _print(runs[-1], f"cpu run {r + 1}/{repeats}")
    else:
        if not torch.cuda.is_available():
            print("no CUDA device: the cuda mode needs one", file=sys.stderr)
            return 2
        fast = "bf16" if args.fast == "auto" else args.fast
        steps = args.steps or 20
        size = {"tokens": 4096, "dim": 4096} if not args.small else {"tokens": 1024, "dim": 1024}
        for r in range(repeats):
            (out / f"r{r}").mkdir(parents=True, exist_ok=True)
            a = profile_cuda("fp32", steps=steps, out=out / f"r{r}", **size)
            b = profile_cuda(fast, steps=steps, out=out / f"r{r}", **size)
            runs.append(validate_pair(a, b))
            _print(runs[-1], f"cuda run {r + 1}/{repeats} ({torch.cuda.get_device_name()})")
    load = os.getloadavg()[0]
    if load > (os.cpu_count() or 1):
        print(f"warning: load average {load:.1f} exceeds the {os.cpu_count()} CPUs: other "
              "processes share the cores, so step times (and the worker's pace) carry their noise")
    summary = {m: statistics.median(run["errors"][m] for run in runs) for m in runs[0]["errors"]}
    print("\nmedian error over repeats: " + ", ".join(f"{m} {v:+.2%}" for m, v in summary.items()))
    print(f"replay within {REPLAY_TARGET:.0%} in {sum(r['replay_within_target'] for r in runs)}/"
          f"{len(runs)} repeats; measured inside bounds in "
          f"{sum(r['inside_bounds'] for r in runs)}/{len(runs)}")
    record = {"device": args.device, "fast": fast, "small": args.small, "runs": runs,
              "median_errors": summary, "torch": torch.__version__,
              "cpu_capability": torch.backends.cpu.get_cpu_capability(),
              "threads": threading.active_count(), "traces": str(out),
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
