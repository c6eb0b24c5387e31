"""How a comparison words a ratio: what its CI allows a reader to claim, and with what scope.

- A ratio whose CI holds 1 is "no difference measured", never a speed-up or a slow-down.
- A ratio with no CI is stated as a value, "no CI", saying that its noise is not measured (with
  one run per side, a figure made of no sample set's median cannot show a difference).
- Otherwise B ran ``r``x the speed of A, with the CI.

Every claim names its cases (how many, which subset, which dtype), the runs per side and the
kind of CI: ``between-run`` (several runs per side) or ``within-run only`` (one run on a side:
run-to-run variation not measured, and a CI that excludes 1 is no proof of a difference).

A case whose figure a side's run could not vouch for (a finding ``contended`` or ``invalid``, as
the run's DOUBTFUL verdict counts them) is named with its side, and a claim over cases says how
many of them a side could not vouch for.
"""

from __future__ import annotations

from collections.abc import Sequence

from parity.compare.bootstrap import BETWEEN_RUN, holds_one
from parity.model.figure import ratio_text
from parity.model.findings import ONE_RANK
from parity.model.findings import SIDE_LETTERS as LETTERS

NO_DIFFERENCE = "no difference measured"
WITHIN_CAVEAT = "within-run CI only: a side has one run, run-to-run variation not measured"


def verdict(ratio: float, ci: tuple[float, float] | None) -> str:
    """``no difference measured``, ``faster``, ``slower`` or ``no CI`` (of B against A)."""
    if ci is None:
        return "no CI"
    if holds_one(ci):
        return NO_DIFFERENCE
    return "faster" if ratio > 1 else "slower"


def runs_text(runs: tuple[int, int]) -> str:
    """``over 3 runs per side`` or ``over 3 runs of A and 2 of B``."""
    a, b = runs
    if a == b:
        return f"over {a} run{'s' if a > 1 else ''} per side"
    return f"over {a} run{'s' if a > 1 else ''} of A and {b} of B"


def scope_text(count: int, *, subset: str, suite: str, dtypes: Sequence[str], what: str) -> str:
    """``these 15 compute-bound bf16 gemm shapes``."""
    kind = "" if subset in ("", "all joined") else f" {subset}"
    dtype = f" {'/'.join(dtypes)}" if dtypes else ""
    return f"these {count}{kind}{dtype} {suite} {what}"


def claim(*, scope: str, pair: tuple[str, str], ratio: float, ci: tuple[float, float] | None,
          runs: tuple[int, int], kind: str, statistic: str = "a median of ") -> str:
    """One claim as a sentence with its scope, its runs and its CI kind (module docstring)."""
    a, b = pair
    value = ratio_text(ratio, ci)
    over = runs_text(runs)
    if ci is not None and holds_one(ci):
        text = f"on {scope}, {NO_DIFFERENCE} between {b} and {a}: {statistic}{value}, {over}"
    else:
        no_ci = (" (no CI: its run-to-run noise is not measured, so this alone does not establish a difference; "
                 "give several runs per side)") if ci is None and runs == (1, 1) else " (no CI)" if ci is None else ""
        text = f"on {scope}, {b} ran {statistic}{value} the speed of {a}{no_ci}, {over}"
    if ci is not None:
        text += " (between-run CI)" if kind == BETWEEN_RUN else f" ({WITHIN_CAVEAT})"
    return text + "; not a ranking beyond these cases"


def untrusted_clause(counts: dict[str, tuple[int, set[str]]], total: int) -> str:
    """What a claim over ``total`` cases adds when a side could not vouch for some of them:
    ``counts`` maps a side's letter to (cases doubted, their codes). ``{"A": (5, {"contended"})}``
    and 34 -> ``A could not vouch for 5 of these 34 cases (contended): figures that cannot be
    trusted``; '' when no side doubts any."""
    parts = [f"{side} could not vouch for {n} of these {total} cases ({', '.join(sorted(codes))})"
             for side, (n, codes) in counts.items() if n]
    return "; ".join(parts) + ": figures that cannot be trusted" if parts else ""


CAVEAT_WORDS = {ONE_RANK: "on one rank, where no data crosses a link"}


def caveat_clause(counts: dict[str, dict[str, int]], total: int) -> str:
    """What a claim over ``total`` cases adds when a side measured some of them under a caveat
    (``counts``: side letter -> {code: cases}). ``{"A": {"one-rank": 54}}`` and 54 -> ``A
    measured 54 of these 54 cases on one rank, where no data crosses a link``; '' for none."""
    return "; ".join(f"{side} measured {n} of these {total} cases {CAVEAT_WORDS.get(code, f'with {code}')}"
                     for side, codes in counts.items() for code, n in sorted(codes.items()) if n)

