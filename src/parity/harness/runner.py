"""Walk the selected suites' cases, commit each result as it is measured, summarise the run.

The runner owns the order of operations that makes a run safe to kill: a case is written to
the store (and committed) before the next one starts, so ``parity run --resume RUN_ID`` loses at
most the case in flight and never measures a stored case twice. A suite's ``measure`` that
raises is stored as a case with ``error`` set, and the sweep goes on. Progress is reported
through a callback; the runner never prints.
"""

from __future__ import annotations

__all__ = ["ProgressEvent", "RunOutcome", "SuiteOutcome", "estimate_eta_s", "estimate_run_eta_s",
           "run_suites"]

import contextlib
import logging
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from parity.harness.energy import energy_figures
from parity.harness.options import parse_options
from parity.harness.outcome import RunOutcome, SuiteOutcome, record_load_at_end, run_conditions
from parity.harness.progress import (
    ProgressCallback,
    ProgressEvent,
    Tracker,
    estimate_eta_s,
    estimate_run_eta_s,
)
from parity.harness.run_context import run_context
from parity.harness.run_record import start_or_resume
from parity.harness.suite import CaseSpec, Suite
from parity.harness.work import Work
from parity.model.errors import ParityError
from parity.model.figure import Figure
from parity.model.result import CaseResult
from parity.harness.strategies import Stopwatch
from parity.harness.verdict import doubtful_figures, run_doubtful
from parity.store.database import Store
from parity.store.figures import suite_figures

log = logging.getLogger(__name__)


def typed_options(suites: Sequence[Suite], given: dict[str, Any]) -> dict[str, Any]:
    """Each suite's options as its ``options_type``, parsed once here from a mapping (the CLI,
    a stored config) or taken as given; options for suites not in ``suites`` are refused."""
    by_name = {s.name: s for s in suites}
    for name in given:
        if name not in by_name:
            raise ParityError(
                f"options given for suite {name!r}, which this run does not measure; "
                f"suites: {', '.join(by_name)}"
            )
    return {s.name: parse_options(s.options_type, given.get(s.name, {}), suite=s.name) for s in suites}


def _list_cases(
    suite: Suite, *, device: Any, quick: bool, options: dict[str, Any]
) -> list[CaseSpec]:
    """The suite's cases, checked for the unique keys ``--resume`` relies on."""
    try:
        cases = list(suite.cases(device=device, quick=quick, options=options[suite.name]))
    except ParityError:
        raise
    except Exception as exc:  # noqa: BLE001 - name the suite instead of a traceback
        log.debug("listing %s cases raised", suite.name, exc_info=True)
        raise ParityError(
            f"suite {suite.name!r} could not list its cases: {type(exc).__name__}: {exc}"
        ) from None
    keys = [c.key for c in cases]
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise ParityError(f"suite {suite.name!r} lists case key {dup!r} twice; keys must be unique")
    return cases


def _error_row(case: CaseSpec, exc: BaseException) -> CaseResult:
    """A row for a case whose measure raised: the exception's first line and where it was."""
    first = str(exc).splitlines()[0] if str(exc) else ""
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    return CaseResult(
        suite=case.suite,
        key=case.key,
        params=dict(case.params),
        error=f"{type(exc).__name__}: {first}".rstrip(": "),
        telemetry={"raised_at": f"{where.filename}:{where.lineno}"} if where else {},
    )


def _declared(suite: Suite, case: CaseSpec, *, device: Any, options: Any, state: Any) -> Any:
    """What the suite gives for ``case``: its ``Work``, its own ``CaseResult``, or an error row."""
    try:
        return suite.measure(case, device=device, options=options, state=state)
    except Exception as exc:  # noqa: BLE001 - errors are data; the sweep goes on
        log.debug("%s/%s raised", case.suite, case.key, exc_info=True)
        return _error_row(case, exc)


def _measure_one(
    suite: Suite, case: CaseSpec, *, device: Any, options: Any, state: Any, coord: Any
) -> CaseResult:
    """The suite's result for ``case`` (its declared work timed, checked and rated by the
    harness, or its own result), or an error row when it raises or answers wrongly.

    With ranks, every rank first says whether it could prepare the case (``coord.ready``), so
    either all of them time it together or none does; a rank that fails while timing ends the
    run (the others would wait for it), where a single process keeps the error as a row."""
    from parity.harness.measure import measure_work

    result = _declared(suite, case, device=device, options=options, state=state)
    problem = coord.ready(result.error if isinstance(result, CaseResult) else None)
    if isinstance(result, Work):
        if problem is not None:
            if result.release is not None:
                result.release()
            return CaseResult(suite=case.suite, key=case.key, params=dict(case.params),
                              error=f"not timed, another rank could not prepare it: {problem}")
        try:
            result = measure_work(case, result, device=device, group=coord.group)
        except Exception as exc:
            if coord.group is not None:
                raise
            log.debug("%s/%s raised", case.suite, case.key, exc_info=True)
            return _error_row(case, exc)
    if not isinstance(result, CaseResult) or (result.suite, result.key) != (case.suite, case.key):
        got = (
            (result.suite, result.key) if isinstance(result, CaseResult) else type(result).__name__
        )
        return CaseResult(
            suite=case.suite,
            key=case.key,
            params=dict(case.params),
            error=f"suite bug: measure({case.suite}/{case.key}) returned {got!r}",
        )
    return result


