"""The typed record of one ratio a comparison states, per case, per summary or per suite figure:
what the report draws (value, CI, the kind of CI, whether the two sides are comparable and why
not, whether the line is marked) without reading prose.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

LEVELS = ("case", "summary", "figure")


@dataclass(frozen=True, kw_only=True)
class RatioRecord:
    """One ratio: ``level`` is ``case`` (``name`` is the case key), ``summary`` (a median over
    cases, ``name`` its figure name) or ``figure`` (a suite figure's B / A, ``name`` the
    figure's). ``ratio`` is B's speed (or figure) over A's, None when not comparable; ``ci95``
    its 95% CI or None; ``ci_kind`` is ``between-run`` or ``within-run only``; ``runs`` the
    runs per side ``(A, B)``; ``verdict`` ``faster``, ``slower``, ``no difference measured``,
    ``no CI`` or ``not comparable``; ``marked`` when forced across a difference."""

    level: str
    suite: str
    name: str
    pair: tuple[str, str]
    ratio: float | None
    ci95: tuple[float, float] | None
    ci_kind: str
    runs: tuple[int, int]
    verdict: str
    comparable: bool = True
    reason: str = ""
    marked: bool = False
    scope: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ValueError(f"ratio level {self.level!r} is not one of {', '.join(LEVELS)}")

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "suite": self.suite, "name": self.name, "pair": list(self.pair),
                "ratio": self.ratio, "ci95": list(self.ci95) if self.ci95 else None, "ci_kind": self.ci_kind,
                "runs": list(self.runs), "verdict": self.verdict, "comparable": self.comparable,
                "reason": self.reason, "marked": self.marked, "scope": dict(self.scope)}
