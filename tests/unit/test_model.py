"""Records round-trip through their dict form, and a case judges itself."""

from __future__ import annotations

import pytest

from parity.model import CaseResult, Finding, ParityError, RunRecord, Samples, Severity
from parity.model.schema import SCHEMA_VERSION, check_version, envelope


def test_case_round_trip_and_ok() -> None:
    case = CaseResult(
        suite="gemm",
        key="m=1,n=2,k=3",
        params={"m": 1},
        samples={"main": Samples(values_s=(1e-3, 2e-3), method="fake", resolution_s=1e-9)},
        metrics={"tflops": 1.5},
        check={"passed": True, "rel_error": 1e-3},
        findings=(Finding(code="high-variance", severity=Severity.WARNING, message="x"),),
    )
    again = CaseResult.from_dict(case.to_dict())
    assert again == case
    assert case.ok


def test_case_not_ok_on_error_failed_check_or_error_finding() -> None:
    assert not CaseResult(suite="s", key="k", error="out of memory").ok
    assert not CaseResult(suite="s", key="k", check={"passed": False}).ok
    bad = Finding(code="wrong-result", severity=Severity.ERROR, message="x")
    assert not CaseResult(suite="s", key="k", check={"passed": True}, findings=(bad,)).ok


def test_a_measured_row_without_a_check_is_not_ok() -> None:
    assert not CaseResult(suite="s", key="k", metrics={"median_s": 1e-3}).ok
    assert CaseResult(suite="s", key="k", metrics={"median_s": 1e-3}, check={"passed": True}).ok


def test_run_round_trip() -> None:
    run = RunRecord(run_id="r1", created_at="2026-01-01T00:00:00Z", config={"quick": True})
    assert RunRecord.from_dict(run.to_dict()) == run


def test_samples_refuse_negative_durations() -> None:
    with pytest.raises(ValueError):
        Samples(values_s=(1.0, -1.0), method="fake")


def test_schema_envelope_and_version_check() -> None:
    doc = envelope("demo", {"a": 1})
    assert doc == {"schema_version": SCHEMA_VERSION, "kind": "demo", "a": 1}
    check_version(doc, source="x.json")
    with pytest.raises(ParityError, match="newer"):
        check_version({"schema_version": SCHEMA_VERSION + 1}, source="x.json")
    with pytest.raises(ParityError, match="x.json"):
        check_version({}, source="x.json")


def test_a_parity_error_is_one_line_whoever_wrote_its_text() -> None:
    """Another library's error quoted in a message (pyarrow's are several lines) is joined."""
    quoted = "Couldn't deserialize thrift: TProtocolException: Invalid data\nDeserializing page header failed.\n"
    error = ParityError(f"x.parquet: cannot read it ({quoted}); run it again")
    assert str(error) == ("x.parquet: cannot read it (Couldn't deserialize thrift: TProtocolException: Invalid data "
                          "Deserializing page header failed. ); run it again")
    assert str(ParityError("a\r\n  b")) == "a b" and str(ParityError("one  line")) == "one  line"
    assert str(ParityError()) == "" and ParityError("a", 1).args == ("a", 1)
