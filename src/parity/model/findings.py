"""Findings: how a result judges itself (high spread, below timer resolution, throttling...)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any


class Severity(str, Enum):
    """How much a finding matters; ``ERROR`` makes a case (and the run) FAILED."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


@dataclass(frozen=True, kw_only=True)
class Finding:
    """A typed observation about a measurement.

    ``code`` is a stable kebab-case identifier (``high-variance``, ``below-resolution``,
    ``throttled``, ``over-ceiling``, ``wrong-result``...) that tools can filter on; ``hint`` says
    what the user can do about it.
    """

    code: str
    severity: Severity
    message: str
    hint: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity.value,
            "message": self.message,
            "hint": self.hint,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Finding:
        return cls(
            code=str(data["code"]),
            severity=Severity(data["severity"]),
            message=str(data["message"]),
            hint=str(data.get("hint", "")),
        )
