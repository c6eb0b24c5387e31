"""Offline decode through a real engine's own Python API (vLLM's ``LLM``): the engine's decode
step per batch size, timed by the harness, for ``parity decode offline --engine vllm``.

The engine is set up as ``vllm bench throughput`` sets up its own (``LLM.from_engine_args`` of
engine arguments where only the model, dtype, length bound, ``max_num_seqs`` = the largest batch,
KV cache bytes and seed are given; everything else, ``max_num_batched_tokens``, compilation,
prefix caching, stats logging included, is the engine's default), and the arguments asked and
those the engine resolved are recorded with the run (``engine_args``).

For a batch ``B`` each ``generate`` gets ``B`` fresh prompts of ``input_tokens`` random token
ids (seeded, drawn before timing, never repeated, so the engine's prefix cache never skips a
prefill, as with ``vllm bench throughput``'s new prompts per request) and generates with the
output length forced (``ignore_eos``, temperature 1, top-p 1: ``vllm bench throughput``'s
sampling parameters). One ``generate`` of ``n`` tokens is one prefill step and ``n - 1`` decode
steps of the whole batch, so the harness's two-length slope
(``parity.harness.strategies.TwoLengthSlope``) times ``generate`` at ``short`` and ``long``
output lengths and takes

    step = (t(long) - t(short)) / (long - short)

the engine's decode step at batch ``B`` with prefill, scheduling set-up and the Python call
cancelled. As in the step model (``parity.metrics.decode``): ``TPOT = step / accepted tokens per
step`` (1: no speculative decoding), tokens/s per card ``= B / TPOT / cards``. Beside it, the
whole call at the long length, ``B·long / median t(long)``, is ``vllm bench throughput``'s output
tokens/s definition (output tokens over the elapsed time of one ``generate`` of the batch,
prefill included), here the median over the timed calls rather than one call.

The check: every sequence of the last timed call returned exactly the forced length.

The engine runs the batch through its own scheduler, so "offline, engine" numbers include the
engine's per-step scheduling and sampling, unlike the step model's; both exclude request
arrival and load balancing across replicas.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from parity.harness.strategies import TwoLengthSlope
from parity.harness.work import Work
from parity.metrics.decode import offline_tpot_s, tokens_per_s_per_card
from parity.model.errors import ParityError

ENGINES = ("vllm",)
MODE = "offline, engine"
CALL_OUTPUT_METHOD = ("batch x long / median t(long) over generate calls of fresh prompts: vllm bench "
                      "throughput's output tokens/s (output tokens / elapsed of one generate, prefill included)")


@dataclass(frozen=True, kw_only=True)
class EngineOptions:
    """What ``parity decode offline --engine`` measures (SI units; lengths in tokens)."""

    engine: str = "vllm"
    model: str = ""
    batches: tuple[int, ...] = (1, 2, 4, 8, 16)
    input_tokens: int = 128
    output_tokens: int = 32
    short_tokens: int = 2
    cards: int = 1
    tpot_ms: tuple[float, ...] = (5.0, 10.0)
    dtype: str = "bfloat16"
    seed: int = 0
    min_samples: int = 3
    budget_s: float = 2.0

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ParityError(f"--engine {self.engine!r}: not supported; use one of {', '.join(ENGINES)}")
        if not 0 < self.short_tokens < self.output_tokens:
            raise ParityError(f"--output-tokens {self.output_tokens}: must exceed the short length "
                              f"{self.short_tokens} the step is measured against; e.g. --output-tokens 32")

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "batches": list(self.batches), "tpot_ms": list(self.tpot_ms)}


def model_shape(model: str) -> dict[str, Any]:
    """The decoder's shape from a model folder's ``config.json`` (Hugging Face keys); a one-line
    error when the folder or the file is missing or the model is not a dense GQA decoder."""
    path = Path(model) / "config.json"
    try:
        config = json.loads(path.read_text())
    except OSError:
        raise ParityError(f"--model {model}: no config.json there; give a model folder "
                          "(scripts/vllm_cpu_server.py --build-only makes a tiny one)") from None
    except ValueError:
        raise ParityError(f"--model {model}: {path} is not JSON") from None
    try:
        heads = int(config["num_attention_heads"])
        hidden = int(config["hidden_size"])
        rope = config.get("rope_theta") or (config.get("rope_parameters") or {}).get("rope_theta") or 10000.0
        return {"name": Path(model).name, "hidden": hidden, "layers": int(config["num_hidden_layers"]),
                "vocab": int(config["vocab_size"]), "rms_eps": float(config.get("rms_norm_eps", 1e-5)),
                "rope_theta": float(rope), "heads": heads,
                "kv_heads": int(config.get("num_key_value_heads") or heads),
                "head_dim": int(config.get("head_dim") or hidden // heads),
                "ffn": int(config["intermediate_size"])}
    except (KeyError, TypeError, ValueError) as exc:
        raise ParityError(f"--model {model}: {path} lacks a dense decoder's shape ({exc}); "
                          "a Llama-style config is needed") from None


def step_model_toml(shape: dict[str, Any]) -> str:
    """parity's own step-model config (``parity.families.decode.config``) for the same shape."""
    return (f'name = "{shape["name"]}"\nsource = "config.json of the engine\'s model"\n'
            f'hidden = {shape["hidden"]}\nlayers = {shape["layers"]}\nvocab = {shape["vocab"]}\n'
            f'rms_eps = {shape["rms_eps"]!r}\nrope_theta = {shape["rope_theta"]!r}\n'
            f'accepted_tokens_per_step = 1.0\n\n[attention]\ntype = "gqa"\nheads = {shape["heads"]}\n'
            f'kv_heads = {shape["kv_heads"]}\nhead_dim = {shape["head_dim"]}\n\n[mlp]\nffn = {shape["ffn"]}\n')


