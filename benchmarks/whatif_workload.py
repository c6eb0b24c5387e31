"""The workloads the what-if validation profiles: a CPU transformer-block step, a CUDA two-stream step.

CPU: a pre-norm transformer block run twice per step (norms, attention, MLP, some host
bookkeeping) on the main thread while a worker thread prepares the next batch. Two variants of
the same step differ only in the dtype of chosen matrix ops (``fast_layers``): every matrix op
casts its inputs with a real copy before and its output after, in both variants, so the vector
work around the matrix work is the same kind of copy in both. Each step also records how long
each thread sat runnable but off the CPU (the kernel's run-queue wait), so the validation can
tell a step that other processes slowed from one the model mispredicted.
"""

from __future__ import annotations

import statistics
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch._C._profiler import _ExperimentalConfig
from whatif_scoring import VARIANT_TAG

MATRIX_LAYERS = ("qkv", "out", "up", "down", "attention")
PREP_SHARE = 0.5  # default share of a base step the worker's batch preparation takes


@dataclass(frozen=True, kw_only=True)
class Variant:
    """One side of a validation pair: the dtype each matrix op runs in.

    ``dtype`` is ``"fp32"``, ``"bf16"`` or ``"int8"`` (dynamically quantised linear layers;
    attention stays fp32); ``layers`` names the matrix ops (:data:`MATRIX_LAYERS`) that run in
    it, the others run in fp32 with the same casts.
    """

    name: str
    dtype: str
    layers: frozenset[str]

    def dtype_of(self, layer: str) -> str:
        return self.dtype if layer in self.layers else "fp32"


class CastLinear(torch.nn.Module):
    """``y = linear(x.to(dtype), W_dtype).to(float32)``; the casts copy in every dtype."""

    def __init__(self, weight: torch.Tensor, dtype: torch.dtype):
        super().__init__()
        self.weight = weight.to(dtype)
        self.dtype = dtype

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.linear(x.to(self.dtype, copy=True), self.weight)
        return y.to(torch.float32, copy=True)


class QuantLinear(torch.nn.Module):
    """An int8 dynamically quantised linear layer (fbgemm) with the same output copy as
    :class:`CastLinear`; the input is quantised inside the op."""

    def __init__(self, weight: torch.Tensor):
        super().__init__()
        linear = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=False)
        linear.weight.data.copy_(weight)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.inner = torch.ao.quantization.quantize_dynamic(
                torch.nn.Sequential(linear), {torch.nn.Linear}, dtype=torch.qint8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x.to(torch.float32, copy=True)).to(torch.float32, copy=True)


_TORCH_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def make_linear(weight: torch.Tensor, dtype: str) -> torch.nn.Module:
    """The matrix op of one layer in ``dtype`` (``fp32`` | ``bf16`` | ``int8``)."""
    if dtype == "int8":
        return QuantLinear(weight)
    if dtype not in _TORCH_DTYPES:
        raise ValueError(f"matrix dtype {dtype!r}: use fp32, bf16 or int8")
    return CastLinear(weight, _TORCH_DTYPES[dtype])


