"""The kernels suite's references and formulas against hand-computed small cases."""

from __future__ import annotations

import math

import pytest

from parity.metrics import kernels as formulas

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from parity.families.kernels import fp8_gemm, grouped, mla  # noqa: E402
from parity.families.kernels.check import compare, similarity_diff  # noqa: E402


# --- formulas -------------------------------------------------------------------------------

def test_block_scaled_gemm_work_and_traffic() -> None:
    assert formulas.block_scaled_gemm_flops(128, 256, 512) == 33_554_432
    # fp8 A and B, A's 128x4 scales and B's 2x4 scales in fp32, bf16 D
    assert formulas.block_scaled_gemm_bytes(128, 256, 512) == 65_536 + 131_072 + 4 * (512 + 8) + 65_536
    # K not a multiple of 128: the edge group still has a scale
    assert formulas.block_scaled_gemm_bytes(1, 1, 129) == 129 + 129 + 4 * (2 + 2) + 2


def test_grouped_gemm_counts_valid_rows_only() -> None:
    assert formulas.grouped_gemm_flops((3, 5), 4, 2) == 2 * 8 * 4 * 2
    assert formulas.grouped_gemm_bytes((3, 5), 4, 2, layout="contiguous", rows=8) == (16 + 16 + 32) * 2 + 32
    assert formulas.grouped_gemm_bytes((3, 5), 4, 2, layout="masked", rows=10) == (16 + 16 + 32) * 2 + 8
    with pytest.raises(ValueError, match="unknown grouped layout"):
        formulas.grouped_gemm_bytes((1,), 1, 1, layout="ragged", rows=1)


def test_mla_decode_counts_the_causal_mask() -> None:
    assert formulas.attended_keys(10, 2, causal=True) == [9, 10]
    assert formulas.attended_keys(10, 2, causal=False) == [10, 10]
    shape = {"query_tokens": 2, "heads": 1, "head_dim": 3, "value_dim": 2}
    assert formulas.mla_decode_flops((10,), **shape) == 2 * 5 * (9 + 10)
    assert formulas.mla_decode_flops((10,), causal=False, **shape) == 2 * 5 * 20
    # kv 10·3·2 + q 2·3·2 + out 2·2·2 + lse 2·4 + int32 (5 table entries + 1 length)
    assert formulas.mla_decode_bytes((10,), table_entries=5, **shape) == 60 + 12 + 8 + 8 + 24
    with pytest.raises(ValueError, match="do not fit"):
        formulas.attended_keys(1, 2, causal=True)


# --- fp8 block scales -------------------------------------------------------------------------

def test_fp8_scale_layout_per_group_and_per_block() -> None:
    a = torch.zeros(2, 256)
    a[0, :128], a[0, 128:], a[1, :128], a[1, 128:] = 448.0, 224.0, -4.0, 1.0
    q, scales = fp8_gemm.quantize_groups(a, rows=1)
    assert q.dtype == torch.float8_e4m3fn and q.shape == (2, 256)
    assert scales.shape == (2, 2)  # one scale per 1x128 group
    assert scales.flatten().tolist() == pytest.approx([1.0, 0.5, 4.0 / 448, 1.0 / 448], rel=1e-6)
    assert torch.allclose(fp8_gemm.dequantize(q, scales, rows=1), a, rtol=1e-6, atol=0)
    b = torch.ones(256, 128)
    b[128:] = 3.0 * 448
    qb, sb = fp8_gemm.quantize_groups(b, rows=128)
    assert sb.shape == (2, 1)  # one scale per 128x128 block
    assert sb.flatten().tolist() == pytest.approx([1.0 / 448, 3.0], rel=1e-6)
    assert torch.allclose(fp8_gemm.dequantize(qb, sb, rows=128), b, rtol=1e-6, atol=0)


def test_block_scaled_gemm_hand_case() -> None:
    a = torch.ones(1, 128).to(torch.float8_e4m3fn)
    sa = torch.tensor([[2.0]])
    b = torch.ones(256, 128)
    b[1] = 2.0
    b = b.to(torch.float8_e4m3fn)
    sb = torch.tensor([[0.5], [3.0]])  # rows 0-127 by 0.5, rows 128-255 by 3
    d = fp8_gemm.block_scaled_gemm(a, sa, b, sb, compute=torch.float64)
    assert d[0, 0] == 128 * 2 * 0.5 and d[0, 1] == 128 * 2 * 0.5 * 2 and d[0, 200] == 128 * 2 * 3


# --- grouped layouts --------------------------------------------------------------------------

def test_contiguous_layout_indices_spans_and_product() -> None:
    assert grouped.contiguous_indices((3, 1), align=2) == [0, 0, 0, -1, 1, -1]
    assert grouped.group_spans([0, 0, 0, -1, 1, -1]) == [(0, 0, 3), (1, 4, 5)]
    a = torch.tensor([[1.0], [2.0], [0.0], [0.0], [5.0], [0.0]])
    b = torch.tensor([[[10.0], [20.0]], [[100.0], [200.0]]])  # [G=2, N=2, K=1]
    out = grouped.contiguous_gemm(a, b, grouped.group_spans([0, 0, 0, -1, 1, -1]))
    assert out.tolist() == [[10, 20], [20, 40], [0, 0], [0, 0], [500, 1000], [0, 0]]


