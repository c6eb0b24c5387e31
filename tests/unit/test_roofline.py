"""The roofline formulas on hand-computed cases."""

from __future__ import annotations

import math

import pytest

from parity.metrics.roofline import (
    COMPUTE_BOUND,
    MEMORY_BOUND,
    arithmetic_intensity,
    attainable_flops,
    best_fraction_of_ceiling,
    classify,
    efficiency,
    fraction_of,
    gemm_flops,
    gemm_intensity,
    gemm_min_bytes,
    median_efficiency,
    place,
    ridge_point,
)


def test_flops_bytes_intensity_by_hand() -> None:
    # 2x3x4: F = 2*2*3*4 = 48; bf16: Q = (2*4 + 4*3)*2 + 2*3*2 = 40 + 12 = 52 B.
    assert gemm_flops(2, 3, 4) == 48
    assert gemm_min_bytes(2, 3, 4, in_bytes=2, out_bytes=2) == 52
    assert arithmetic_intensity(48, 52) == pytest.approx(48 / 52)
    assert gemm_intensity(2, 3, 4, in_bytes=2, out_bytes=2) == pytest.approx(0.923076923)


def test_fp8_traffic_uses_both_element_sizes() -> None:
    # fp8 in (1 B), bf16 out (2 B): 4096^3 -> Q = 2*4096^2*1 + 4096^2*2 = 4*4096^2 B.
    n = 4096
    assert gemm_min_bytes(n, n, n, in_bytes=1, out_bytes=2) == 4 * n * n
    assert gemm_intensity(n, n, n, in_bytes=1, out_bytes=2) == pytest.approx(2 * n**3 / (4 * n * n))


def test_square_bf16_intensity_is_n_over_3() -> None:
    # Square n in 2-byte types: F/Q = 2n^3 / (6 n^2) = n/3.
    for n in (64, 1024, 8192):
        assert gemm_intensity(n, n, n, in_bytes=2, out_bytes=2) == pytest.approx(n / 3)


def test_ridge_attainable_efficiency() -> None:
    peak, bandwidth = 1000e12, 4e12  # 1000 TFLOP/s, 4 TB/s -> ridge 250 FLOP/B
    assert ridge_point(peak, bandwidth) == 250.0
    assert attainable_flops(100.0, peak_flops=peak, bandwidth_bps=bandwidth) == 400e12
    assert attainable_flops(500.0, peak_flops=peak, bandwidth_bps=bandwidth) == peak
    assert efficiency(300e12, 400e12) == 0.75
    assert fraction_of(500e12, peak) == 0.5
    assert fraction_of(1.0, None) is None and fraction_of(1.0, 0.0) is None


def test_classification_at_the_ridge() -> None:
    ridge = 250.0
    assert classify(250.0, ridge) == (COMPUTE_BOUND, True)  # exactly at R: compute-bound
    assert classify(math.nextafter(250.0, 0.0), ridge) == (MEMORY_BOUND, True)
    assert classify(187.5, ridge) == (MEMORY_BOUND, True)  # R * 0.75, edge of near-ridge
    assert classify(187.4, ridge) == (MEMORY_BOUND, False)
    assert classify(312.5, ridge) == (COMPUTE_BOUND, True)  # R * 1.25
    assert classify(312.6, ridge) == (COMPUTE_BOUND, False)


def test_place_combines_the_figures() -> None:
    point = place(intensity=100.0, achieved_flops=200e12, peak_flops=1000e12, bandwidth_bps=4e12)
    assert point.attainable_flops == 400e12
    assert point.efficiency == 0.5
    assert point.fraction_of_ceiling == 0.2
    assert point.kind == MEMORY_BOUND and not point.near_ridge
    assert point.to_dict()["class"] == MEMORY_BOUND


def test_sweep_summaries() -> None:
    assert best_fraction_of_ceiling([1.0, 9.97, 5.0], 10.0) == pytest.approx(0.997)
    summary = median_efficiency([0.4, 0.5, 0.3, 0.6, 0.45])
    assert summary["median"] == 0.45
    assert summary["n"] == 5
    assert summary["ci95_low"] <= 0.45 <= summary["ci95_high"]
    assert summary["p25"] == 0.4 and summary["p75"] == 0.5  # linear interpolation, type 7
    assert summary["min"] == 0.3 and summary["max"] == 0.6


def test_bad_inputs_raise() -> None:
    with pytest.raises(ValueError):
        gemm_flops(0, 1, 1)
    with pytest.raises(ValueError):
        gemm_min_bytes(1, 1, 1, in_bytes=0, out_bytes=2)
    with pytest.raises(ValueError):
        ridge_point(0.0, 1.0)
    with pytest.raises(ValueError):
        median_efficiency([])
    with pytest.raises(ValueError):
        best_fraction_of_ceiling([], 1.0)