class VllmEngine:
    """vLLM's offline ``LLM`` for one model, sized for the largest batch; ``generate(prompts,
    n)`` forces ``n`` output tokens per prompt and returns each sequence's token count."""

    def __init__(self, options: EngineOptions, *, kv_cache_bytes: int) -> None:
        try:
            import vllm
            from vllm.engine.arg_utils import EngineArgs
        except ImportError as exc:
            raise ParityError(f"--engine vllm: vLLM does not import here ({exc}); run parity with the Python "
                              "of an environment that has it (scripts/vllm_cpu_server.py --help: the CPU build)"
                              ) from None
        self.version = str(getattr(vllm, "__version__", "unknown"))
        self._vllm = vllm
        self.asked = engine_args(options, kv_cache_bytes=kv_cache_bytes)
        self.llm = vllm.LLM.from_engine_args(EngineArgs(**self.asked))
        self.engine_args = {"asked": self.asked, "resolved": resolved_args(self.llm)}

    def generate(self, prompts: list[list[int]], tokens: int) -> list[int]:
        params = self._vllm.SamplingParams(n=1, temperature=1.0, top_p=1.0, ignore_eos=True, max_tokens=tokens)
        outputs = self.llm.generate([{"prompt_token_ids": p} for p in prompts], params, use_tqdm=False)
        return [len(o.outputs[0].token_ids) for o in outputs]

    def close(self) -> None:
        """Stop the engine's processes now, not at interpreter exit."""
        engine = getattr(self.llm, "llm_engine", None)
        shutdown = getattr(getattr(engine, "engine_core", None), "shutdown", None)
        if callable(shutdown):
            shutdown()
        del self.llm


def engine_args(options: EngineOptions, *, kv_cache_bytes: int) -> dict[str, Any]:
    """The engine arguments given, as ``vllm bench throughput --model M --dtype D --max-model-len L
    --max-num-seqs B --kv-cache-memory-bytes K --seed S`` gives them; the rest are the engine's
    defaults (see ``resolved_args``). Length bound: input + output + 16 tokens of slack."""
    return {"model": options.model, "dtype": options.dtype, "seed": options.seed,
            "max_model_len": options.input_tokens + options.output_tokens + 16,
            "max_num_seqs": max(max(options.batches), 1), "kv_cache_memory_bytes": kv_cache_bytes}


def resolved_args(llm: Any) -> dict[str, Any]:
    """What the engine made of its arguments (the settings that change a step's time), read from
    its config; a setting this version does not expose is left out."""
    config = getattr(getattr(llm, "llm_engine", None), "vllm_config", None)
    paths = {"dtype": ("model_config", "dtype"), "max_model_len": ("model_config", "max_model_len"),
             "enforce_eager": ("model_config", "enforce_eager"), "seed": ("model_config", "seed"),
             "max_num_seqs": ("scheduler_config", "max_num_seqs"),
             "max_num_batched_tokens": ("scheduler_config", "max_num_batched_tokens"),
             "enable_chunked_prefill": ("scheduler_config", "enable_chunked_prefill"),
             "async_scheduling": ("scheduler_config", "async_scheduling"),
             "enable_prefix_caching": ("cache_config", "enable_prefix_caching"),
             "compilation_mode": ("compilation_config", "mode"),
             "disable_log_stats": ("observability_config", "disable_log_stats")}
    out: dict[str, Any] = {}
    for key, (part, name) in paths.items():
        value = getattr(getattr(config, part, None), name, None)
        if value is not None:
            out[key] = value if isinstance(value, (bool, int, float)) else str(value)
    return out


# The KV cache the engine is given: twice what the largest batch holds at full length, at least this.
KV_CACHE_FLOOR_BYTES = 256 * 2**20


