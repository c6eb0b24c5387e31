"""What a what-if says about real traces: the finding codes of one prediction (with its
sensitivity table) on every trace of the shared folder (Kineto files, Ascend ``*_ascend_pt``
folders, Nsight Systems ``.sqlite`` exports).

A finding that fires on most real traces is noise, however sound its rule: this census shows
how often each code fires, per trace and in all, so a change to a rule is judged on the traces
users bring. Traces where the scale selects nothing, or that do not load, are listed with the
reason and not counted.

    python benchmarks/whatif_findings.py                      # matrix=2 over every shared trace
    python benchmarks/whatif_findings.py --scale vector=inf --json census.json
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT.parent / "shared/data/traces"


def shared_traces(root: Path = TRACES) -> list[Path]:
    """Every trace under ``root``: Kineto JSON files, Ascend rank folders, Nsight exports."""
    kineto = [p for p in (root / "kineto").rglob("*.json*") if p.is_file()]
    ascend = [p for p in (root / "ascend").rglob("*_ascend_pt") if p.is_dir()]
    nsys = [p for p in (root / "nsys").rglob("*.sqlite") if p.is_file()]
    return sorted(kineto + ascend + nsys)


def census(paths: list[Path], scale: str) -> dict:
    """``{"traces": {name: {code: count} or {"skipped": reason}}, "totals": {code: traces with it}}``."""
    from parity.model.errors import ParityError
    from parity.trace import load_trace
    from parity.trace.whatif import parse_scale, predict

    traces: dict[str, dict] = {}
    totals: collections.Counter = collections.Counter()
    for path in paths:
        name = str(path.relative_to(TRACES)) if path.is_relative_to(TRACES) else str(path)
        try:
            prediction = predict(load_trace([path]), [parse_scale(scale)])
        except ParityError as exc:
            traces[name] = {"skipped": str(exc).splitlines()[0][:160]}
            continue
        findings = [*prediction.findings, *(prediction.sensitivity.findings if prediction.sensitivity else ())]
        codes = dict(collections.Counter(f.code for f in findings))
        traces[name] = codes
        totals.update(codes.keys())
    return {"scale": scale, "traces": traces, "totals": dict(totals),
            "analysed": sum(1 for v in traces.values() if "skipped" not in v)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", default="matrix=2", help="the what-if scale (default matrix=2)")
    parser.add_argument("--json", dest="json_path", help="also write the census as JSON")
    parser.add_argument("paths", nargs="*", type=Path, help="traces (default: every trace of the shared folder)")
    args = parser.parse_args()
    paths = args.paths or shared_traces()
    result = census(paths, args.scale)
    for name, codes in result["traces"].items():
        text = codes["skipped"] if "skipped" in codes else ", ".join(f"{c} {n}" for c, n in sorted(codes.items())) or "none"
        print(f"{name[:78]:78s} {text}")
    print(f"\n{result['analysed']} traces analysed with {result['scale']}; traces with each code: "
          + ", ".join(f"{c} {n}" for c, n in sorted(result["totals"].items())))
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
