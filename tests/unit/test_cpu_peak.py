"""CPU peaks from the instruction set (``parity.metrics.cpu_peak``) and the peak shown beside P."""

from __future__ import annotations

import pytest

from parity.families.gemm.datasheet import reference_peak, with_given_peak
from parity.device.fake import FakeDevice
from parity.metrics.cpu_peak import cpu_peak_flops, isa_peak, load_isa_table
from parity.model.errors import ParityError

AMX = {"amx_tile", "amx_bf16", "avx512f", "avx512_bf16", "avx2", "fma"}
AVX2 = {"avx2", "fma"}


def test_formula_hand_case() -> None:
    # AMX bf16: 1024 FLOP/cycle/core x 2 cores x 2.1 GHz = 4.3008 TFLOP/s.
    assert cpu_peak_flops(flop_per_cycle=1024, cores=2, clock_hz=2.1e9) == pytest.approx(4.3008e12)
    with pytest.raises(ParityError):
        cpu_peak_flops(flop_per_cycle=32, cores=0, clock_hz=1e9)


def test_the_best_instruction_set_the_cpu_has_wins() -> None:
    amx = isa_peak(flags=AMX, dtype="bf16", cores=2, clock_hz=2.1e9)
    assert amx["flops"] == pytest.approx(1024 * 2 * 2.1e9) and "AMX" in amx["derived"] and amx["source"]
    fp32 = isa_peak(flags=AMX, dtype="fp32", cores=2, clock_hz=2.1e9)
    assert fp32["flops"] == pytest.approx(64 * 2 * 2.1e9) and "AVX-512" in fp32["derived"]
    avx2 = isa_peak(flags=AVX2, dtype="fp32", cores=2, clock_hz=3.0e9)
    assert avx2["flops"] == pytest.approx(32 * 2 * 3.0e9)
    assert isa_peak(flags=AVX2, dtype="bf16", cores=2, clock_hz=3.0e9) is None  # no native bf16: no promise
    assert isa_peak(flags=AMX, dtype="bf16", cores=None, clock_hz=2.1e9) is None


def test_every_isa_entry_has_a_source() -> None:
    table = load_isa_table()
    assert {"amx-bf16", "avx512", "avx2"} <= set(table)
    assert all(entry.source and entry.flags and entry.flop_per_cycle for entry in table.values())


def test_a_given_peak_wins_and_says_so() -> None:
    given = reference_peak(device=FakeDevice(), dtype="bf16", given_tflops=500.0)
    assert given["flops"] == pytest.approx(500e12) and "--peak" in given["source"]
    metrics = with_given_peak({"datasheet_flops": 1.0, "datasheet_source": "sheet"}, 2.0)
    assert metrics["datasheet_flops"] == pytest.approx(2e12) and "--peak" in metrics["datasheet_source"]
    assert with_given_peak({"datasheet_flops": 1.0}, None) == {"datasheet_flops": 1.0}
