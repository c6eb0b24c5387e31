"""The datasheet table: every entry sourced, dense peaks in FLOP/s, names matched."""

from __future__ import annotations

from pathlib import Path

import pytest

from parity.metrics.specs import load_specs, match_spec, memory_bandwidth, parse_specs, peak_flops
from parity.model.errors import ParityError

REQUIRED = ("a100-sxm-80gb", "a100-sxm-40gb", "a100-pcie-80gb", "a100-pcie-40gb", "h100-sxm", "h100-pcie",
            "h200", "b200", "mi250x", "mi300x", "mi325x", "ascend-910b", "ascend-950pr", "gaudi2", "gaudi3")


def test_bundled_table_has_every_device_with_a_source() -> None:
    specs = load_specs()
    for key in REQUIRED:
        assert key in specs
        assert specs[key].source  # title and date of the document


@pytest.mark.parametrize(("name", "key", "bf16_tflops"), [
    ("NVIDIA H100 80GB HBM3", "h100-sxm", 989.5),
    ("NVIDIA H100 PCIe", "h100-pcie", 756.0),
    ("NVIDIA H200", "h200", 989.5),
    ("NVIDIA B200", "b200", 2250.0),
    ("AMD Instinct MI300X", "mi300x", 1307.4),
    ("AMD Instinct MI325X", "mi325x", 1307.4),
    ("Intel Gaudi 3", "gaudi3", 1835.0),
    ("NVIDIA A100-SXM4-80GB", "a100-sxm-80gb", 312.0),
    ("NVIDIA A100-PCIE-40GB", "a100-pcie-40gb", 312.0),
    ("AMD Instinct MI250X", "mi250x", 383.0),
])
def test_match_and_dense_peaks(name: str, key: str, bf16_tflops: float) -> None:
    spec = match_spec(name)
    assert spec is not None and spec.key == key
    assert spec.peak_flops("bf16") == pytest.approx(bf16_tflops * 1e12)


def test_unknown_device_and_unpublished_dtype() -> None:
    assert match_spec("AMD EPYC 7B13") is None
    assert peak_flops("AMD EPYC", "bf16") is None
    assert peak_flops("Ascend950PR", "bf16") is None  # only fp8/fp4 were announced
    assert peak_flops("Ascend950PR", "fp8")["flops"] == pytest.approx(1e15)


def test_memory_bandwidth_lookup() -> None:
    found = memory_bandwidth("NVIDIA H200")
    assert found["gbps"] == pytest.approx(4800.0)
    assert found["bps"] == pytest.approx(4.8e12)
    assert "H200" in found["source"]
    assert memory_bandwidth("Ascend910B3") is None  # no official figure recorded


def test_malformed_entries_name_the_entry(tmp_path: Path) -> None:
    with pytest.raises(ParityError, match="devices.x has no 'source'"):
        parse_specs({"devices": {"x": {"name": "X", "vendor": "V", "match": [["x"]]}}}, source="t.toml")
    with pytest.raises(ParityError, match="unknown dtype 'int4'"):
        parse_specs({"devices": {"x": {"name": "X", "vendor": "V", "source": "s", "match": [["x"]],
                                        "dense_tflops": {"int4": 1.0}}}}, source="t.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[devices\n")
    with pytest.raises(ParityError, match="not valid TOML"):
        load_specs(str(bad))
