"""``parity decode offline --engine``'s parts that need no engine: the model's shape and the step
model's config made from it, the declared work's check, the per-batch figures and the summary
(hand-computed), and the command's refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from parity.families.decode.config import load_config
from parity.families.decode.engine import (
    EngineOptions,
    FreshPrompts,
    batch_metrics,
    calls_per_batch,
    engine_args,
    engine_work,
    model_shape,
    random_prompts,
    step_model_toml,
)
from parity.families.decode.engine_summary import summarize_engine
from parity.model.errors import ParityError
from parity.model.result import CaseResult

LLAMA = {"hidden_size": 256, "num_hidden_layers": 2, "vocab_size": 380, "num_attention_heads": 4,
         "num_key_value_heads": 2, "intermediate_size": 512, "rms_norm_eps": 1e-6,
         "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"}}


def model_folder(tmp_path: Path, config: dict) -> Path:
    folder = tmp_path / "tiny-llama"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_shape_from_config_json_becomes_a_step_model_config(tmp_path: Path) -> None:
    shape = model_shape(str(model_folder(tmp_path, LLAMA)))
    assert shape == {"name": "tiny-llama", "hidden": 256, "layers": 2, "vocab": 380, "rms_eps": 1e-6,
                     "rope_theta": 10000.0, "heads": 4, "kv_heads": 2, "head_dim": 64, "ffn": 512}
    toml = tmp_path / "tiny-llama.toml"
    toml.write_text(step_model_toml(shape))
    config = load_config(str(toml))
    assert (config.hidden, config.layers, config.vocab) == (256, 2, 380)
    assert (config.attention.heads, config.attention.kv_heads, config.attention.head_dim) == (4, 2, 64)


def test_a_folder_without_a_decoder_shape_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ParityError, match="no config.json there"):
        model_shape(str(tmp_path))
    with pytest.raises(ParityError, match="lacks a dense decoder's shape"):
        model_shape(str(model_folder(tmp_path, {"hidden_size": 8})))


def test_options_refuse_an_output_length_not_above_the_short_one() -> None:
    with pytest.raises(ParityError, match="--output-tokens 2: must exceed the short length 2"):
        EngineOptions(model="m", output_tokens=2)
    with pytest.raises(ParityError, match="--engine 'sglang'"):
        EngineOptions(engine="sglang", model="m")


def test_prompts_are_seeded_and_avoid_the_start_and_end_ids() -> None:
    a = random_prompts(batch=3, tokens=5, vocab=10, seed=1)
    assert a == random_prompts(batch=3, tokens=5, vocab=10, seed=1)
    assert len(a) == 3 and all(len(p) == 5 and all(2 <= t < 10 for t in p) for p in a)


def test_work_checks_the_forced_length_of_the_last_call() -> None:
    options = EngineOptions(model="m", output_tokens=8)
    answers = {2: [2, 2], 8: [8, 7]}
    prompts = FreshPrompts(batch=2, tokens=1, vocab=10, seed=0, calls=4)
    work = engine_work(lambda batch, n: answers[n], prompts, options=options)
    assert (work.strategy.short, work.strategy.long) == (2, 8) and work.flush_cache is False
    work.call(2)
    assert work.check()["passed"] is True
    work.call(8)
    verdict = work.check()
    assert verdict["passed"] is False and verdict["returned"] == [7, 8] and verdict["prompt_batches"] == 2


def test_every_call_gets_a_fresh_seeded_batch() -> None:
    # The engine's prefix cache must never skip a prefill: no prompt is sent twice, drawn ahead or not.
    seen: list[list[list[int]]] = []
    prompts = FreshPrompts(batch=3, tokens=16, vocab=1000, seed=0, calls=2)
    work = engine_work(lambda batch, n: (seen.append(batch), [n] * len(batch))[1], prompts,
                       options=EngineOptions(model="m", output_tokens=8))
    for n in (2, 8, 2, 8, 8):
        work.call(n)
    flat = [tuple(p) for batch in seen for p in batch]
    assert len(seen) == 5 and all(len(b) == 3 for b in seen) and len(set(flat)) == 15
    again = FreshPrompts(batch=3, tokens=16, vocab=1000, seed=0, calls=0)
    assert [again.next() for _ in range(5)] == seen  # drawn ahead or on demand: the same seeded batches
    other = FreshPrompts(batch=4, tokens=16, vocab=1000, seed=0, calls=1).next()
    assert not {tuple(p) for p in other} & set(flat)  # another batch size draws other prompts


def test_calls_drawn_ahead_cover_a_whole_slope() -> None:
    # 2 attempts x 2 lengths x (1 warm-up + at most 10 timed calls) = 44.
    assert calls_per_batch(EngineOptions(model="m")) == 44
    assert calls_per_batch(EngineOptions(model="m", min_samples=12)) == 2 * 2 * 13


def test_engine_args_are_what_vllm_bench_throughput_gives() -> None:
    # vllm bench throughput --model m --dtype bfloat16 --max-model-len 176 --max-num-seqs 16
    # --kv-cache-memory-bytes K --seed 0: nothing else asked, max_num_batched_tokens the engine's.
    args = engine_args(EngineOptions(model="m", batches=(1, 4, 16), input_tokens=128, output_tokens=32),
                       kv_cache_bytes=256 * 2**20)
    assert args == {"model": "m", "dtype": "bfloat16", "seed": 0, "max_model_len": 176, "max_num_seqs": 16,
                    "kv_cache_memory_bytes": 256 * 2**20}


def test_batch_metrics_from_the_slope() -> None:
    # Batch 4, t(2) = 30 ms, t(32) = 180 ms: step = 150 ms / 30 = 5 ms; 4 / 5 ms = 800 tok/s on one
    # card, 400 on two; the whole call: 4 x 32 / 0.18 s = 711.1 output tok/s.
    options = EngineOptions(model="m", output_tokens=32, cards=2)
    m = batch_metrics({"slope_s": 0.005, "long_median_s": 0.18}, batch=4, options=options)
    assert m["step_s"] == 0.005 and m["tpot_s"] == 0.005
    assert m["tokens_per_s_per_card"] == pytest.approx(400.0)
    assert m["call_output_tok_s"] == pytest.approx(4 * 32 / 0.18)
    # declared for compare's within-run CI: 2 / (4 x 30) x (180 ms - 30 ms) = 1 / 400
    w = m["headline_medians"]
    assert w["long"] == -w["short"] == pytest.approx(1 / 60) and 1 / (w["short"] * 0.03 + w["long"] * 0.18) == pytest.approx(400.0)
    assert "tpot_s" not in batch_metrics({"slope_s": -0.001, "long_median_s": 0.1}, batch=1, options=options)


def case(batch: int, tpot_s: float, *, ok: bool = True) -> CaseResult:
    return CaseResult(suite="decode-engine", key=f"batch={batch}", params={"batch": batch},
                      metrics={"step_s": tpot_s, "tpot_s": tpot_s, "tokens_per_s_per_card": batch / tpot_s,
                               "call_output_tok_s": 0.9 * batch / tpot_s},
                      check={"passed": ok, "method": "test"})


def test_summary_front_and_targets_by_hand() -> None:
    # Points (TPOT ms, tok/s): b1 (2, 500), b2 (4.5, 444) off the front, b4 (4, 1000), b8 (8, 1000) not
    # above b4 so off the front. Target 3 ms: 500 + (1000 - 500) x (3 - 2) / (4 - 2) = 750.
    results = [case(1, 0.002), case(2, 0.0045), case(4, 0.004), case(8, 0.008), case(16, 0.001, ok=False)]
    options = EngineOptions(model="m", batches=(1, 2, 4, 8, 16), tpot_ms=(1.0, 3.0, 4.0, 9.0))
    args = {"asked": {"max_num_seqs": 16}, "resolved": {"max_num_batched_tokens": 2816}}
    s = summarize_engine(results, options=options, engine_version="0.0", engine_args=args).to_dict()
    assert s["mode"] == "offline, engine" and s["failed"] == [16] and s["version"] == 2
    assert s["engine_args"] == args
    assert [f["batch"] for f in s["pareto"]] == [1, 4]
    low, mid, edge, high = s["at_target"]
    assert low["value"] is None and "below the fastest" in low["reason"]
    assert mid["value"] == pytest.approx(750.0) and mid["status"] == "interpolated"
    assert edge["value"] == pytest.approx(1000.0) and edge["status"] == "measured"
    assert high["value"] is None and high["status"] == "not reached"


def test_kv_cache_is_sized_for_the_sweep() -> None:
    from parity.families.decode.engine import KV_CACHE_FLOOR_BYTES, kv_cache_bytes

    shape = {"layers": 32, "kv_heads": 8, "head_dim": 128}
    # 32 x 2 x 8 x 128 x 2 B = 128 KiB per token; batch 64 of 1,024 tokens: 8 GiB, twice that given.
    options = EngineOptions(model="m", batches=(1, 64), input_tokens=992, output_tokens=32)
    assert kv_cache_bytes(shape, options) == 2 * 128 * 1024 * 64 * 1024
    assert kv_cache_bytes({"layers": 2, "kv_heads": 2, "head_dim": 64}, EngineOptions(model="m")) == KV_CACHE_FLOOR_BYTES


def test_view_shows_the_engine_arguments_and_the_whole_call_definition() -> None:
    from rich.console import Console

    from parity.families.decode.engine_view import render_engine

    args = {"asked": {"model": "/m", "max_num_seqs": 16}, "resolved": {"max_num_batched_tokens": 2816}}
    s = summarize_engine([case(1, 0.002), case(4, 0.004)], options=EngineOptions(model="m", batches=(1, 4)),
                         engine_version="0.0", engine_args=args).to_dict()
    console = Console(width=200, record=True)
    console.print(render_engine(s))
    text = console.export_text()
    assert "engine arguments asked: max_num_seqs=16" in text and "/m" not in text.split("asked:")[1].split("\n")[0]
    assert "resolved by the engine: max_num_batched_tokens=2816" in text
    assert "median time of one generate of fresh prompts" in text
