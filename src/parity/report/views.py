"""How a family is drawn: the views a family registers, and how the report finds them.

A family's view (``parity.model.family.Family.view``) draws its own summary: a terminal
renderable for its command and ``parity runs show``, and HTML charts for ``parity report``.
The report and compare call these and name no family; a family without a view is drawn by the
generic view (its figures and cases as tables).

    view = view_for("gemm")
    console.print(view.terminal(summary))
    charts = view.charts([RunData(label=..., run=run, summary=..., figures=..., cases=...)])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from parity.model.result import CaseResult, RunRecord

if TYPE_CHECKING:
    from rich.console import RenderableType

    from parity.report.html.chart import Chart


@dataclass(frozen=True, kw_only=True)
class RunData:
    """One run's share of one family: the run's ``label`` (legends, chart ids), the run, the
    family's stored ``summary`` dict, its figures (``Figure.to_dict()`` dicts) and its cases."""

    label: str
    run: RunRecord
    summary: dict[str, Any] = field(default_factory=dict)
    figures: list[dict[str, Any]] = field(default_factory=list)
    cases: list[CaseResult] = field(default_factory=list)


@runtime_checkable
class View(Protocol):
    """What a family draws. ``section`` is the report section its charts go in, ``(id, heading)``;
    families may share one (``("communication", "Communication")``)."""

    section: tuple[str, str]

    def terminal(self, summary: dict[str, Any]) -> RenderableType:
        """The family's summary for the terminal (its command, ``parity runs show``)."""
        ...

    def charts(self, runs: list[RunData]) -> list[Chart]:
        """The family's HTML charts over every run given (one series per run); [] when none."""
        ...


def view_for(name: str) -> View | None:
    """The registered view of family ``name``, or None when the family registers none."""
    from parity.model.family import families, load_object

    family = families().get(name)
    if family is None or not family.view:
        return None
    view = load_object(family.view, label=f"view of family {name!r}")
    if not isinstance(view, View):
        from parity.model.errors import ParityError

        raise ParityError(f"view of family {name!r} ({family.view}) has no section, terminal and charts")
    return view