def test_masked_layout_product_and_valid_rows() -> None:
    a = torch.tensor([[[2.0], [5.0]], [[3.0], [4.0]]])  # [G=2, M_max=2, K=1]
    b = torch.tensor([[[10.0]], [[100.0]]])  # [G, N=1, K=1]
    masked_m = torch.tensor([1, 2], dtype=torch.int32)
    assert grouped.masked_gemm(a, b, masked_m).tolist() == [[[20.0], [0.0]], [[300.0], [400.0]]]
    valid = grouped.valid_rows({"a": a, "masked_m": masked_m}, "masked")
    assert valid.tolist() == [[True, False], [True, True]]


def test_group_sizes_are_drawn_around_the_expected_value_and_seeded() -> None:
    first = grouped.draw_group_m(64, 100, seed=3)
    assert first == grouped.draw_group_m(64, 100, seed=3) != grouped.draw_group_m(64, 100, seed=4)
    assert all(70 <= m <= 130 for m in first) and len(set(first)) > 10
    assert max(grouped.draw_group_m(64, 100, seed=3, max_m=110)) == 110


# --- MLA decode -------------------------------------------------------------------------------

def _tiny_mla(causal: bool) -> tuple:
    # one sequence of 3 cached tokens, pages of 2 tokens scattered: page 1 holds tokens 0-1,
    # page 0 holds token 2; head dim 2, value dim 1; two new tokens with zero queries, so every
    # visible key gets the same weight
    cache = torch.zeros(2, 2, 1, 2)
    cache[1, 0, 0] = torch.tensor([1.0, 0.0])
    cache[1, 1, 0] = torch.tensor([0.0, 1.0])
    cache[0, 0, 0] = torch.tensor([1.0, 1.0])
    q = torch.zeros(1, 2, 1, 2)
    table = torch.tensor([[1, 0]], dtype=torch.int32)
    lengths = torch.tensor([3], dtype=torch.int32)
    return mla.mla_decode(q, cache, table, lengths, value_dim=1, causal=causal, compute=torch.float64)


def test_mla_decode_hand_case_follows_block_table_and_causal_mask() -> None:
    out, lse = _tiny_mla(causal=True)
    assert out.shape == (1, 2, 1, 1) and lse.shape == (1, 1, 2)
    # token at position 1 sees keys 0-1 (values 1, 0); position 2 sees keys 0-2 (1, 0, 1)
    assert out[0, :, 0, 0].tolist() == pytest.approx([0.5, 2.0 / 3.0])
    assert lse[0, 0].tolist() == pytest.approx([math.log(2.0), math.log(3.0)])
    out, lse = _tiny_mla(causal=False)
    assert out[0, :, 0, 0].tolist() == pytest.approx([2.0 / 3.0, 2.0 / 3.0])


def test_mla_block_table_scatters_every_page_once() -> None:
    rows, blocks = mla.block_table([130, 64], page=64, seed=0)
    assert blocks == 4 and len(rows[0]) == 3
    assert sorted(rows[0] + rows[1][:1]) == [0, 1, 2, 3] and rows[1][1:] == [0, 0]


def test_mla_reference_matches_float64_on_a_model_layout() -> None:
    lengths = mla.draw_seqlens(2, 100, query_tokens=2, seed=0)
    inputs = mla.make_inputs(lengths, query_tokens=2, heads=4, page=64, device="cpu", seed=0, dtype=torch.bfloat16)
    assert inputs["q"].shape == (2, 2, 4, 576) and inputs["kv_cache"].shape[1:] == (64, 1, 576)
    out, _ = mla.torch_call(inputs)
    assert out.shape == (2, 2, 4, 512)
    assert compare(out, mla.float64_truth(inputs)[0], tolerance=1e-2)["passed"]


# --- checks -----------------------------------------------------------------------------------

def test_similarity_diff_and_compare() -> None:
    assert similarity_diff(torch.tensor([1.0, 0.0]), torch.tensor([1.0, 1.0])) == pytest.approx(1.0 / 3.0)
    assert similarity_diff(torch.zeros(2), torch.zeros(2)) == 0.0
    truth = torch.tensor([[3.0, 4.0], [1.0, 1.0]])
    got = torch.tensor([[3.0, 4.5], [9.0, 9.0]])
    verdict = compare(got, truth, valid=torch.tensor([True, False]), tolerance=0.1)
    assert verdict["passed"] and verdict["relative_error"] == pytest.approx(0.1)
    assert verdict["compared_values"] == 2
    assert not compare(got, truth, tolerance=0.1)["passed"]
    assert not compare(torch.tensor([float("nan")]), torch.tensor([1.0]), tolerance=1.0)["passed"]
