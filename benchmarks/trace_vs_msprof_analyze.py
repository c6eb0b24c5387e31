"""parity against Ascend's own cluster analysis (``msprof-analyze cluster``) on the shared
two-rank Ascend folders: the per-rank step table (all nine columns) and the communication
matrix (per collective and link: bytes, time, bandwidth), and the time each takes as a whole
process, run alternately.

``msprof-analyze`` is not a parity dependency: install it beside parity in its own environment
(``python -m venv /tmp/msprof && /tmp/msprof/bin/pip install msprof-analyze``) and pass its
command with ``--msprof``. Pass: every figure of its step table within 2 us of parity's, every
link's time within 2 us, bytes equal (to the byte: its sizes are MB as floats), bandwidth within 1%.

    python benchmarks/trace_vs_msprof_analyze.py --msprof /tmp/msprof/bin/msprof-analyze --runs 3
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TRACES = Path(__file__).resolve().parent.parent.parent / "shared/data/traces/ascend/msinsight/text"
FOLDERS = ("level1",)  # level 0 writes no communication_matrix.json, which the cluster analysis needs
STEP_KEYS = {
    "Computing": "computing_us", "Communication(Not Overlapped)": "communication_not_overlapped_us",
    "Overlapped": "overlapped_us", "Communication": "communication_us", "Free": "free_us",
    "Stage": "stage_us", "Bubble": "bubble_us",
    "Communication(Not Overlapped and Exclude Receive)": "communication_not_overlapped_exclude_receive_us",
    "Preparing": "preparing_us",
}  # fmt: skip
TIME_TOLERANCE_US = 2.0
BANDWIDTH_TOLERANCE = 0.01


def run_msprof(command: str, folder: Path, out: Path) -> float:
    """Seconds for one whole ``msprof-analyze cluster`` process writing text output to ``out``."""
    begin = time.perf_counter()
    subprocess.run([command, "cluster", "-d", str(folder), "-o", str(out), "--export_type", "text"],
                   check=True, capture_output=True)
    return time.perf_counter() - begin


def run_parity(folder: Path, out: Path) -> float:
    """Seconds for one whole ``parity trace analyze`` process writing its JSON."""
    begin = time.perf_counter()
    subprocess.run([sys.executable, "-m", "parity", "trace", "analyze", str(folder), "--json", str(out)],
                   check=True, capture_output=True)
    return time.perf_counter() - begin


def compare_steps(cluster_csv: Path, ours: dict) -> tuple[float, int]:
    """Largest |parity - msprof| over every step table cell (us) and the number of cells."""
    steps = {(s["rank"], s["step"]): s for s in ours["ascend_steps"]}
    worst, cells = 0.0, 0
    with open(cluster_csv, newline="") as handle:
        for row in csv.DictReader(handle):
            if row["Type"] != "rank":
                continue
            mine = steps[(int(row["Index"]), int(row["Step"]))]
            for column, key in STEP_KEYS.items():
                worst = max(worst, abs(float(row[column]) - mine[key]))
                cells += 1
    return worst, cells


def compare_matrix(cluster_json: Path, ours: dict) -> tuple[float, float, float, int, int]:
    """Largest |time| (us), |bytes| (B) and relative bandwidth difference over every link of
    msprof-analyze's matrix, the links compared and those parity lacks."""
    mine = {(f["step"], f["op"], f["src"], f["dst"]): f for f in ours["communication_matrix"]}
    worst_t = worst_b = worst_bw = 0.0
    links = missing = 0
    for steps in json.loads(cluster_json.read_text()).values():
        for step, ops in steps.items():
            number = int(step.removeprefix("step"))
            for label, entries in ops.items():
                kind = label.split("@")[0]
                for link, value in entries.items():
                    src, dst = (int(x) for x in link.split("-"))
                    op = value.get("Op Name") or ("total" if kind == "Total Op Info" else kind)
                    figure = mine.get((number, op, src, dst))
                    if figure is None:
                        missing += 1
                        continue
                    links += 1
                    worst_t = max(worst_t, abs(figure["time_us"] - value["Transit Time(ms)"] * 1e3))
                    worst_b = max(worst_b, abs(figure["bytes"] - value["Transit Size(MB)"] * 1e6))
                    if value["Bandwidth(GB/s)"]:
                        worst_bw = max(worst_bw, abs(figure["bandwidth_gbps"] / value["Bandwidth(GB/s)"] - 1))
    return worst_t, worst_b, worst_bw, links, missing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--msprof", required=True, help="the msprof-analyze command")
    parser.add_argument("--runs", type=int, default=3, help="alternated runs of each tool")
    args = parser.parse_args()
    ok = True
    for name in FOLDERS:
        folder = TRACES / name
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            theirs, ours = [], []
            for i in range(args.runs):  # alternated, so drift on the machine hits both alike
                theirs.append(run_msprof(args.msprof, folder, out / f"msprof{i}"))
                ours.append(run_parity(folder, out / f"parity{i}.json"))
            result = json.loads((out / "parity0.json").read_text())
            cluster = out / "msprof0" / "cluster_analysis_output"
            step_dev, cells = compare_steps(cluster / "cluster_step_trace_time.csv", result)
            t, b, bw, links, missing = compare_matrix(cluster / "cluster_communication_matrix.json", result)
        passed = (step_dev <= TIME_TOLERANCE_US and t <= TIME_TOLERANCE_US and b < 1 and bw <= BANDWIDTH_TOLERANCE
                  and not missing)  # fmt: skip
        ok &= passed
        print(f"{name}: msprof-analyze cluster median {statistics.median(theirs):.2f} s, parity trace analyze "
              f"median {statistics.median(ours):.2f} s (whole processes, {args.runs} alternated runs each)")
        print(f"  step table: {cells} cells, max |diff| {step_dev:.3f} us")
        print(f"  communication matrix: {links} links, max |time diff| {t:.4f} us, max |bytes diff| {b:.0f} B, "
              f"max bandwidth diff {bw:.2e}, missing in parity {missing}")
        print(f"  {'PASS' if passed else 'FAIL'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
