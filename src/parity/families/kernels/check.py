"""Correctness of a kernel-library operation against its float64 ground truth.

Two measures, each a named function:

- ``relative_error``: ``||x - y||_F / ||y||_F`` (``parity.families.gemm.check``), what the torch
  references are held to, with a tolerance set by the output dtype (``OUTPUT_TOLERANCE``);
- ``similarity_diff``: ``1 - 2·Σxy / Σ(x² + y²)`` in float64, the measure DeepGEMM's and
  FlashMLA's own tests use, with each library's own threshold (``LIBRARY_TOLERANCE``), so a
  library kernel passes here exactly when it would pass its own test.

Only the valid part of an output is compared (rows of real tokens, not padding).
"""

from __future__ import annotations

import math
from typing import Any

from parity.families.gemm.check import relative_error

# Relative Frobenius error allowed for an output stored in bf16: its unit roundoff is 2^-8, so
# a correct result rounds to about 0.2% error; 1% leaves room for fp32 accumulation order.
OUTPUT_TOLERANCE = {"bf16": 1e-2, "fp32": 1e-4}
# The thresholds the libraries' own tests assert on similarity_diff.
LIBRARY_TOLERANCE = {"deep_gemm": 1e-3, "flash_mla": 1e-5}


def similarity_diff(x: Any, y: Any) -> float:
    """``1 - 2·Σxy / Σ(x² + y²)`` in float64: 0 for equal tensors, 1 for orthogonal ones.
    Example: x = (1, 0), y = (1, 1) -> 1 - 2·1/3 = 1/3."""
    x, y = x.double(), y.double()
    denominator = float((x * x + y * y).sum())
    if denominator == 0.0:
        return 0.0
    return 1.0 - 2.0 * float((x * y).sum()) / denominator


def compare(got: Any, truth: Any, *, valid: Any = None, tolerance: float, measure: str = "relative_error",
            reference: str = "float64 computation of the same inputs on the CPU") -> dict[str, Any]:
    """The check dict of one output: ``passed`` when finite and the measure is within
    ``tolerance``; ``valid`` selects the compared part (a boolean mask over leading dims)."""
    import torch

    got = got.detach().cpu()
    truth = truth.detach().cpu()
    if valid is not None:
        got, truth = got[valid], truth[valid]
    finite = bool(torch.isfinite(got.float()).all())
    if measure == "relative_error":
        value = relative_error(got, truth) if finite else math.inf
    elif measure == "similarity_diff":
        value = similarity_diff(got, truth) if finite else math.inf
    else:
        raise ValueError(f"unknown measure {measure!r}")
    return {"passed": finite and value <= tolerance, "method": f"{measure} against a {reference}",
            measure: value, "tolerance": tolerance, "finite": finite, "compared_values": int(got.numel())}
