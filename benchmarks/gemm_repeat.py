"""Does the GEMM ceiling hold up run to run? ``parity gemm --quick`` several times in a row.

Each run is a fresh ``python -m parity gemm --quick --device DEV --dtype DT`` process (as a
user meets it), writing its JSON; the script reads every run's ceiling ``P`` (the median of the
sentinel rounds timed through the sweep), the spread of its confirmation and sentinel rounds,
whether it carries ``unstable-ceiling``, and the ceiling's own shape timed as a sweep shape
beside each sentinel round, as a fraction of ``P`` with its 95% CI (paired), and beside it the
sentinel rounds over the confirmation rounds' median (how far the sweep's moments were from
the search's).

Bar (issue "figures that hold up"): every run's ``P`` within 10% of the runs' median ``P``, or
each run that is off carries ``unstable-ceiling``; and in every run the own shape's fraction of
``P`` is 1.0 within its CI.

    python benchmarks/gemm_repeat.py --runs 5 --dtype fp32
    python benchmarks/gemm_repeat.py --runs 5 --dtype bf16 --out /tmp/gemm_repeat_bf16.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

BAND = 0.10


def one_run(index: int, *, device: str, dtype: str, folder: Path) -> dict[str, Any]:
    """One ``parity gemm --quick`` process; its ceiling figures (FLOP/s) and flags."""
    out = folder / f"run{index}.json"
    cmd = [sys.executable, "-m", "parity", "gemm", "--quick", "--device", device, "--dtype", dtype,
           "--db", str(folder / "runs.sqlite"), "--json", str(out), "--limit", "0"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if not out.exists():
        raise SystemExit(f"run {index} wrote no JSON (exit {done.returncode}): {done.stderr.strip()[-500:]}")
    summary = json.loads(out.read_text())["summary"]
    if not summary.get("ceiling_flops"):
        raise SystemExit(f"run {index} measured no ceiling: {summary.get('ceiling_error')}")
    rounds = summary.get("ceiling_rounds") or {}
    own = summary.get("ceiling_own_shape") or {}
    return {"run": index, "exit": done.returncode, "ceiling_flops": summary.get("ceiling_flops"),
            "ceiling_shape": summary.get("ceiling_shape"), "rounds_flops": rounds.get("rounds_flops"),
            "spread": rounds.get("spread"), "ci95_flops": rounds.get("ci95_flops"),
            "unstable_ceiling": "unstable-ceiling" in (summary.get("ceiling_findings") or []),
            "own_fraction": own.get("fraction"), "own_ci95": own.get("ci95"), "own_reproduced": own.get("reproduced"),
            "own_source": own.get("source"), "own_flops": own.get("own_flops"),
            "confirm_flops": rounds.get("confirm_flops"), "sentinel_flops": rounds.get("sentinel_flops"),
            "spread_with_confirmation": (rounds.get("with_confirmation") or {}).get("spread"),
            "sentinels_over_confirm": (own.get("confirm_fraction") or {}).get("fraction"),
            "findings": [f["code"] for f in summary.get("findings") or []],
            "best_fraction_of_ceiling": summary.get("best_fraction_of_ceiling"),
            "median_efficiency_compute_bound": (summary.get("efficiency_compute_bound") or {}).get("median")}


def judge(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The bar over the runs: ``|P_i / median(P) - 1| <= BAND`` or ``unstable-ceiling`` for each
    run, and the own shape's fraction CI containing 1.0 in each."""
    middle = statistics.median(r["ceiling_flops"] for r in rows)
    for r in rows:
        r["off_median"] = r["ceiling_flops"] / middle - 1
        r["within_band"] = abs(r["off_median"]) <= BAND
    ceilings_hold = all(r["within_band"] or r["unstable_ceiling"] for r in rows)
    own_holds = all(bool(r["own_reproduced"]) for r in rows)
    return {"median_ceiling_flops": middle, "ceilings_hold": ceilings_hold, "own_shape_holds": own_holds,
            "pass": ceilings_hold and own_holds}


def _print(rows: list[dict[str, Any]], verdict: dict[str, Any], *, dtype: str) -> None:
    print(f"{'run':>3} {'P GFLOP/s':>10} {'vs median':>10} {'spread':>7} {'unstable':>9}  "
          f"{'shape':<16}{'own/P':>7}  own 95% CI       sweep/confirm")
    for r in rows:
        shape = r["ceiling_shape"] or {}
        ci = r["own_ci95"]
        spread = r["spread_with_confirmation"] if r.get("spread_with_confirmation") is not None else r["spread"]
        print(f"{r['run']:>3} {r['ceiling_flops'] / 1e9:>10.2f} {r['off_median']:>+10.1%} {spread:>7.1%} "
              f"{'yes' if r['unstable_ceiling'] else 'no':>9}  "
              f"{'x'.join(str(shape.get(d)) for d in 'mnk'):<16}"
              + (f"{r['own_fraction']:>7.3f}  [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "      -  -")
              + (f"   {r['sentinels_over_confirm']:.3f}" if r.get("sentinels_over_confirm") else ""))
    print(f"{dtype}: median P {verdict['median_ceiling_flops'] / 1e9:.2f} GFLOP/s; ceilings within "
          f"{BAND:.0%} or flagged: {'PASS' if verdict['ceilings_hold'] else 'FAIL'}; own shape 1.0 within "
          f"its CI: {'PASS' if verdict['own_shape_holds'] else 'FAIL'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--out", default=None, help="write the rows and verdict as JSON here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gemm-repeat-") as tmp:
        rows = []
        for index in range(1, args.runs + 1):
            rows.append(one_run(index, device=args.device, dtype=args.dtype, folder=Path(tmp)))
            print(f"run {index}: P {rows[-1]['ceiling_flops'] / 1e9:.2f} GFLOP/s", flush=True)
    verdict = judge(rows)
    _print(rows, verdict, dtype=args.dtype)
    if args.out:
        Path(args.out).write_text(json.dumps({"dtype": args.dtype, "rows": rows, **verdict}, indent=2) + "\n")
    return 0 if verdict["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