def _summarize(suite: Suite, results: list[CaseResult], *, options: Any) -> SuiteOutcome:
    summary: dict[str, Any] = {}
    figures: tuple[Figure, ...] = ()
    error: str | None = None
    measured = [r for r in results if r.error is None]
    try:
        record = suite.summarize(results, options=options) if measured else {}
        # A typed summary (with ``to_dict``) is stored as its dict; figures take the record.
        summary = record.to_dict() if hasattr(record, "to_dict") else dict(record)
        figures = tuple(suite.figures(record)) + energy_figures(suite.name, results) if measured else ()
        wrong = [f for f in figures if not isinstance(f, Figure)]
        if wrong:
            raise TypeError(f"figures() returned {type(wrong[0]).__name__}, not Figure")
    except Exception as exc:  # noqa: BLE001 - a broken summary fails the run, not the process
        log.debug("summarising %s raised", suite.name, exc_info=True)
        error = f"{type(exc).__name__}: {exc}"
    return SuiteOutcome(
        name=suite.name,
        summary=summary,
        cases=len(results),
        failed=sum(not r.ok for r in results),
        errors=sum(r.error is not None for r in results),
        figures=figures,
        summary_error=error,
        contended=sum(any(f.code == "contended" for f in r.findings) for r in results),
        concurrent=sum(any(f.code == "concurrent-run" for f in r.findings) for r in results),
    )


def _sweep(
    store: Store | None,
    run_id: str,
    plan: list[tuple[Suite, list[CaseSpec]]],
    *,
    device: Any,
    options: dict[str, dict[str, Any]],
    report: ProgressCallback,
    coord: Any,
    lock: Any = None,
) -> Tracker:
    """Measure and commit, one at a time, every planned case the run does not hold yet.

    The writer reads which cases are stored and shares the keys still to measure, so every
    rank walks the same cases in the same order; only the writer commits and reports."""
    done = {suite.name: sorted(store.done_keys(run_id, suite.name)) for suite, _ in plan} if store else None
    done = coord.share(done)
    todo = [
        (suite, case) for suite, cases in plan for case in _missing(cases, set(done[suite.name]))
    ]
    total = sum(len(cases) for _, cases in plan)
    tracker = Tracker(run_id=run_id, total=total, todo=todo,
                       report=report if coord.writer else (lambda event: None))
    tracker.emit("start")
    for suite, _ in plan:
        pending = [case for s, case in todo if s is suite]
        if not pending:
            continue
        with _suite_state(suite, device=device, options=options[suite.name]) as state:
            for case in pending:
                tracker.emit("case", suite=suite.name, key=case.key)
                case_clock = Stopwatch()
                ok = _measure_and_store(store, run_id, suite, case, device=device,
                                        options=options[suite.name], state=state, coord=coord, lock=lock)
                tracker.count(suite.name, case, seconds=case_clock.elapsed_s())
                tracker.emit("measured", suite=suite.name, key=case.key, ok=ok)
    _recheck(store, run_id, plan, device=device, options=options, coord=coord, lock=lock)
    return tracker


def _measure_and_store(store: Store | None, run_id: str, suite: Suite, case: CaseSpec, *, device: Any,
                       options: Any, state: Any, coord: Any, lock: Any = None) -> bool:
    """Measure ``case`` on every rank and commit the merged row (the writer only) before the
    next case starts; whether the case is ok. What else used the machine meanwhile, and any
    other parity run on the device (``lock``), go into the row (``with_conditions``)."""
    from parity.harness.measure import load_window, with_conditions

    others = lock.others() if lock is not None else []
    with load_window(device, group=coord.group) as window:
        result = _measure_one(suite, case, device=device, options=options, state=state, coord=coord)
    others += lock.others() if lock is not None else []
    result = with_conditions(result, load=window.record(), others=others,
                             device_name=getattr(device, "name", str(device)))
    stored = coord.collect(result)
    if stored is not None and store is not None:
        store.add_case(run_id, stored)
    return (stored or result).ok


def _recheck(store: Store | None, run_id: str, plan: list[tuple[Suite, list[CaseSpec]]], *, device: Any,
             options: dict[str, dict[str, Any]], coord: Any, lock: Any = None) -> None:
    """Measure again, once, the cases each suite's optional ``recheck`` names from its stored
    results (points off the trend of their neighbours); a case already measured again is not.
    The writer chooses them and shares the list, so on ranks every rank measures them too."""
    for suite, _ in plan:
        recheck = getattr(suite, "recheck", None)
        if recheck is None:
            continue
        again = None
        if store is not None:
            results = store.cases(run_id, suite.name)
            done = {r.key for r in results}
            again = [c for c in recheck(results, options=options[suite.name]) if c.key not in done]
        again = coord.share(again)
        if not again:
            continue
        log.info("%s: measuring %d off-trend case(s) again", suite.name, len(again))
        with _suite_state(suite, device=device, options=options[suite.name]) as state:
            for case in again:
                _measure_and_store(store, run_id, suite, case, device=device, options=options[suite.name],
                                   state=state, coord=coord, lock=lock)


