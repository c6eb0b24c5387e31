"""One bandwidth ceiling B per run and device, shared by gemm, membw and kernels."""

from __future__ import annotations

from typing import Any

import pytest

import parity.ceilings.bandwidth as bandwidth
from parity.ceilings.bandwidth import bandwidth_source_note, shared_bandwidth_case
from parity.families.gemm.figures import gemm_figures
from parity.families.gemm.summary import GemmSummary
from parity.families.kernels.figures import kernels_figures
from parity.families.kernels.summary import summarize_kernels
from parity.families.membw.figures import membw_figures
from parity.families.membw.summary import summarize_membw
from parity.harness.run_context import current_run, run_context
from parity.harness.suite import CaseSpec
from parity.model.result import CaseResult


class Device:
    name = "cpu"
    type = "cpu"


@pytest.fixture
def copies(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replace the timed copy by one at 10 GB/s, noting each case that measured it."""
    measured: list[str] = []

    def copy(case: CaseSpec, *, device: Any) -> CaseResult:
        measured.append(f"{case.suite}/{case.key}")
        return CaseResult(suite=case.suite, key=case.key, params={**case.params, "bytes": 2**26},
                          check={"passed": True}, samples={},
                          metrics={"bandwidth_bps": 1e10 * len(measured), "gbps": 10.0 * len(measured),
                                   "operand_bytes": 2**26, "median_s": 0.0134})

    monkeypatch.setattr(bandwidth, "bandwidth_ceiling_case", copy)
    return measured


GEMM = CaseSpec(suite="gemm", key="bandwidth", params={"kind": "bandwidth"})
MEMBW = CaseSpec(suite="membw", key="ceiling/copy", params={"kind": "ceiling", "op": "copy"})
KERNELS = CaseSpec(suite="kernels", key="bandwidth", params={"kind": "bandwidth"})


def test_the_first_suite_measures_b_and_the_others_reuse_it(copies: list[str]) -> None:
    with run_context(run_id="run-1") as run:
        assert current_run() is run
        first = shared_bandwidth_case(GEMM, device=Device())
        second = shared_bandwidth_case(MEMBW, device=Device())
        third = shared_bandwidth_case(KERNELS, device=Device())
    assert current_run() is None
    assert copies == ["gemm/bandwidth"]
    assert first.metrics["bandwidth_bps"] == second.metrics["bandwidth_bps"] == third.metrics["bandwidth_bps"] == 1e10
    assert first.metrics["bandwidth_source"] == {"measured_in": "gemm/bandwidth", "device": "cpu", "reused": False}
    assert second.metrics["bandwidth_source"] == {"measured_in": "gemm/bandwidth", "device": "cpu", "reused": True}
    assert (second.suite, second.key, second.params["bytes"], second.samples) == ("membw", "ceiling/copy", 2**26, {})


def test_outside_a_run_every_case_measures_its_own(copies: list[str]) -> None:
    shared_bandwidth_case(GEMM, device=Device())
    shared_bandwidth_case(MEMBW, device=Device())
    assert copies == ["gemm/bandwidth", "membw/ceiling/copy"]


def test_a_resumed_run_reuses_the_stored_case_of_an_earlier_process(copies: list[str]) -> None:
    with run_context(run_id="run-1"):
        stored = shared_bandwidth_case(GEMM, device=Device())

    class Store:
        def cases(self, run_id: str, suite: str | None = None) -> list[CaseResult]:
            return [stored] if run_id == "run-1" else []

    with run_context(run_id="run-1", store=Store()):
        again = shared_bandwidth_case(MEMBW, device=Device())
    assert copies == ["gemm/bandwidth"] and again.metrics["bandwidth_source"]["reused"] is True
    with run_context(run_id="run-2", store=Store()):
        shared_bandwidth_case(MEMBW, device=Device())
    assert copies == ["gemm/bandwidth", "membw/ceiling/copy"]


def test_each_suites_figure_says_where_b_came_from(copies: list[str]) -> None:
    with run_context(run_id="run-1"):
        gemm = shared_bandwidth_case(GEMM, device=Device())
        membw = shared_bandwidth_case(MEMBW, device=Device())
        kernels = shared_bandwidth_case(KERNELS, device=Device())
    (gemm_b,) = [f for f in gemm_figures(GemmSummary(bandwidth_bps=1e10, bandwidth_source=gemm.metrics["bandwidth_source"]))
                 if f.name == "gemm.bandwidth_ceiling"]
    assert gemm_b.note == "measured here (gemm/bandwidth), once for this run and device"
    (membw_b,) = [f for f in membw_figures(summarize_membw([membw])) if f.name == "membw.ceiling"]
    assert membw_b.value == 1e10 and membw_b.scope["measured_in"] == "gemm/bandwidth"
    assert membw_b.note == "shared: measured once for this run and device by gemm/bandwidth"
    (kernels_b,) = [f for f in kernels_figures(summarize_kernels([kernels])) if f.name == "kernels.bandwidth_ceiling"]
    assert kernels_b.value == 1e10 and kernels_b.note == membw_b.note
    assert bandwidth_source_note(None) == ""
