"""``--ceiling-from``: a ``P`` measured on the CPU with other torch threads or another CPU
affinity than this run is refused (an error row with ``ceiling-from-other-conditions``), never
reused silently; the same conditions, or a stored ceiling that recorded none, reuse it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from parity.families.gemm import stored_ceiling
from parity.families.gemm.stored_ceiling import differing_conditions, stored_ceiling_row, stored_conditions
from parity.harness.suite import CaseSpec

CASE = CaseSpec(suite="gemm", key="ceiling/bf16", params={"kind": "ceiling"})


def _stored(conditions: dict[str, Any] | None) -> str:
    record = {"run_id": "20261203-1", "device_name": "AMD EPYC", "ceiling_flops": 1.0e11, "findings": [],
              "check": {"passed": True}}
    if conditions is not None:
        record["conditions"] = conditions
    return json.dumps(record)


def test_conditions_come_from_a_cpu_run_s_provenance_only() -> None:
    provenance = {"torch": {"threads": 1}, "host": {"affinity": "0"}}
    assert stored_conditions({"device": "cpu"}, provenance) == {"threads": 1, "affinity": "0"}
    assert stored_conditions({"device": "cuda:0"}, provenance) == {}
    assert stored_conditions({"device": "cpu"}, {}) == {"threads": None, "affinity": None}


def test_differing_conditions_hand_cases() -> None:
    one_pinned, two = {"threads": 1, "affinity": "0"}, {"threads": 2, "affinity": "0-1"}
    assert differing_conditions(one_pinned, one_pinned) == ""
    assert differing_conditions({}, two) == ""  # recorded before conditions were: nothing to compare
    assert differing_conditions({"threads": None, "affinity": "0-1"}, two) == ""
    assert differing_conditions(one_pinned, two) == "1 thread(s) on CPUs 0, this run has 2 thread(s) on CPUs 0-1"
    assert differing_conditions({"threads": 2, "affinity": "1"}, two) != ""


def test_a_ceiling_from_one_pinned_thread_is_refused_in_a_two_thread_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stored_ceiling, "current_conditions", lambda: {"threads": 2, "affinity": "0-1"})
    row = stored_ceiling_row(CASE, stored=_stored({"threads": 1, "affinity": "0"}), device_name="AMD EPYC")
    assert row.error == ("the ceiling of run 20261203-1 was measured with 1 thread(s) on CPUs 0, "
                         "this run has 2 thread(s) on CPUs 0-1")
    (finding,) = row.findings
    assert finding.code == "ceiling-from-other-conditions" and not row.ok
    same = stored_ceiling_row(CASE, stored=_stored({"threads": 2, "affinity": "0-1"}), device_name="AMD EPYC")
    assert same.error is None and same.metrics["ceiling_flops"] == 1.0e11 and same.metrics["ceiling_from"] == "20261203-1"
    older = stored_ceiling_row(CASE, stored=_stored(None), device_name="AMD EPYC")
    assert older.error is None


def test_current_conditions_read_this_process() -> None:
    torch = pytest.importorskip("torch")
    current = stored_ceiling.current_conditions()
    assert current["threads"] == torch.get_num_threads() and isinstance(current["affinity"], str)
