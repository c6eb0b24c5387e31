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


def test_a_part_that_runs_an_isa_narrower_gets_its_own_peak() -> None:
    # AMD Zen 4 (family 25) runs AVX-512 on two 256-bit pipes: fp32 2 x 8 x 2 = 32, bf16 2 x 16 x 2 = 64
    # FLOP/cycle/core, not the generic entries' 64 and 128.
    zen4 = {"avx512f", "avx512_bf16", "avx2", "fma"}
    fp32 = isa_peak(flags=zen4, dtype="fp32", cores=2, clock_hz=2.6e9, cpu=("AuthenticAMD", 25))
    assert fp32["flops"] == pytest.approx(32 * 2 * 2.6e9) and "Zen 4" in fp32["derived"]
    bf16 = isa_peak(flags=zen4, dtype="bf16", cores=2, clock_hz=2.6e9, cpu=("AuthenticAMD", 25))
    assert bf16["flops"] == pytest.approx(64 * 2 * 2.6e9) and "Zen 4" in bf16["source"]
    # Zen 5 (family 26), an Intel part, or no part known: the generic entries
    for cpu in (("AuthenticAMD", 26), ("GenuineIntel", 6), None):
        assert isa_peak(flags=zen4, dtype="fp32", cores=2, clock_hz=2.6e9, cpu=cpu)["flops"] == \
            pytest.approx(64 * 2 * 2.6e9)
    # flags still decide: without avx512_bf16 no entry gives bf16
    assert isa_peak(flags={"avx512f"}, dtype="bf16", cores=2, clock_hz=2.6e9, cpu=("AuthenticAMD", 25)) is None


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
