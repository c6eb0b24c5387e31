"""``parity gemm --quick --device cpu`` as a user runs it, idle or beside busy loops, and what
its figures say: the verdict line, the cases marked ``contended``, ``P`` (and the searched ``P``
before any raise) against the best sweep shape, and every fraction of ``P`` or efficiency over 1
with the findings that explain it.

Usage: python benchmarks/gemm_trust.py [--busy N] [--runs K]
(``--busy 2`` starts two bounded ``while True: pass`` loops beside each run and stops them after.)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def one_run(folder: Path, index: int, busy: int) -> None:
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    env = {**os.environ, "PARITY_DB": str(folder / f"run{index}.sqlite"),
           "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = folder / f"run{index}.json"
    try:
        with open("/proc/loadavg") as f:
            load = f.read().split()[:3]
        done = subprocess.run([sys.executable, "-m", "parity", "gemm", "--quick", "--device", "cpu", "--json", str(out)],
                              env=env, capture_output=True, text=True, timeout=900)
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    print(f"## run {index} ({busy} busy loops; load average before {' '.join(load)}); exit {done.returncode}")
    print(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-400:])
    report(json.loads(out.read_text()))


def report(d: dict) -> None:
    s = d["summary"]
    timed = [c for c in d["cases"] if c.get("samples")]
    contended = sum(any(f["code"] == "contended" for f in c["findings"]) for c in timed)
    rates = [b["achieved_flops"] for r in s["rows"] for b in r["backends"].values() if b.get("achieved_flops")]
    best = max(rates)
    raised = s.get("ceiling_raised") or {}
    searched = raised.get("from_flops") or s["ceiling_flops"]
    while raised.get("previous"):
        raised = raised["previous"]
        searched = raised.get("from_flops") or searched
    print(f"contended {contended}/{len(timed)}; P {s['ceiling_flops']:.4g} FLOP/s, searched P {searched:.4g}, "
          f"best shape {best:.4g}: P/best {s['ceiling_flops'] / best:.3f}, searched P/best {searched / best:.3f}")
    codes = sorted({f["code"] for f in s.get("findings", [])})
    print(f"summary findings: {codes}")
    over = [(r["name"], b.get("fraction_of_ceiling"), b.get("efficiency")) for r in s["rows"]
            for b in r["backends"].values() if (b.get("efficiency") or 0) > 1 or (b.get("fraction_of_ceiling") or 0) > 1]
    print(f"rows over 1 (name, fraction of P, efficiency): {[(n, round(f or 0, 3), round(e or 0, 3)) for n, f, e in over]}")
    flagged = {f["name"]: [x["code"] for x in f.get("findings", [])] for f in d["figures"]
               if any(x["code"] in ("invalid", "over-attainable") for x in f.get("findings", []))}
    print(f"figures with invalid/over-attainable: {flagged}")
    explained = not over or "ceiling-raised" in codes or any("invalid" in c or "over-attainable" in c
                                                             for c in flagged.values())
    print(f"every value over 1 explained by a finding: {explained}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=0)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(1, args.runs + 1):
            one_run(Path(tmp), i, args.busy)


if __name__ == "__main__":
    main()
