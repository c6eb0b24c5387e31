"""Findings: how a result judges itself (high spread, below timer resolution, throttling...)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any


class Severity(str, Enum):
    """How much a finding matters, least first. ``INVALID`` marks a figure that cannot be true
    (an overlap above 1, a replay outside its own bounds): the run goes on and stays complete,
    but it does not end ``OK``. ``ERROR`` makes a case (and the run) FAILED."""

    INFO = "info"
    WARNING = "warning"
    INVALID = "invalid"
    ERROR = "error"


INVALID = "invalid"  # the code of a finding that says a figure cannot be true
CONTENDED = "contended"  # the code of a finding that says others used the machine while it was timed
UNTRUSTED = (INVALID, CONTENDED)  # codes that make a figure one the run's verdict cannot vouch for
SIDE_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"  # a comparison's sides, in the order given
ONE_RANK = "one-rank"  # a communication case measured in a group of one rank
CAVEATS = (ONE_RANK,)  # codes that change what a figure is of without putting it in doubt


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


def untrusted_codes(findings: Iterable[Finding]) -> set[str]:
    """The codes among ``findings`` that make a figure untrustworthy (:data:`UNTRUSTED`)."""
    return {f.code for f in findings if f.code in UNTRUSTED}


def doubt_text(doubts: Sequence[Sequence[str]] | None) -> str:
    """Which side could not vouch for a case's figure, and why: ``doubts`` holds per side the
    untrusted finding codes of its runs' case. ``[["contended"], []]`` -> ``contended in A``;
    ``[["contended"], ["contended", "invalid"]]`` -> ``contended in A and B; invalid in B``."""
    sides: dict[str, list[str]] = {}
    for index, codes in enumerate(doubts or []):
        for code in codes:
            sides.setdefault(code, []).append(SIDE_LETTERS[index % 26])
    return "; ".join(f"{code} in {' and '.join(letters)}" for code, letters in sorted(sides.items()))

