"""A measured case and a run: the rows the store keeps and every command's JSON carries."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from parity.model.findings import Finding, Severity
from parity.model.samples import Samples


@dataclass(frozen=True, kw_only=True)
class CaseResult:
    """One measured case of one suite (a GEMM shape, a transfer size, a block count...).

    ``key`` identifies the case inside its suite and is what ``--resume`` skips on. ``samples``
    holds raw timings by name (usually ``"main"``); ``metrics`` holds derived numbers in SI units
    or with the unit in the name; ``check`` is the correctness verdict every performance row
    carries (``{"passed": bool, ...}``); ``error`` is set, and metrics may be empty, when the
    case failed to run (out of memory, unsupported dtype): errors are data.
    """

    suite: str
    key: str
    params: dict[str, Any] = field(default_factory=dict)
    samples: dict[str, Samples] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    check: dict[str, Any] = field(default_factory=dict)
    findings: tuple[Finding, ...] = ()
    telemetry: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True when the case ran, carries a check that passed, and no finding is an error.

        A measured row without a correctness check is not ok: a figure nobody verified is not
        one to quote."""
        if self.error is not None:
            return False
        if not self.check.get("passed", False):
            return False
        return not any(f.severity is Severity.ERROR for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "key": self.key,
            "params": dict(self.params),
            "samples": {name: s.to_dict() for name, s in self.samples.items()},
            "metrics": dict(self.metrics),
            "check": dict(self.check),
            "findings": [f.to_dict() for f in self.findings],
            "telemetry": dict(self.telemetry),
            "error": self.error,
            "ok": self.ok,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CaseResult:
        return cls(
            suite=str(data["suite"]),
            key=str(data["key"]),
            params=dict(data.get("params", {})),
            samples={k: Samples.from_dict(v) for k, v in data.get("samples", {}).items()},
            metrics=dict(data.get("metrics", {})),
            check=dict(data.get("check", {})),
            findings=tuple(Finding.from_dict(f) for f in data.get("findings", [])),
            telemetry=dict(data.get("telemetry", {})),
            error=data.get("error"),
        )


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """A run: its id, what was asked (``config``), where and how (``provenance``), its state.

    ``status`` is ``running`` until the runner finishes, then ``complete`` or ``failed``; a run
    killed mid-way stays ``running`` and can be resumed.
    """

    run_id: str
    created_at: str
    config: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    status: str = "running"
    summary: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "created_at": self.created_at,
            "config": dict(self.config),
            "provenance": dict(self.provenance),
            "status": self.status,
            "summary": dict(self.summary),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunRecord:
        return cls(
            run_id=str(data["run_id"]),
            created_at=str(data["created_at"]),
            config=dict(data.get("config", {})),
            provenance=dict(data.get("provenance", {})),
            status=str(data.get("status", "running")),
            summary=dict(data.get("summary", {})),
        )
