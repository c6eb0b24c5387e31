"""FLOP and bytes of a decode step: each named formula on its hand-computed case."""

from __future__ import annotations

import pytest

from parity.families.decode.suite import layers_run
from parity.families.decode.config import load_config
from parity.families.decode.cost import layer_bytes, layer_flop, layer_weight_elements
from parity.families.decode.step import model_step_s
from parity.metrics.decode_cost import (
    arithmetic_intensity,
    expected_active_experts,
    gqa_attention_flop_per_token,
    kv_bytes_per_token,
    kv_bytes_read_per_step,
    lm_head_flop_per_token,
    mla_attention_flop_per_token,
    moe_flop_per_token,
    swiglu_flop_per_token,
)


def test_attention_flop_hand_cases() -> None:
    assert gqa_attention_flop_per_token(hidden=8, heads=2, kv_heads=1, head_dim=4, context=10) == 704
    assert mla_attention_flop_per_token(hidden=8, heads=2, q_lora=4, kv_lora=4, rope_head=2, nope_head=2,
                                        v_head=2, context=10) == 752


def test_mlp_head_and_moe_flop_hand_cases() -> None:
    assert swiglu_flop_per_token(hidden=8, ffn=16) == 768
    assert moe_flop_per_token(hidden=8, expert_ffn=4, routed_experts=16, top_k=2, shared_experts=1) == 832
    assert lm_head_flop_per_token(hidden=8, vocab=100) == 1600


def test_kv_bytes_hand_cases() -> None:
    assert kv_bytes_per_token(attention="gqa", itemsize=2, kv_heads=8, head_dim=128) == 4096
    assert kv_bytes_per_token(attention="mla", itemsize=2, kv_lora=512, rope_head=64) == 1152
    assert kv_bytes_read_per_step(batch=16, context=4096, bytes_per_token=4096, layers=32) == 8 * 2**30
    with pytest.raises(ValueError):
        kv_bytes_per_token(attention="mha", itemsize=2)


def test_expected_active_experts_and_intensity() -> None:
    assert expected_active_experts(routed_experts=4, top_k=2, tokens=2) == pytest.approx(3.0)
    assert expected_active_experts(routed_experts=256, top_k=8, tokens=1) == pytest.approx(8.0)
    assert expected_active_experts(routed_experts=256, top_k=8, tokens=10_000) == pytest.approx(256.0)
    assert arithmetic_intensity(100.0, 50.0) == 2.0 and arithmetic_intensity(1.0, 0.0) is None


def test_llama_layer_cost_from_the_config() -> None:
    c = load_config("llama-3-8b")
    attention = 2 * 4096 * 48 * 128 + 2 * 32 * 128 * 4096 + 4 * 32 * 128 * 4096
    assert layer_flop(c, "dense", batch=2, context=4096) == 2 * (attention + 6 * 4096 * 14336)
    weights = 4096 * 48 * 128 + 4096 * 4096 + 3 * 4096 * 14336
    assert layer_weight_elements(c, "dense", batch=1) == weights
    assert layer_bytes(c, "dense", batch=2, context=4096, itemsize=2) == weights * 2 + 2 * 4096 * 4096
    assert layer_bytes(c, "head", batch=2, context=4096, itemsize=2) == 4096 * 128256 * 2


def test_moe_layer_reads_only_the_experts_expected_active() -> None:
    c = load_config("deepseek-v3")
    one, many = (layer_weight_elements(c, "moe", batch=b) for b in (1, 4096))
    expert = 3 * 7168 * 2048
    assert many - one == pytest.approx(expert * (256 - 8), rel=1e-6)


def test_the_model_step_is_scaled_per_layer_kind() -> None:
    assert model_step_s({"dense": (2e-3, 2, 32), "head": (0.5e-3, 1, 1)}) == pytest.approx(32.5e-3)
    assert layers_run(load_config("deepseek-v3"), 2) == {"dense": (2, 3), "moe": (2, 58), "head": (1, 1)}
    assert layers_run(load_config("tiny"), 9) == {"dense": (4, 4), "head": (1, 1)}


def _row(batch: int, step_s: float, *, again: bool = False):
    from parity.model.result import CaseResult

    params = {"batch": batch, "layers_run": {}, "layers_total": {}}
    if again:
        params["again_of"] = f"batch={batch}"
    metrics = {"step_s": step_s, "tpot_s": step_s, "tokens_per_s_per_card": batch / step_s, "cards": 1,
               "memory_bytes": 0, "memory_method": "m"}
    return CaseResult(suite="decode", key=f"batch={batch}" + ("/again" if again else ""), params=params,
                      metrics=metrics, check={"passed": True})


def test_a_step_slower_than_a_larger_batch_is_rechecked_and_replaced_when_back_on_trend() -> None:
    from parity.families.decode.summary import slower_than_a_larger_batch, summarize_decode

    first = [_row(1, 0.300), _row(2, 0.003), _row(4, 0.004)]
    assert [r.key for r in slower_than_a_larger_batch(first)] == ["batch=1"]
    assert slower_than_a_larger_batch([_row(1, 0.0032), _row(2, 0.003)]) == []  # within 10%
    summary = summarize_decode([*first, _row(1, 0.002, again=True)], targets_ms=(3.0,))
    assert [p.step_s for p in summary.points] == pytest.approx([2e-3, 3e-3, 4e-3]) and not summary.findings
    stays = summarize_decode([*first, _row(1, 0.250, again=True)], targets_ms=(3.0,))
    assert stays.points[0].step_s == pytest.approx(0.3) and stays.findings[0]["code"] == "off-trend"


def test_the_summary_is_si_and_round_trips_through_its_dict() -> None:
    from parity.families.decode.figures import decode_figures
    from parity.families.decode.summary import DecodeSummary, summarize_decode

    # front (2 ms, 500 tok/s) and (4 ms, 1000 tok/s): at 3 ms, 500 + 500 * (3 - 2) / (4 - 2) = 750
    summary = summarize_decode([_row(1, 0.002), _row(4, 0.004)], targets_ms=(3.0, 1.0))
    assert summary.at_target[0].tpot_target_s == pytest.approx(3e-3)
    assert summary.at_target[0].value == pytest.approx(750.0) and summary.at_target[0].status == "interpolated"
    assert summary.at_target[1].value is None and summary.at_target[1].status == "not reached"
    data = summary.to_dict()
    assert data["version"] == DecodeSummary.VERSION == 1
    assert not any(key.endswith("_ms") for p in data["points"] for key in p)
    assert DecodeSummary.from_dict({**data, "run_id": "x"}) == summary
    names = [f.name for f in decode_figures(summary)]
    assert names == ["decode.offline.tokens_per_s_per_card.at_3ms", "decode.offline.tokens_per_s_per_card.at_1ms",
                     "decode.offline.pareto.batch_1", "decode.offline.pareto.batch_4"]
    assert decode_figures(data) == decode_figures(summary)
