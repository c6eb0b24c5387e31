"""The kernels suite end to end on the CPU, and library kernels through a fake library."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from parity.families.kernels import libraries
from parity.families.kernels.libraries import LibraryKernel, library_reason
from parity.families.kernels.suite import KernelsOptions, KernelsSuite
from parity.cli.main import cli
from parity.report.views import view_for
from parity.model.errors import ParityError

pytestmark = pytest.mark.torch

FAKE_DEEP_GEMM = '''
import torch
from parity.families.kernels.fp8_gemm import block_scaled_gemm

__version__ = "0.0-test"

def fp8_gemm_nt(a, b, out):
    out.copy_(block_scaled_gemm(a[0], a[1], b[0], b[1]).to(out.dtype))
'''


@pytest.fixture(scope="module")
def cpu() -> Any:
    from parity.device import get_device

    return get_device("cpu")


@pytest.mark.slow
def test_quick_cli_runs_every_operation_checked_and_rated(tmp_path: Path) -> None:
    out = tmp_path / "k.json"
    result = CliRunner().invoke(cli, ["kernels", "--quick", "--device", "cpu", "--ceiling-budget-s", "0.5",
                                      "--db", str(tmp_path / "r.sqlite"), "--json", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["figures"] and f"run {doc['run_id']}" in result.output
    doc = {**doc["summary"], **doc}  # the family JSON nests the suite's summary
    rows = doc["rows"]
    assert {r["op"] for r in rows} == {"fp8_gemm", "grouped_contiguous", "grouped_masked", "mla_decode"}
    for row in rows:
        assert row["ok"] and row["check"]["passed"] and row["check"]["measure"] == "relative_error"
        assert row["check"]["value"] < row["check"]["tolerance"]
        assert row["flop_per_s"] > 0 and row["arithmetic_intensity"] > 0
        assert 0 < row["efficiency"] and row["class"] in ("compute-bound", "memory-bound")
    mla_rows = [r for r in rows if r["op"] == "mla_decode"]
    assert any(r["flop"] < r["flop_without_causal_mask"] for r in mla_rows)  # two new tokens: masked keys
    libs = {(e["op"], e["library"]): e for e in doc["libraries"]}
    for key in (("fp8_gemm", "deep_gemm"), ("grouped_masked", "deep_gemm"), ("mla_decode", "flash_mla"),
                ("fp8_gemm", "tile_kernels")):
        assert libs[key]["status"] == "not-run" and libs[key]["reason"]
    if view_for("kernels") is not None:  # the family's own text once it registers its view
        assert "library kernels on the same inputs" in result.output


def test_library_reasons(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    absent = LibraryKernel("nolib", "parity_no_such_module", "f")
    assert library_reason(absent, device_type="cpu", device_name="cpu") == (
        "not installed: no module 'parity_no_such_module'; nolib runs on NVIDIA GPUs or Ascend NPUs "
        "(its Ascend port); selected cpu")
    (tmp_path / "parity_fake_lib.py").write_text("__version__ = '1.2'\n")
    (tmp_path / "parity_broken_lib.py").write_text("raise OSError('libnvshmem.so: cannot open\\nmore')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    present = LibraryKernel("fake", "parity_fake_lib", "gemm")
    assert library_reason(present, device_type="cpu", device_name="cpu").startswith("fake runs on NVIDIA GPUs")
    assert library_reason(present, device_type="cuda", device_name="cuda:0") == "this parity_fake_lib (1.2) has no gemm"
    unmapped = LibraryKernel("fake", "parity_fake_lib", None)
    assert "checks none of its entry points" in library_reason(unmapped, device_type="npu", device_name="npu:0")
    broken = LibraryKernel("broken", "parity_broken_lib", "gemm")
    assert library_reason(broken, device_type="cuda", device_name="cuda:0") == (
        "import failed: OSError: libnvshmem.so: cannot open")


def test_a_library_kernel_is_measured_beside_the_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          cpu: Any) -> None:
    from parity.harness.measure import measure_work

    (tmp_path / "deep_gemm.py").write_text(FAKE_DEEP_GEMM)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(libraries, "LIBRARY_DEVICES", ("cpu",))
    monkeypatch.delitem(sys.modules, "deep_gemm", raising=False)
    suite = KernelsSuite()
    options = KernelsOptions(ops=("fp8_gemm",))
    cases = [c for c in suite.cases(device=cpu, quick=True, options=options) if c.params.get("kind") == "op"][:2]
    assert [c.key for c in cases] == ["fp8_gemm/torch/128x256x512", "fp8_gemm/deep_gemm/128x256x512"]
    assert cases[0].params["libraries"]["deep_gemm"] == "measured as fp8_gemm/deep_gemm/128x256x512"
    results = [measure_work(c, suite.measure(c, device=cpu, options=options, state={}), device=cpu) for c in cases]
    assert all(r.ok for r in results)
    assert results[1].check["method"].startswith("similarity_diff")
    assert results[1].check["tolerance"] == 1e-3 and results[1].check["similarity_diff"] < 1e-3
    summary = suite.summarize(results, options=options)
    library_row = next(r for r in summary.rows if r.impl == "deep_gemm")
    speed = library_row.speedup_vs_torch
    assert speed.ci95[0] <= speed.ratio <= speed.ci95[1]
    status = {e.library: e.status for e in summary.libraries}
    assert status == {"deep_gemm": "measured", "tile_kernels": "not-run"}
    assert library_row.efficiency is None  # no ceilings among these results
    assert type(summary).from_dict(summary.to_dict()) == summary
    monkeypatch.delitem(sys.modules, "deep_gemm", raising=False)


def test_unknown_operation_is_a_one_line_error() -> None:
    with pytest.raises(ParityError, match="kernels.ops: unknown operation 'conv'"):
        KernelsOptions(ops=("conv",))
