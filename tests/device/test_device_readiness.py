"""The readiness matrix's building blocks: child processes that crash or hang become reasons."""

from __future__ import annotations

import pytest

from parity.device import readiness, smoke


def test_rows_have_every_key() -> None:
    row = readiness.row("vllm", "library", reason="x")
    assert set(row) == {
        "name",
        "kind",
        "installed",
        "version",
        "importable",
        "smoke",
        "smoke_kind",
        "reason",
        "status",
    }


def test_absent_library_row_names_the_distributions() -> None:
    saved = readiness.LIBRARIES.copy()
    readiness.LIBRARIES["nonexistent_lib"] = ("nonexistent-lib-for-parity-tests",)
    try:
        row = readiness.library_row("nonexistent_lib", "cpu", 10)
    finally:
        readiness.LIBRARIES.clear()
        readiness.LIBRARIES.update(saved)
    assert row["installed"] is False and row["smoke"] == "skipped"
    assert (
        row["reason"] == "not installed: no distribution named 'nonexistent-lib-for-parity-tests'"
    )


def test_a_dying_check_process_becomes_a_reason() -> None:
    result = readiness.run_child("no-such-check", "cpu", timeout_s=60)
    assert result["smoke"] == "failed"
    assert result["reason"].startswith("check process died with status 2: usage:")


def test_a_hanging_check_process_times_out() -> None:
    result = readiness.run_child("torch", "cpu", timeout_s=0.01)
    assert result == {"importable": None, "smoke": "failed", "reason": "timed out after 0 s"}


def test_relative_error_hand_case() -> None:
    torch = pytest.importorskip("torch")
    reference = torch.tensor([[3.0, 4.0]])
    assert smoke.relative_error(torch.tensor([[3.0, 4.5]]), reference) == pytest.approx(0.1)


@pytest.mark.torch
def test_torch_smoke_on_cpu_in_process() -> None:
    result = smoke.run_check("torch", "cpu")
    assert result["importable"] is True and result["smoke"] == "passed"
    assert "64x64 fp32 matmul on cpu" in result["kind"]


def test_missing_module_is_not_importable() -> None:
    smoke.CHECKS["missing"] = ("parity_module_that_does_not_exist", smoke._matmul)
    try:
        result = smoke.run_check("missing", "cpu")
    finally:
        del smoke.CHECKS["missing"]
    assert result["importable"] is False
    assert result["reason"].startswith("ModuleNotFoundError")


def test_every_deepseek_library_has_a_row_and_a_check() -> None:
    assert readiness.DEEPSEEK_LIBRARIES == (
        "tilelang", "deep_gemm", "deep_ep", "tile_kernels", "flash_mla", "deep_select")
    for name in readiness.DEEPSEEK_LIBRARIES + ("torch_npu", "vllm", "vllm_ascend", "sglang", "triton"):
        assert name in readiness.LIBRARIES and name in smoke.CHECKS


def test_an_import_error_is_quoted_in_one_line(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "parity_fake_kernels.py").write_text(
        "raise ImportError('libcuda.so.1: cannot open shared object file\\nsecond line')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(smoke.CHECKS, "fake", ("parity_fake_kernels", smoke._matmul))
    result = smoke.run_check("fake", "cpu")
    assert result == {"importable": False, "smoke": "skipped", "kind": "",
                      "reason": "ImportError: libcuda.so.1: cannot open shared object file"}


def test_fit_reasons_name_the_missing_accelerator_and_architecture() -> None:
    assert readiness.fit_reason("flash_mla", "cpu", "x86-64") == (
        "it needs an NVIDIA sm90/sm100 GPU or an Ascend NPU; no accelerator selected here")
    assert readiness.fit_reason("deep_gemm", "npu:0", "x86-64") == (
        "its Ascend build needs an arm64 host; this host is x86-64")
    assert readiness.fit_reason("deep_gemm", "npu:0", "arm64") == ""
    assert readiness.fit_reason("deep_gemm", "cuda:0", "x86-64") == ""
    assert readiness.fit_reason("vllm_ascend", "cuda:0", "x86-64").endswith("device cuda:0 selected here")
    assert readiness.fit_reason("sglang", "cpu", "x86-64") == ""


@pytest.mark.parametrize(("child", "status", "reason"), [
    ({"importable": False, "smoke": "skipped", "reason": "ImportError: undefined symbol: cuTensorMapEncodeTiled"},
     "import-failed", "ImportError: undefined symbol: cuTensorMapEncodeTiled"),
    ({"importable": True, "smoke": "skipped", "reason": "deep_gemm runs on GPUs; selected cpu"},
     "not-run", "it needs an NVIDIA sm90/sm100 GPU, or an Ascend NPU on an arm64 host; no accelerator selected "
                "here; deep_gemm runs on GPUs; selected cpu"),
    ({"importable": None, "smoke": "failed", "reason": "check process died with status -11: "},
     "check-died", "check process died with status -11: "),
])
def test_installed_library_rows_from_fake_children(monkeypatch: pytest.MonkeyPatch, child: dict,
                                                   status: str, reason: str) -> None:
    monkeypatch.setattr(readiness, "distribution_version", lambda *names: "2.1.0")
    monkeypatch.setattr(readiness, "run_child", lambda check, device, timeout_s: dict(child))
    monkeypatch.setattr(readiness, "host_architecture", lambda: "x86-64")
    entry = readiness.library_row("deep_gemm", "cpu", 10)
    assert entry["installed"] is True and entry["version"] == "2.1.0"
    assert entry["status"] == status and entry["reason"] == reason


def test_absent_deepseek_library_says_what_it_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(readiness, "distribution_version", lambda *names: None)
    entry = readiness.library_row("tile_kernels", "cpu", 10)
    assert entry["status"] == "not-installed"
    assert entry["reason"] == ("not installed: no distribution named 'tile_kernels' or 'tile-kernels' or "
                               "'tilekernels'; it needs an NVIDIA GPU or an Ascend NPU; no accelerator selected here")
