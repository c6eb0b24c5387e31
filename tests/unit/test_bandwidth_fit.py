"""Byte conventions, bandwidth, utilization and the ``t = a + V/b`` fit on hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from parity.metrics.bandwidth import (
    bandwidth_gbps,
    bytes_moved,
    fit_fixed_cost,
    fitted_bandwidth_bps,
    n_half_bytes,
    utilization,
)
from parity.model.errors import ParityError


def test_stream_byte_convention_per_op() -> None:
    assert bytes_moved("copy", 1000) == 2000
    assert bytes_moved("read", 1000) == 1000
    assert bytes_moved("write", 1000) == 1000
    assert bytes_moved("triad", 1000) == 3000
    assert bytes_moved("h2d", 1000) == 1000
    with pytest.raises(ParityError, match="unknown bandwidth op 'scale'"):
        bytes_moved("scale", 10)


def test_bandwidth_and_utilization_hand_computed() -> None:
    # 2 GB in 0.1 s is 20 GB/s; 20 of a 25 GB/s ceiling is 80%.
    assert bandwidth_gbps(2e9, 0.1) == pytest.approx(20.0)
    assert utilization(20.0, 25.0) == pytest.approx(0.8)
    assert utilization(20.0, None) is None
    with pytest.raises(ParityError):
        bandwidth_gbps(1.0, 0.0)


def test_n_half_is_fixed_cost_times_bandwidth() -> None:
    # a = 5 us, b = 100 GB/s: n½ = 5e-6 * 1e11 = 500 kB; at that size V/t = b/2.
    assert n_half_bytes(5e-6, 1e11) == pytest.approx(5e5)
    t = 5e-6 + 5e5 / 1e11
    assert 5e5 / t == pytest.approx(0.5e11)


def test_fitted_bandwidth_is_volume_over_the_fitted_time() -> None:
    # a = 1 us, b = 1 GB/s, V = 1000 B: t = 1e-6 + 1e-6 = 2 us, so 5e8 B/s; at V = n½ = 1000 B
    # that is b/2; far past n½ it tends to b.
    assert fitted_bandwidth_bps(1000, fixed_cost_s=1e-6, asymptotic_bps=1e9) == pytest.approx(5e8)
    assert fitted_bandwidth_bps(1e12, fixed_cost_s=1e-6, asymptotic_bps=1e9) == pytest.approx(1e9, rel=1e-5)
    assert fitted_bandwidth_bps(0, fixed_cost_s=1e-6, asymptotic_bps=1e9) == 0.0
    with pytest.raises(ValueError, match="b > 0"):
        fitted_bandwidth_bps(10, fixed_cost_s=1e-6, asymptotic_bps=0.0)


def test_fit_recovers_a_known_curve_exactly() -> None:
    volumes = np.logspace(10, 32, 23, base=2.0)  # 1 KiB .. 4 GiB
    a, b = 7e-6, 40e9
    fit = fit_fixed_cost(volumes, a + volumes / b)
    assert fit.fixed_cost_s == pytest.approx(a, rel=1e-9)
    assert fit.asymptotic_gbps == pytest.approx(40.0, rel=1e-9)
    assert fit.n_half_bytes == pytest.approx(a * b, rel=1e-9)
    assert fit.relative_rms_residual == pytest.approx(0.0, abs=1e-9)
    assert (fit.points, fit.min_bytes, fit.max_bytes) == (23, 1024, 4 * 2**30)
    assert fit.to_dict()["fitted_points"] == 23


def test_fit_with_noise_stays_close_and_reports_the_residual() -> None:
    rng = np.random.default_rng(1)
    volumes = np.logspace(10, 30, 41, base=2.0)
    truth = 3e-6 + volumes / 20e9
    noisy = truth * (1 + 0.03 * rng.standard_normal(volumes.size))
    fit = fit_fixed_cost(volumes, noisy)
    assert fit.fixed_cost_s == pytest.approx(3e-6, rel=0.05)
    assert fit.asymptotic_gbps == pytest.approx(20.0, rel=0.05)
    assert 0.01 < fit.relative_rms_residual < 0.05


def test_fit_clamps_a_negative_fixed_cost_to_zero() -> None:
    volumes = np.array([1e3, 1e6, 1e9])
    times = volumes / 10e9 * np.array([0.9, 1.0, 1.0])  # small point faster than the line
    fit = fit_fixed_cost(volumes, times)
    assert fit.fixed_cost_s == 0.0 and fit.n_half_bytes == 0.0
    assert fit.asymptotic_gbps == pytest.approx(10.0, rel=0.1)


def test_fit_refuses_degenerate_input() -> None:
    with pytest.raises(ParityError, match="2 distinct sizes"):
        fit_fixed_cost([1e3, 1e3], [1e-6, 1e-6])
    with pytest.raises(ParityError, match="positive"):
        fit_fixed_cost([1e3, 1e6], [1e-6, 0.0])