@contextlib.contextmanager
def _suite_state(suite: Suite, *, device: Any, options: Any) -> Iterator[Any]:
    """The suite's ``setup`` state for one run's cases, torn down afterwards, even on errors."""
    try:
        state = suite.setup(device=device, options=options)
    except ParityError:
        raise
    except Exception as exc:  # noqa: BLE001 - name the suite instead of a traceback
        log.debug("setting up %s raised", suite.name, exc_info=True)
        raise ParityError(f"suite {suite.name!r} could not set up: {type(exc).__name__}: {exc}") from None
    try:
        yield state
    finally:
        suite.teardown(state)


def _missing(cases: list[CaseSpec], done: set[str]) -> list[CaseSpec]:
    return [case for case in cases if case.key not in done]


def run_suites(
    store: Store | None,
    *,
    device: Any,
    suites: Sequence[Suite],
    quick: bool = False,
    options: dict[str, dict[str, Any]] | None = None,
    resume_run_id: str | None = None,
    progress: ProgressCallback | None = None,
    argv: Sequence[str] | None = None,
    group: Any = None,
    endpoint: Any = None,
) -> RunOutcome | None:
    """Measure every case of ``suites`` on ``device`` into ``store`` and summarise the run.

    ``options`` maps a suite name to the options that suite receives (a mapping, or the
    suite's ``options_type``). With ``resume_run_id`` the run's stored cases are skipped and
    the rest measured into the same run. The cases are listed before the run is created, so a
    suite that cannot list them leaves no run behind.

    ``group`` (a joined ``parity.ranks.RankGroup``) makes this one rank of a multi-rank run:
    every rank calls ``run_suites`` with its own device and the same arguments; every rank
    measures every case, declared work is timed as the maximum over ranks per iteration, and
    rank 0 alone opens the store (``store`` is None elsewhere), commits, summarises and
    returns the outcome (None on the other ranks).

    ``endpoint`` (a probed ``parity.ranks.RemoteEndpoint``) makes the run measure that server:
    the suites get the endpoint where they would get a device (``device`` is then the client's
    own, recorded in the provenance), and the endpoint's record is the run's target.
    """
    from parity.harness.coordination import Alone, Ranked

    coord = (Ranked(group=group, timeout_s=group.timeout_s) if group is not None and group.world_size > 1
             else Alone())
    if coord.writer and store is None:
        raise ParityError("the writing rank needs a results store")
    options = typed_options(suites, dict(options or {}))
    report = progress or (lambda event: None)
    measured = endpoint if endpoint is not None else device
    plan = [
        (suite, _list_cases(suite, device=measured, quick=quick, options=options)) for suite in suites
    ]
    run_id = None
    if coord.writer:
        assert store is not None  # checked above: the writer has a store
        run_id = start_or_resume(store, device=device, suites=suites, quick=quick, options=options,
                                  resume_run_id=resume_run_id, argv=argv, group=group,
                                  endpoint=endpoint).run_id
    run_id = coord.share(run_id)
    from parity.device.lock import DeviceLock

    with DeviceLock(device_name=getattr(measured, "name", str(measured)), run_id=run_id,
                    rank=getattr(group, "rank", 0)) as lock, \
            run_context(run_id=run_id, store=store if coord.writer else None):  # what the suites share
        tracker = _sweep(store if coord.writer else None, run_id, plan, device=measured, options=options,
                         report=report, coord=coord, lock=lock)
    if not coord.writer:
        return None
    assert store is not None
    tracker.emit("summary")
    outcomes = [
        _summarize(suite, store.cases(run_id, suite.name), options=options[suite.name])
        for suite in suites
    ]
    judged = []
    for o in outcomes:  # the figures table is what export and compare read
        store.add_figures(run_id, o.name, suite_figures(o.name, o.figures, o.summary))
        total, by_reason = doubtful_figures(store.figures(run_id, o.name), store.cases(run_id, o.name))
        judged.append(replace(o, doubtful=total, doubtful_by=by_reason))
    outcomes = judged
    ok = all(o.ok for o in outcomes)
    summary = {"ok": ok, "suites": {o.name: o.to_dict() for o in outcomes}, "doubtful": run_doubtful(outcomes),
               **run_conditions(outcomes, lock, device_name=getattr(measured, "name", str(measured)))}
    record_load_at_end(store, run_id)
    store.finish_run(run_id, status="complete" if ok else "failed", summary=summary)
    tracker.emit("done")
    return RunOutcome(
        run=store.get_run(run_id),
        cases=store.cases(run_id),
        suites=outcomes,
        measured=tracker.measured,
        skipped=tracker.skipped,
    )
