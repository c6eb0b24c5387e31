"""The GEMM rate callback the ceiling search (``parity.bench.ceiling``) measures with.

The search itself is pure: it takes an ``evaluate(m, n, k, budget_s) -> FLOP/s`` callback, so
its algorithm is tested without a device. This module is that callback on a real device.
"""

from __future__ import annotations

from typing import Any

from parity.bench.gemm.dtypes import precision_mode
from parity.bench.gemm.inputs import rotation_for
from parity.bench.rate_contest import Dims, Evaluate
from parity.metrics.roofline import gemm_flops
from parity.timing import measure

# Enough samples for a stable median; more only slows the bootstrap in the summary.
MAX_PROBE_SAMPLES = 100


def gemm_rate_evaluator(*, device: Any, backend: Any, dtype: Any, warmup_s: float = 0.01,
                        keep: dict[Dims, Any] | None = None) -> Evaluate:
    """An ``evaluate`` callback timing ``backend`` on ``device`` with the timing core.

    ``keep``, when given, receives the raw samples of the latest measurement of each shape.

    Inputs rotate past the last-level cache and the cache is not flushed between calls
    (mamf-finder times back-to-back calls): a sustained rate of the matrix units. The rate is
    ``2MNK / median``.
    """

    def evaluate(m: int, n: int, k: int, budget_s: float) -> float:
        inputs = rotation_for(device=device, backend=backend, dtype=dtype, m=m, n=n, k=k, max_sets=4)
        with precision_mode(dtype, device):
            result = measure(backend.run, device=device, inputs=inputs, warmup_s=warmup_s,
                             budget_s=budget_s, min_samples=3, max_samples=MAX_PROBE_SAMPLES,
                             flush_cache=False)
        del inputs
        if keep is not None:
            keep[(m, n, k)] = result.samples
        return gemm_flops(m, n, k) / result.median_s

    return evaluate
