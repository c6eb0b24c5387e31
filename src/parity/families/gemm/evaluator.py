"""The GEMM rate callback the ceiling search (``parity.ceilings.compute``) measures with.

The search itself is pure: it takes an ``evaluate(m, n, k, budget_s) -> FLOP/s`` callback, so
its algorithm is tested without a device. This module is that callback on a real device.
"""

from __future__ import annotations

from typing import Any

from parity.ceilings.contest import Dims, Evaluate
from parity.families.gemm.dtypes import precision_mode
from parity.families.gemm.inputs import rotation_for
from parity.harness.measure import time_work
from parity.harness.work import Work
from parity.metrics.roofline import gemm_flops

# Enough samples for a stable median; more only slows the bootstrap in the summary.
MAX_PROBE_SAMPLES = 100
# Probes are not checked one by one: the ceiling case checks the winner's shape once.
NOT_CHECKED = {"passed": True, "method": "not checked: a probe of the ceiling search"}
# Input sets per probe with the cache flushed before each call: a few (the flush makes every call
# cold, and building sets costs time on every probe); without the flush, ``rotation_for``'s default.
FLUSHED_SETS = 4


def gemm_rate_evaluator(*, device: Any, backend: Any, dtype: Any, flush: bool, warmup_s: float = 0.01,
                        keep: dict[Dims, Any] | None = None) -> Evaluate:
    """An ``evaluate`` callback timing ``backend`` on ``device``: each probe is declared Work
    the harness times (``parity.harness.measure.time_work``).

    ``keep``, when given, receives the raw samples of the latest measurement of each shape.

    Calls are timed as the sweep times every shape (``flush``: its option, the cache flushed
    before each call), so that ``P`` and the shapes divided by it are one protocol: timed
    back to back on warm inputs, as mamf-finder does, a small shape on a CPU with a large
    last-level cache reads up to 1.2x the rate the sweep measures for it. With the flush, four
    input sets are enough (the flush makes every call cold); without it, the sets rotate past
    the cache as the sweep's do. The rate is ``2MNK / median``.
    """
    sets = {"max_sets": FLUSHED_SETS} if flush else {}

    def evaluate(m: int, n: int, k: int, budget_s: float) -> float:
        inputs = rotation_for(device=device, backend=backend, dtype=dtype, m=m, n=n, k=k, **sets)
        with precision_mode(dtype, device):
            work = Work(call=backend.run, check=lambda: NOT_CHECKED, inputs=inputs, warmup_s=warmup_s,
                        budget_s=budget_s, min_samples=3, max_samples=MAX_PROBE_SAMPLES, flush_cache=flush)
            result = time_work(work, device=device)
        del inputs, work
        if keep is not None:
            keep[(m, n, k)] = result.samples
        return gemm_flops(m, n, k) / result.median_s

    return evaluate
