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
