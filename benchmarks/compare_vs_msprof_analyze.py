"""parity's trace compare against Ascend's own GPU-versus-NPU comparison (``msprof-analyze
compare``) on one Ascend rank and one GPU Kineto trace from the shared traces, over whole
traces (``parity compare --window span``: msprof-analyze has no window), each tool run as a
whole process, alternately, ``--runs`` times; the median wall time of each is printed.

Figures that share a definition are compared (pass: within 1%), read from msprof-analyze's
``OverallMetrics`` sheet and from parity's comparison JSON; every difference of definition
found on these traces is listed with both numbers.

``msprof-analyze`` is not a parity dependency: install it in its own environment
(``python -m venv /tmp/msprof && /tmp/msprof/bin/pip install msprof-analyze``) and pass its
command with ``--msprof``. It does not read gzip, so the GPU trace is inflated to a temporary
file first (outside the timing).

    python benchmarks/compare_vs_msprof_analyze.py --msprof /tmp/msprof/bin/msprof-analyze --runs 3
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

TRACES = Path(__file__).resolve().parent.parent.parent / "shared/data/traces"
ASCEND = TRACES / "ascend/msinsight/text/level1/rank0_ascend_pt"
GPU = TRACES / "kineto/hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"
TOLERANCE = 0.01
_NS = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main"}
_REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"


def read_sheet(xlsx: Path, name: str) -> list[list[str | None]]:
    """The cells of one sheet of an xlsx file, as text, read with the standard library."""
    with zipfile.ZipFile(xlsx) as z:
        shared = ["".join(t.text or "" for t in si.iter(f"{{{_NS['m']}}}t"))
                  for si in ET.fromstring(z.read("xl/sharedStrings.xml")).findall("m:si", _NS)]
        rels = {r.get("Id"): r.get("Target") for r in ET.fromstring(z.read("xl/_rels/workbook.xml.rels"))}
        sheets = {s.get("name"): rels[s.get(_REL)] for s in ET.fromstring(z.read("xl/workbook.xml")).find("m:sheets", _NS)}
        root = ET.fromstring(z.read("xl/" + sheets[name]))
    rows = []
    for row in root.iter(f"{{{_NS['m']}}}row"):
        cells = []
        for cell in row.findall("m:c", _NS):
            value = cell.find("m:v", _NS)
            cells.append(None if value is None else shared[int(value.text)] if cell.get("t") == "s" else value.text)
        rows.append(cells)
    return rows


def overall_metrics(xlsx: Path) -> dict[str, tuple[float, float]]:
    """``index -> (base ms, comparison ms)`` of the OverallMetrics sheet (base: the GPU)."""
    out = {}
    for row in read_sheet(xlsx, "OverallMetrics")[2:]:
        if len(row) >= 5 and row[0]:
            out[row[0].strip()] = (float(row[1] or 0), float(row[4] or 0))
    return out


def run_msprof(command: str, gpu_json: Path, out: Path) -> tuple[float, Path]:
    """Seconds for one whole ``msprof-analyze compare`` process, and the xlsx it wrote."""
    out.mkdir(parents=True, exist_ok=True)
    begin = time.perf_counter()
    subprocess.run([command, "compare", "-d", str(ASCEND), "-bp", str(gpu_json), "-o", str(out)],
                   check=True, capture_output=True)
    elapsed = time.perf_counter() - begin
    return elapsed, max(out.glob("performance_comparison_result_*.xlsx"), key=lambda p: p.stat().st_mtime)


def run_parity(out: Path) -> float:
    """Seconds for one whole ``parity compare GPU ASCEND --window span`` process writing its JSON."""
    begin = time.perf_counter()
    subprocess.run([sys.executable, "-m", "parity", "compare", str(GPU), str(ASCEND), "--window", "span",
                    "--json", str(out)], check=True, capture_output=True)
    return time.perf_counter() - begin


def parity_figures(doc: dict) -> dict[tuple[str, str], list[float | None]]:
    """``(kind, key) -> per-trace values`` (us; ms below) from the comparison JSON."""
    out = {(c["suite"], c["key"]): c["values"] for c in doc["cases"]}
    device = next(c for c in doc["cases"] if c["suite"] == "device")
    out[("device", "window")] = device["window_us"]
    out[("device", "idle")] = device["idle_us"]
    return out


def shared_definitions(ms: dict[str, tuple[float, float]], ours: dict) -> list[tuple[str, str, float, float]]:
    """(figure, trace, msprof ms, parity ms) for every figure whose definition both tools share."""
    def p(kind: str, key: str, i: int) -> float:
        return (ours.get((kind, key)) or [0.0, 0.0])[i] or 0.0

    cube = sum(v[1] for k, v in ms.items() if k.endswith("(Cube)"))
    rows = [
        ("Computing Time = union of compute tasks", "GPU", ms["Computing Time"][0], p("compute-communication", "compute", 0)),
        ("Computing Time = union of compute tasks", "NPU", ms["Computing Time"][1], p("compute-communication", "compute", 1)),
        ("Uncovered Communication = communication minus compute", "GPU", ms["Uncovered Communication Time"][0],
         p("compute-communication", "exposed communication", 0)),
        ("Uncovered Communication = communication minus compute", "NPU", ms["Uncovered Communication Time"][1],
         p("compute-communication", "exposed communication", 1)),
        ("E2E Time = whole device span", "GPU", ms["E2E Time"][0], p("device", "window", 0)),
        ("Free (below Free Time) = span minus all device work", "GPU", ms["Free"][0], p("device", "idle", 0)),
        ("SDMA = memory copies and sets", "GPU", ms["SDMA"][0], p("category", "memory", 0)),
        ("Cube (AI_CORE tasks) = matrix category", "NPU", cube, p("category", "matrix", 1)),
        ("Other = other category", "NPU", ms["Other"][1], p("category", "other", 1)),
    ]
    return [(name, trace, a, b / 1e3) for name, trace, a, b in rows]


def definition_differences(ms: dict[str, tuple[float, float]], ours: dict) -> list[str]:
    """Each figure the tools define differently, with both numbers (ms)."""
    def p(kind: str, key: str, i: int) -> float:
        return ((ours.get((kind, key)) or [0.0, 0.0])[i] or 0.0) / 1e3

    npu_vector = sum(v[1] for k, v in ms.items() if k.endswith("(Vector)") or k == "Vector")
    gpu_cube = sum(v[0] for k, v in ms.items() if k.endswith("(Cube)"))
    return [
        f"NPU E2E: msprof-analyze {ms['E2E Time'][1]:.3f} ms = Computing + Uncovered Communication + Free "
        f"(a shorter span than the device's); parity's whole device span {p('device', 'window', 1):.3f} ms (its Free follows: "
        f"{ms['Free'][1]:.3f} vs parity idle {p('device', 'idle', 1):.3f})",
        f"NPU Vector: msprof-analyze {npu_vector:.3f} ms leaves Tensor Move out (its SDMA row, "
        f"{ms['SDMA (Tensor Move)'][1]:.3f} ms); parity's vector category {p('category', 'vector', 1):.3f} ms keeps it "
        "(kernel_details' AI_VECTOR_CORE wins over names)",
        f"NPU SDMA: msprof-analyze {ms['SDMA (Tensor Move)'][1]:.3f} ms counts Tensor Move tasks; parity's memory "
        f"category {p('category', 'memory', 1):.3f} ms is every memory copy and set task",
        f"GPU Cube: msprof-analyze {gpu_cube:.3f} ms splits kernels into Conv/Matmul x Cube/Vector by name; parity's "
        f"matrix category {p('category', 'matrix', 0):.3f} ms is every GEMM/convolution-named kernel (union)",
        f"GPU Free Time: msprof-analyze {ms['Free Time'][0]:.3f} ms includes SDMA; parity's idle "
        f"{p('device', 'idle', 0):.3f} ms excludes copies (its Free sub-row is the shared figure)",
        "counts: msprof-analyze counts kernels per class; parity counts activities starting or running in the window",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--msprof", required=True, help="the msprof-analyze command")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        gpu_json = Path(tmp) / "gpu_trace.json"
        gpu_json.write_bytes(gzip.decompress(GPU.read_bytes()))
        ms_times, ours_times = [], []
        for i in range(args.runs):
            seconds, xlsx = run_msprof(args.msprof, gpu_json, Path(tmp) / f"ms{i}")
            ms_times.append(seconds)
            ours_times.append(run_parity(Path(tmp) / f"parity{i}.json"))
        ms = overall_metrics(xlsx)
        ours = parity_figures(json.loads((Path(tmp) / f"parity{args.runs - 1}.json").read_text()))
    print(f"traces: GPU {GPU.name} (base), NPU {ASCEND.relative_to(TRACES)} (comparison); whole-trace windows")
    print(f"wall time, median of {args.runs} whole processes: msprof-analyze compare {statistics.median(ms_times):.2f} s, "
          f"parity compare {statistics.median(ours_times):.2f} s")
    failures = 0
    print(f"{'figure (shared definition)':58} trace  msprof-analyze ms    parity ms   diff")
    for name, trace, theirs, mine in shared_definitions(ms, ours):
        diff = abs(mine - theirs) / theirs if theirs else abs(mine - theirs)
        ok = diff <= TOLERANCE
        failures += not ok
        print(f"{name:58} {trace:5} {theirs:17.4f} {mine:12.4f} {100 * diff:5.2f}% {'ok' if ok else 'FAIL'}")
    print("differences of definition:")
    for line in definition_differences(ms, ours):
        print(f"  - {line}")
    print("PASS" if failures == 0 else f"FAIL ({failures} shared figures beyond {TOLERANCE:.0%})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
