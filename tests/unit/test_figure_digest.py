"""The figure digest of ``benchmarks/figure_digest.py``: what it reads of a figure, and that the
order figures come in does not change it."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import figure_digest  # the benchmark folder is not a package: put on the path above

A = {"name": "gemm.ceiling", "value": 2.0e12, "unit": "FLOP/s", "method": "median of rounds",
     "scope": {"dtype": "bf16"}, "ci95": [1.9e12, 2.1e12], "best": 2.05e12, "note": ""}
B = {"name": "membw.copy.bandwidth", "value": 5.0e10, "unit": "B/s", "method": "fit",
     "scope": {"op": "copy"}, "ci95": None, "best": None, "note": "cold"}


def test_a_figure_line_is_its_name_value_unit_method_and_scope_with_sorted_keys() -> None:
    assert figure_digest.figure_line(B) == (
        '{"method": "fit", "name": "membw.copy.bandwidth", "scope": {"op": "copy"}, '
        '"unit": "B/s", "value": 50000000000.0}'
    )


def test_the_digest_is_sha256_of_the_sorted_lines() -> None:
    value, lines = figure_digest.digest([B, A])
    assert lines == sorted([figure_digest.figure_line(A), figure_digest.figure_line(B)])
    assert value == hashlib.sha256("\n".join(lines).encode()).hexdigest()
    assert figure_digest.digest([A, B])[0] == value  # order of the figures does not count


def test_the_digest_ignores_the_ci_and_note_but_not_the_value() -> None:
    base = figure_digest.digest([A])[0]
    assert figure_digest.digest([{**A, "ci95": [0.0, 1.0], "note": "x", "best": None}])[0] == base
    assert figure_digest.digest([{**A, "value": 2.0e12 * (1 + 1e-9)}])[0] != base
    assert figure_digest.digest([{**A, "scope": {"dtype": "fp16"}}])[0] != base


def test_no_figures_has_the_digest_of_empty_text() -> None:
    assert figure_digest.digest([]) == (hashlib.sha256(b"").hexdigest(), [])


def test_floats_are_rounded_to_twelve_significant_digits_before_hashing() -> None:
    # 21759999.999999996 and 21760000.0 are one figure derived in two orders of operations.
    a = {**B, "value": 21759999.999999996, "scope": {"x": 0.1 + 0.2}}
    b = {**B, "value": 21760000.0, "scope": {"x": 0.3}}
    assert figure_digest.figure_line(a) == figure_digest.figure_line(b)
    assert figure_digest.figure_line({**B, "value": 21760000.1}) != figure_digest.figure_line(b)
