"""Terminal lines for a fleet analysis: the headline, the straggler vote and the findings.

Takes the headline of :func:`parity.trace.fleet.folder.fleet_headline` and ``fleet.json``'s
content; it computes no figure and never prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from parity.report.trace import format_us
from parity.trace.fleet.folder import finding_details


def _us(ns: Any) -> str:
    return "-" if ns is None else format_us(float(ns) / 1e3)


def fleet_lines(headline: dict[str, Any], summary: dict[str, Any],
                stragglers: Sequence[dict[str, Any]] = ()) -> list[str]:
    """What ``parity trace fleet`` says once the tables are written; ``stragglers``, the rows of
    its stragglers table, give each named rank's line (how often last, how late, what it costs)."""
    ranks = headline["ranks"]
    lines = [f"{ranks} rank{'' if ranks == 1 else 's'}, {headline['collectives']:,} matched collectives; arrival skew median "
             f"{_us(headline['skew_median_ns'])}, p99 {_us(headline['skew_p99_ns'])}; total wait "
             f"{_us(headline['wait_total_ns'])}"]
    clock = (summary.get("findings") or {}).get("clock_offset_suspected")
    if clock:
        count = clock.get("count") if isinstance(clock, dict) else clock
        lines.append(f"  clock offset suspected: {count} ops ended more than 1 us before their collective's last "
                     "member arrived, so the skew, waits and arrival order here carry an offset between the ranks' "
                     "clocks (finding below)")
    for op in headline.get("ops") or []:
        busbw = op.get("busbw_median_bps")
        lines.append(f"  {op['op']}: {op['collectives']:,} collectives, skew median {_us(op['skew_median_ns'])}, "
                     f"comm median {_us(op['comm_median_ns'])}"
                     + (f", busbw median {busbw / 1e9:.3g} GB/s" if busbw else ""))
    named, doubted = headline.get("straggler_ranks") or [], set(headline.get("straggler_ranks_in_doubt") or [])
    lines.append("stragglers by arrival order: " + (", ".join(f"rank {r}" + (" (in doubt: clock offset)" if r in doubted
                                                                             else "") for r in named)
                                                    if named else "none named"))
    rows = {int(row["rank"]): row for row in stragglers if row.get("rank") is not None}
    lines += [_straggler_line(rows[r]) for r in named if r in rows]
    for code, finding in sorted((summary.get("findings") or {}).items()):
        count = finding.get("count") if isinstance(finding, dict) else finding
        shown = finding_details(finding)
        lines.append(f"finding {code}: {count}" + (f" ({shown})" if shown else ""))
    return lines


def _straggler_line(row: dict[str, Any]) -> str:
    """``rank 5: last in 21 collectives (100% of its collectives, 12.5% expected), median 1.913 us
    late; kept its collectives waiting 40.17 us in all (5.021 us its fair share); step cost 11.54 us
    in the median step, 13.39 us on average, of a 215.8 ms step (replay)``; the mean only where it
    differs from the median."""
    node = f" (node {row['node']})" if row.get("node") else ""
    share, expected = row.get("share_last"), row.get("expected_share")
    shares = f" ({share:.0%} of its collectives, {expected:.1%} expected)" if share is not None and expected else ""
    held, fair = row.get("held_ns"), row.get("fair_held_ns")
    mean = (f" in the median step, {_us(row['mean_step_cost_ns'])} on average,"
            if row.get("mean_step_cost_ns") not in (None, row.get("step_cost_ns")) else "")
    kept = (f"; kept its collectives waiting {_us(held)} in all ({_us(fair)} its fair share)"
            if held is not None and fair is not None else "")
    return (f"  rank {row['rank']}{node}: last in {row.get('times_last', 0):,} collectives{shares}, median "
            f"{_us(row.get('median_lateness_ns'))} late{kept}; step cost {_us(row.get('step_cost_ns'))}{mean} of a "
            f"{_us(row.get('step_ns'))} step ({row.get('method') or 'method not recorded'})" + _doubt(row))


def _doubt(row: dict[str, Any]) -> str:
    """Why a straggler is in doubt (its row's ``in_doubt``), else nothing."""
    if not row.get("in_doubt"):
        return ""
    return (f"; IN DOUBT: at {row.get('clock_suspect_last', 0):,} of the {row.get('times_last', 0):,} collectives "
            "it was last at, another member's op ended more than 1 us before it arrived, impossible on one clock "
            "(finding clock_offset_suspected), and without them the vote does not name it: its lateness may be "
            "a clock offset between ranks")
