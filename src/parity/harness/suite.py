"""The contract between benchmarks and the harness.

A suite declares its typed options (``options_type``, see ``parity.harness.options``), its
cases, and per case either its declared work (:class:`parity.harness.work.Work`: one call to time,
its FLOP and bytes with the convention that counts them, and its correctness check) or, for a
protocol that is more than one timed call (a ceiling search, a pointer chase timed at two chain
lengths), a finished ``CaseResult`` measured with the strategies of ``parity.timing``. The
harness (``parity.harness.measure``) times declared work with the named strategy, runs its check
and derives its rates; the runner (``parity.harness.runner``) walks the cases, skips those a
resumed run already stored, commits each result as soon as it is measured, and shows progress.

State: ``setup`` builds what the cases share (buffers, a model, a process group, a ceiling
measured earlier in the run) once per run, and again on resume; it is handed to every
``measure`` call as ``state`` and to ``teardown`` at the end. Nothing else passes between
cases. A suite never prints and never writes to the store; a performance row without a
correctness check is not ok.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from parity.model.figure import Figure
from parity.model.result import CaseResult


@dataclass(frozen=True, kw_only=True)
class CaseSpec:
    """One case to measure. ``key`` is unique within the suite and stable across runs
    (``--resume`` matches on it); ``params`` are JSON-serialisable; ``cost`` is the seconds the
    case is expected to take on a CPU (its timing budget, warm-up and set-up), for the ETA: the
    runner rescales each suite's costs by the time its measured cases took, and a suite not yet
    started by the rate of those measured so far, so costs must share that unit across suites."""

    suite: str
    key: str
    params: dict[str, Any] = field(default_factory=dict)
    cost: float = 1.0


@runtime_checkable
class Suite(Protocol):
    """A registered benchmark (gemm, membw, latency, ...)."""

    name: str
    description: str
    options_type: type

    def cases(self, *, device: Any, quick: bool, options: Any) -> list[CaseSpec]:
        """The cases this suite would measure on ``device`` (``options`` is ``options_type``)."""
        ...

    def setup(self, *, device: Any, options: Any) -> Any:
        """What the cases share, built once per run (and again on resume); None if nothing."""
        ...

    def measure(self, case: CaseSpec, *, device: Any, options: Any, state: Any) -> Any:
        """One case: its declared ``Work`` for the harness to time and check, or a finished
        ``CaseResult``. Errors (out of memory, unsupported dtype) may be raised or returned as
        a ``CaseResult`` with ``error`` set: either way they become a row and the sweep goes on."""
        ...

    def teardown(self, state: Any) -> None:
        """Release what ``setup`` built; called once, after the last case, even on errors."""
        ...

    def summarize(self, results: list[CaseResult], *, options: Any) -> dict[str, Any]:
        """Suite-level details derived from the stored cases, for the family's own renderer."""
        ...

    def figures(self, summary: dict[str, Any]) -> list[Figure]:
        """The summary's quotable figures, the only thing compare and report read."""
        ...


class SuiteBase:
    """Defaults for the optional parts of the contract: no state, no teardown, no recheck, and
    one rank enough (``min_ranks``: the fewest ranks the suite measures anything on)."""

    min_ranks = 1

    def setup(self, *, device: Any, options: Any) -> Any:
        return None

    def recheck(self, results: list[CaseResult], *, options: Any) -> list[CaseSpec]:
        """Cases to measure again after the sweep (points off the trend of their neighbours),
        each keyed ``<key>/again`` with ``params["again_of"]`` naming the first; none here."""
        return []

    def teardown(self, state: Any) -> None:
        return None