def kv_cache_bytes(shape: dict[str, Any], options: EngineOptions, *, itemsize: int = 2) -> int:
    """``2·need`` (at least ``KV_CACHE_FLOOR_BYTES``), ``need = layers·2·kv_heads·head_dim·itemsize``
    bytes per token times the largest batch times its full length: the sweep's cache, sized
    explicitly so the engine does not claim a share of a shared host's memory. Example: 2 layers,
    2 KV heads of 64, bf16: 1 KiB per token; batch 16 of 160 tokens: 2.5 MiB -> the floor."""
    per_token = shape["layers"] * 2 * shape["kv_heads"] * shape["head_dim"] * itemsize
    need = per_token * max(options.batches) * (options.input_tokens + options.output_tokens)
    return max(KV_CACHE_FLOOR_BYTES, 2 * need)


def open_engine(options: EngineOptions, shape: dict[str, Any]) -> VllmEngine:
    """The engine ``options.engine`` names, loaded with ``options.model``."""
    return VllmEngine(options, kv_cache_bytes=kv_cache_bytes(shape, options))


def random_prompts(*, batch: int, tokens: int, vocab: int, seed: int) -> list[list[int]]:
    """``batch`` prompts of ``tokens`` token ids drawn uniformly (seeded) from ``[2, vocab)``
    (ids 0 and 1 are commonly the start and end tokens)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    return [[int(t) for t in rng.integers(2, max(vocab, 3), size=tokens)] for _ in range(batch)]


class FreshPrompts:
    """A new batch of prompts for every call: ``calls`` batches drawn (seeded) before timing, so
    taking one inside a timed call costs a list index; past them, more are drawn as needed."""

    def __init__(self, *, batch: int, tokens: int, vocab: int, seed: int, calls: int) -> None:
        self.batch, self.tokens, self.vocab, self.seed = batch, tokens, vocab, seed
        self.drawn = [self._draw(i) for i in range(calls)]
        self.used = 0

    def _draw(self, index: int) -> list[list[int]]:
        return random_prompts(batch=self.batch, tokens=self.tokens, vocab=self.vocab,
                              seed=self.seed * 1_000_003 + self.batch * 10_007 + index)

    def next(self) -> list[list[int]]:
        index, self.used = self.used, self.used + 1
        return self.drawn[index] if index < len(self.drawn) else self._draw(index)


ATTEMPTS = 2


def calls_per_batch(options: EngineOptions) -> int:
    """The most ``generate`` calls one batch's slope makes: per attempt, each length's warm-up call
    (no warm-up time: one call) and at most ``max_samples`` timed calls."""
    return ATTEMPTS * 2 * (1 + max(options.min_samples, 10))


def engine_work(generate: Callable[[list[list[int]], int], list[int]], prompts: FreshPrompts, *,
                options: EngineOptions) -> Work:
    """``generate`` of a fresh batch at the short and long lengths as declared work (see the
    module docstring)."""
    last: dict[str, Any] = {}

    def call(tokens: int) -> None:
        batch = prompts.next()
        last["tokens"], last["batch"], last["counts"] = tokens, len(batch), generate(batch, tokens)

    def check() -> dict[str, Any]:
        counts, tokens = last.get("counts") or [], last.get("tokens")
        passed = bool(counts) and len(counts) == last.get("batch") and all(c == tokens for c in counts)
        return {"passed": passed, "method": "every sequence of the last timed call returned the forced length",
                "asked": tokens, "returned": sorted(set(counts)), "prompt_batches": prompts.used}

    return Work(call=call, check=check, strategy=TwoLengthSlope(short=options.short_tokens,
                                                                long=options.output_tokens, attempts=ATTEMPTS),
                flush_cache=False, warmup_s=0.0, budget_s=options.budget_s, min_samples=options.min_samples,
                max_samples=max(options.min_samples, 10))


def batch_metrics(metrics: dict[str, Any], *, batch: int, options: EngineOptions) -> dict[str, Any]:
    """Step, TPOT, tokens/s per card from the slope; the whole call's output tokens/s beside."""
    step = float(metrics["slope_s"])
    out: dict[str, Any] = {"step_s": step, "cards": options.cards, "mode": MODE,
                           "call_output_tok_s": batch * options.output_tokens / metrics["long_median_s"],
                           "call_output_method": CALL_OUTPUT_METHOD}
    if step > 0 and math.isfinite(step):
        tpot = offline_tpot_s(step, 1.0)
        weight = options.cards / (batch * (options.output_tokens - options.short_tokens))
        out.update(tpot_s=tpot, tokens_per_s_per_card=tokens_per_s_per_card(batch, tpot, options.cards),
                   headline_metric="tokens_per_s_per_card",  # compare's ratio, from the slope
                   headline_medians={"short": -weight, "long": weight})  # 1 / (cards·slope / batch)
    return out