class Block(torch.nn.Module):
    """Pre-norm transformer block: RMSNorm, attention (bmm), LayerNorm, GELU MLP."""

    def __init__(self, dim: int, heads: int, variant: Variant, seed: int = 0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)

        def layer(name: str, out_dim: int, in_dim: int) -> torch.nn.Module:
            weight = torch.randn(out_dim, in_dim, generator=g) / in_dim ** 0.5
            return make_linear(weight, variant.dtype_of(name))

        self.heads = heads
        self.qkv = layer("qkv", 3 * dim, dim)
        self.out = layer("out", dim, dim)
        self.up = layer("up", 4 * dim, dim)
        self.down = layer("down", dim, 4 * dim)
        attention = variant.dtype_of("attention")
        self.attention_dtype = _TORCH_DTYPES.get(attention, torch.float32)
        self.rms_weight = torch.ones(dim)

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Softmax attention with both bmm in the attention dtype (casts copy in every dtype)."""
        dt = self.attention_dtype
        q, k, v = (t.to(dt, copy=True) for t in (q, k, v))
        scores = torch.bmm(q, k.transpose(1, 2)).to(torch.float32, copy=True) / q.shape[-1] ** 0.5
        probs = torch.softmax(scores, dim=-1).to(dt, copy=True)
        return torch.bmm(probs, v).to(torch.float32, copy=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens, dim = x.shape
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.rms_weight
        q, k, v = self.qkv(h).view(tokens, 3, self.heads, dim // self.heads).unbind(1)
        q, k, v = (t.transpose(0, 1) for t in (q, k, v))
        attn = self.attend(q, k, v).transpose(0, 1).reshape(tokens, dim)
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


def run_queue_ns(native_id: int) -> tuple[int, int] | None:
    """``(on-CPU ns, run-queue wait ns)`` a thread has accumulated, from the kernel's
    ``/proc/self/task/TID/schedstat`` (first two fields); None where the file is not there
    (not Linux, or a kernel without schedstats)."""
    try:
        fields = Path(f"/proc/self/task/{native_id}/schedstat").read_text().split()
        return int(fields[0]), int(fields[1])
    except (OSError, ValueError, IndexError):
        return None


def _thread_waits(tids: tuple[int, int]) -> list[tuple[int, int] | None]:
    return [run_queue_ns(t) for t in tids]


def _wait_record(before: list, after: list, *, variant: str, step_num: int, wall_ns: int) -> dict:
    """One step's run-queue wait and on-CPU time per thread (ns), ``None`` when unreadable."""
    rec: dict = {"profiler_step": step_num, "variant": variant, "wall_ns": wall_ns}
    for role, b, a in zip(("main", "worker"), before, after):
        rec[f"{role}_cpu_ns"] = None if a is None or b is None else a[0] - b[0]
        rec[f"{role}_wait_ns"] = None if a is None or b is None else a[1] - b[1]
    return rec


def profile_cpu(variants: tuple[Variant, Variant], *, tokens: int, dim: int, heads: int,
                steps: int, prep_rounds: int, out: Path, share: float = PREP_SHARE
                ) -> tuple[Path, list[dict]]:
    """Profile ``steps`` steady steps of each variant, alternating step by step, in one trace.

    Interleaving puts both variants under the same machine conditions (other processes, clock
    changes), so adjacent steps compare like with like. Each step is tagged with a
    ``whatif-variant=NAME`` annotation on the main thread. Returns the trace and, per step, the
    run-queue wait of both threads (:func:`run_queue_ns`) keyed by the profiler's step number.
    """
    torch.set_num_threads(1)  # one core per thread: main thread and worker thread
    torch.manual_seed(0)
    models = {v.name: [Block(dim, heads, v, seed=i) for i in range(2)] for v in variants}
    pool = ThreadPoolExecutor(1)
    tids = (threading.get_native_id(), pool.submit(threading.get_native_id).result())
    path = out / f"cpu_{variants[0].name}_{variants[1].name}.json"
    with torch.no_grad():  # untimed warm-up: first calls pay allocation and weight packing
        x = prepare_batch(tokens, dim, 1)
        for blocks in models.values():
            for _ in range(2):
                for block in blocks:
                    block(x)
    if prep_rounds <= 0:
        prep_rounds = calibrate_prep(models[variants[0].name], tokens, dim, share=share)
    waits: list[dict] = []
    schedule = torch.profiler.schedule(wait=1, warmup=4, active=2 * steps + 2, repeat=1)
    with torch.no_grad(), torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        schedule=schedule,
        experimental_config=_ExperimentalConfig(profile_all_threads=True),
        on_trace_ready=lambda p: p.export_chrome_trace(str(path)),
    ) as prof:
        batch = prepare_batch(tokens, dim, prep_rounds)
        for step in range(2 * steps + 7):
            variant = variants[step % 2].name
            before, t0 = _thread_waits(tids), time.perf_counter_ns()
            with torch.profiler.record_function(VARIANT_TAG + variant):
                future = pool.submit(prepare_batch, tokens, dim, prep_rounds)
                host_bookkeeping(step)
                x = batch
                for block in models[variant]:
                    x = block(x)
                float(x[0, 0])
                batch = future.result()
            waits.append(_wait_record(before, _thread_waits(tids), variant=variant,
                                      step_num=prof.step_num, wall_ns=time.perf_counter_ns() - t0))
            prof.step()
    pool.shutdown()
    return path, waits


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
