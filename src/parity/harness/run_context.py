"""What the suites of one run share while the runner measures it (``current_run``).

A run measures several suites on one device; some of their cases measure the same thing (the
bandwidth ceiling ``B`` of gemm, membw and kernels) and must give one value per run and device.
The runner enters ``run_context`` for the run's sweep and rechecks; a suite reads
``current_run()``: the run's id, the writer's store (None on other ranks and outside a run's
store) to find what an earlier process of a resumed run stored, and ``shared``, a mapping the
run's cases may fill in this process. Outside a run (a suite called directly) it is None.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, kw_only=True)
class RunContext:
    """One run's id, its store (the writer's; None elsewhere) and the values its cases share."""

    run_id: str
    store: Any = None
    shared: dict[Any, Any] = field(default_factory=dict)


_CURRENT: ContextVar[RunContext | None] = ContextVar("parity_run_context", default=None)


def current_run() -> RunContext | None:
    """The run being measured, None outside ``run_context``."""
    return _CURRENT.get()


@contextlib.contextmanager
def run_context(*, run_id: str, store: Any = None) -> Iterator[RunContext]:
    """Make ``current_run()`` this run's context until the block ends."""
    context = RunContext(run_id=run_id, store=store)
    token = _CURRENT.set(context)
    try:
        yield context
    finally:
        _CURRENT.reset(token)
