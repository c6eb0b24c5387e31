"""parity's trace compare against Ascend's own GPU-versus-NPU comparison (``msprof-analyze
compare -d NPU_PROFILE -bp GPU_TRACE``) on real traces from the shared folder: one Ascend rank
(level 1 profile) against a GPU Kineto trace, for two GPU traces (a small single-GPU AlexNet
step and a 34 MB two-step DDP training trace with NCCL), over whole traces (``--window span``:
msprof-analyze has no window).

For each pair it prints one category table: each msprof-analyze ``OverallMetrics`` row beside
parity's figure for the same trace, whether the two share a definition, and the difference.
Figures that share a definition must agree within 1%; the others say how the definitions
differ (and, where it can be done from parity's own per-kernel table, re-derive
msprof-analyze's figure from parity's kernels to show the difference is only the definition).

Then whole-process time, each command in a fresh process, alternated (benchmarks/alternated.py:
a first round of each left out, the order reversed every round): ``parity trace compare``
against msprof-analyze as run by default (every comparison: operators, memory, API,
communication) and with ``--enable_profiling_compare`` alone (the overall metrics, the work
parity's table does). Both tools run with bytecode caching on (an installed package has it),
into a temporary cache folder. The bar: parity at least 10x faster (median ratio of wall
times). Each pair also gives the ratio of CPU times (user + system) and the load average before
and after its rounds: on a shared machine the wall time of a short process moves with the load
more than its CPU time does, so both are printed, each judged against the bar.

``msprof-analyze`` is not a parity dependency: install it in its own environment
(``python -m venv /tmp/msprof && /tmp/msprof/bin/pip install msprof-analyze``) and pass its
command with ``--msprof``. Each tool runs as its users install it, in an environment of its
own: ``--parity-python`` names the interpreter of one where parity is installed
(``python -m venv /tmp/parity-venv && /tmp/parity-venv/bin/pip install -e '.[fast]'``; this
interpreter by default). A shared interpreter's start-up may cost more than a fresh
environment's (a ``.pth`` file in its site-packages that imports a package at every start),
so the report prints each interpreter's bare start-up CPU time (``python -c pass``) beside the
ratios. It does not read gzip, so each GPU trace is inflated to a temporary
file first (outside the timing); parity reads the same inflated file.

    python benchmarks/compare_vs_msprof_analyze.py --msprof /tmp/msprof/bin/msprof-analyze \
        --parity-python /tmp/parity-venv/bin/python --rounds 5
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zipfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from alternated import alternate, ratio_line, samples_line, whole_process  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT.parent / "shared/data/traces"
ASCEND = TRACES / "ascend/msinsight/text/level1/rank0_ascend_pt"
GPU_TRACES = {
    "alexnet": TRACES / "kineto/hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
    "ddp": TRACES / "kineto/hta/trace_diff/control/control.json.gz",
}
TOLERANCE = 0.01
BAR = 10.0
# msprof-analyze's GPU kernel masks (a kernel is Cube when its lower-cased name holds one)
CUBE_MASKS = ("gemm", "conv", "cutlass", "wgrad", "gemvx")
_M = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"


def _column(ref: str) -> int:
    """0-based column of a cell reference (``C7`` -> 2)."""
    index = 0
    for ch in re.match(r"[A-Z]+", ref).group():
        index = index * 26 + ord(ch) - 64
    return index - 1


def read_sheet(xlsx: Path, name: str) -> list[list[str | None]]:
    """The cells of one sheet of an xlsx file as text, placed by their reference (a missing cell
    is None), read with the standard library."""
    with zipfile.ZipFile(xlsx) as z:
        names = set(z.namelist())
        shared = ["".join(t.text or "" for t in si.iter(f"{_M}t"))
                  for si in ET.fromstring(z.read("xl/sharedStrings.xml")).iter(f"{_M}si")] \
            if "xl/sharedStrings.xml" in names else []
        rels = {r.get("Id"): r.get("Target") for r in ET.fromstring(z.read("xl/_rels/workbook.xml.rels"))}
        sheets = {s.get("name"): rels[s.get(_REL)] for s in ET.fromstring(z.read("xl/workbook.xml")).iter(f"{_M}sheet")}
        if name not in sheets:
            raise KeyError(f"{xlsx} has no sheet {name!r}; it has {sorted(sheets)}")
        target = sheets[name].lstrip("/")
        root = ET.fromstring(z.read(target if target.startswith("xl/") else "xl/" + target))
    rows = []
    for row in root.iter(f"{_M}row"):
        cells: dict[int, str | None] = {}
        for cell in row.iter(f"{_M}c"):
            value, kind = cell.find(f"{_M}v"), cell.get("t")
            if kind == "inlineStr":
                text: str | None = "".join(t.text or "" for t in cell.iter(f"{_M}t"))
            elif value is None:
                text = None
            else:
                text = shared[int(value.text)] if kind == "s" else value.text
            cells[_column(cell.get("r"))] = text
        rows.append([cells.get(i) for i in range(max(cells) + 1)] if cells else [])
    return rows


def _number(text: str | None) -> float:
    try:
        return float(text) if text is not None else 0.0
    except ValueError:  # '/', 'INF'
        return 0.0


def overall_metrics(xlsx: Path) -> dict[str, tuple[float, float]]:
    """``index -> (base ms, comparison ms)`` of the OverallMetrics sheet (index stripped of its
    indent; the base is the ``-bp`` trace, here the GPU)."""
    out = {}
    for row in read_sheet(xlsx, "OverallMetrics")[2:]:
        if len(row) >= 5 and row[0]:
            out[row[0].strip()] = (_number(row[1]), _number(row[4]))
    return out


@dataclass(frozen=True)
class Line:
    """One row of the category table: msprof-analyze's figure and parity's, in ms."""

    side: str
    theirs_name: str
    ours_name: str
    theirs: float
    ours: float
    shared: bool
    note: str = ""

    @property
    def diff(self) -> float:
        return abs(self.ours - self.theirs) / self.theirs if self.theirs else abs(self.ours - self.theirs)

    @property
    def ok(self) -> bool:
        return not self.shared or self.diff <= TOLERANCE


def _rank(analysis: dict) -> dict:
    return analysis["ranks"][0]


def _cat(rank: dict, name: str, field: str = "summed_us") -> float:
    return next((c[field] for c in rank["categories"] if c["category"] == name), 0.0) / 1e3


def _rows_sum(ms: dict[str, tuple[float, float]], side: int, *, suffix: str = "", names: tuple[str, ...] = ()) -> float:
    return sum(v[side] for k, v in ms.items() if (suffix and k.endswith(suffix)) or k in names)


def cube_by_masks(kernels_csv: Path) -> float:
    """msprof-analyze's GPU Cube time re-derived from parity's per-kernel table: the summed time
    (ms) of every kernel whose lower-cased name holds one of its masks, NCCL and copies aside."""
    total = 0.0
    with kernels_csv.open(newline="") as f:
        for row in csv.DictReader(f):
            name = row["name"].lower()
            if row["category"] not in ("communication", "memory") and any(m in name for m in CUBE_MASKS):
                total += float(row["total_us"])
    return total / 1e3


def gpu_lines(ms: dict[str, tuple[float, float]], rank: dict, kernels_csv: Path) -> list[Line]:
    """The GPU (base) side of the category table."""
    cc, dev = rank["compute_communication"], rank["device"]
    compute, exposed, window = cc["compute_us"] / 1e3, cc["exposed_communication_us"] / 1e3, dev["window_us"] / 1e3
    cube = _rows_sum(ms, 0, suffix="(Cube)", names=("Cube",))
    kernels = _rows_sum(ms, 0, names=("Conv (Forward)", "Conv (Backward)", "Matmul", "Vector", "Cube",
                                      "Flash Attention (Forward)", "Flash Attention (Backward)"))
    parity_kernels = sum(c["summed_us"] for c in rank["categories"]
                         if c["category"] not in ("communication", "memory")) / 1e3
    vector = _rows_sum(ms, 0, suffix="(Vector)", names=("Vector",))
    return [
        Line("GPU", "Computing Time", "compute (union)", ms["Computing Time"][0], compute, True),
        Line("GPU", "Conv+Matmul+Vector+Cube rows", "compute categories, summed", kernels, parity_kernels, True),
        Line("GPU", "Uncovered Communication Time", "exposed communication", ms["Uncovered Communication Time"][0],
             exposed, True),
        Line("GPU", "E2E Time", "window (whole device span)", ms["E2E Time"][0], window, True),
        Line("GPU", "Free Time", "window - compute - exposed", ms["Free Time"][0], window - compute - exposed, True),
        Line("GPU", "Cube rows (name masks)", "parity kernels under the same masks", cube, cube_by_masks(kernels_csv),
             True, "msprof-analyze's Cube re-derived from parity's kernel table"),
        Line("GPU", "Cube rows (name masks)", "matrix category, summed", cube, _cat(rank, "matrix"), False,
             f"Cube is any kernel named {'/'.join(CUBE_MASKS)} (FBGEMM's embedding kernels fbgemm_gpu::* count, "
             "cuBLAS gemv2N/gemv2T do not); parity's matrix rules class GEMM/GEMV/convolution kernels"),
        Line("GPU", "Vector rows", "vector + unmatched, summed", vector,
             _cat(rank, "vector") + _cat(rank, "unmatched") + _cat(rank, "attention") + _cat(rank, "other"), False,
             "the complement of Cube among compute kernels, so it differs by the same kernels"),
        Line("GPU", "Free (under Free Time)", "idle (no stream busy)", ms["Free"][0], dev["idle_us"] / 1e3, False,
             "its Free leaves out copies on the compute stream only (its SDMA row); parity's idle leaves out "
             "copies on every stream"),
        Line("GPU", "SDMA (under Free Time)", "memory category, summed", ms["SDMA"][0], _cat(rank, "memory"), False,
             "its SDMA is memcpy/memset on the compute stream; parity's memory is every copy and set"),
    ]


def npu_lines(ms: dict[str, tuple[float, float]], rank: dict) -> list[Line]:
    """The NPU (comparison) side of the category table."""
    cc, dev = rank["compute_communication"], rank["device"]
    compute, exposed, window = cc["compute_us"] / 1e3, cc["exposed_communication_us"] / 1e3, dev["window_us"] / 1e3
    cube = _rows_sum(ms, 1, suffix="(Cube)", names=("Cube",))
    vector = _rows_sum(ms, 1, suffix="(Vector)", names=("Vector",))
    move = ms.get("SDMA (Tensor Move)", (0.0, 0.0))[1]
    return [
        Line("NPU", "Computing Time", "compute (union)", ms["Computing Time"][1], compute, True),
        Line("NPU", "Uncovered Communication Time", "exposed communication", ms["Uncovered Communication Time"][1],
             exposed, True),
        Line("NPU", "Cube rows (Cube core time > 0)", "matrix category (AI_CORE), summed", cube,
             _cat(rank, "matrix"), True),
        Line("NPU", "Vector rows + SDMA (Tensor Move)", "vector category (AI_VECTOR_CORE), summed", vector + move,
             _cat(rank, "vector"), True, "Tensor Move runs on the vector core: parity keeps it in vector"),
        Line("NPU", "Vector rows", "vector category, summed", vector, _cat(rank, "vector"), False,
             "msprof-analyze moves Tensor Move out of Vector into its SDMA row"),
        Line("NPU", "Other", "other category", ms["Other"][1], _cat(rank, "other"), False,
             "its Other is a residual (Computing minus every classed kernel); parity's is the tasks its rules "
             "class as other: the same tasks only when compute tasks do not overlap"),
        Line("NPU", "E2E Time", "window (whole device span)", ms["E2E Time"][1], window, False,
             "its E2E is the span of the profiler's Overlap Analysis rows (Computing + Uncovered + Free); parity's "
             "span holds every device task, some outside those rows"),
        Line("NPU", "Free Time", "window - compute - exposed", ms["Free Time"][1], window - compute - exposed, False,
             "follows E2E"),
        Line("NPU", "SDMA (Tensor Move)", "memory category, summed", move, _cat(rank, "memory"), False,
             "Tensor Move tasks against every memory copy and set task"),
    ]


def _env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), *filter(None, [env.get("PYTHONPATH")])])
    return env


PARITY_PYTHON = [sys.executable]  # set from --parity-python


def _parity(*args: str) -> list[str]:
    return [PARITY_PYTHON[0], "-m", "parity", *args]


def bare_start_cpu_s(python: str, *, runs: int = 5) -> float:
    """Median CPU seconds (user + system) of ``python -c pass``: the interpreter's own start-up."""
    import resource
    import statistics
    import subprocess

    cpu = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([python, "-c", "pass"], check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(cpu)


def _msprof(command: str, gpu_json: Path, out: Path, *extra: str) -> list[str]:
    return [command, "compare", "-d", str(ASCEND), "-bp", str(gpu_json), "-o", str(out), *extra]


def figures(msprof: str, gpu_json: Path, tmp: Path, env: dict[str, str]) -> tuple[list[Line], dict]:
    """Run each tool once for its figures (not timed): the category table's lines."""
    out = tmp / "ms-figures"
    subprocess.run(_msprof(msprof, gpu_json, out), check=True, capture_output=True, env=env)
    ms = overall_metrics(max(out.glob("performance_comparison_result_*.xlsx"), key=lambda p: p.stat().st_mtime))
    analyses = []
    for i, trace in enumerate((gpu_json, ASCEND)):
        js = tmp / f"analysis{i}.json"
        subprocess.run(_parity("trace", "analyze", str(trace), "--window", "span", "--json", str(js),
                               "--csv", str(tmp / f"csv{i}")), check=True, capture_output=True, env=env)
        analyses.append(json.loads(js.read_text()))
    compared = tmp / "compare.json"
    subprocess.run(_parity("trace", "compare", str(gpu_json), str(ASCEND), "--window", "span", "--json", str(compared)),
                   check=True, capture_output=True, env=env)
    lines = gpu_lines(ms, _rank(analyses[0]), tmp / "csv0" / "kernels.csv") + npu_lines(ms, _rank(analyses[1]))
    return lines, json.loads(compared.read_text())


def _timed(command: list[str], env: dict[str, str], cpu: list[float]) -> float:
    """Wall seconds of one whole process; its CPU seconds (user + system, its children
    included) appended to ``cpu``: on a shared machine the CPU time moves less than the wall."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = whole_process(command, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return seconds


def timing(msprof: str, gpu_json: Path, tmp: Path, env: dict[str, str],
           rounds: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Whole-process wall seconds of each command, alternated, and their CPU seconds (the
    first, left-out round's CPU time dropped too)."""
    cpu: dict[str, list[float]] = {"parity": [], "msprof-analyze": [], "msprof-analyze overall only": []}
    commands = {
        "parity": lambda i: _timed(_parity("trace", "compare", str(gpu_json), str(ASCEND), "--window", "span",
                                           "--json", str(tmp / f"p{i}.json")), env, cpu["parity"]),
        "msprof-analyze": lambda i: _timed(_msprof(msprof, gpu_json, tmp / f"ms{i}"), env, cpu["msprof-analyze"]),
        "msprof-analyze overall only": lambda i: _timed(
            _msprof(msprof, gpu_json, tmp / f"mo{i}", "--enable_profiling_compare"), env,
            cpu["msprof-analyze overall only"]),
    }
    wall = alternate(commands, rounds)
    return wall, {tool: samples[1:] for tool, samples in cpu.items()}


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as ``uptime`` prints them."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def report(name: str, gpu: Path, lines: list[Line], compared: dict,
           times: tuple[dict[str, list[float]], dict[str, list[float]]],
           load: tuple[str, str]) -> tuple[bool, list[float], list[float]]:
    """Print one pair's table and timing; (every shared figure within 1%, the wall ratios, the
    CPU ratios)."""
    print(f"== pair {name}: GPU {gpu.relative_to(TRACES)} (msprof-analyze's base, -bp) against "
          f"NPU {ASCEND.relative_to(TRACES)} (-d); whole traces")
    print(f"   parity trace compare rows: {sorted({c['suite'] for c in compared['cases']})}; caveat: "
          f"{'yes' if compared.get('caveats') else 'no'}")
    print(f"{'side':4} {'msprof-analyze row':34} {'parity figure':42} {'msprof ms':>12} {'parity ms':>12} "
          f"{'diff':>7}  definition")
    for line in lines:
        verdict = ("shared, ok" if line.ok else "shared, FAIL") if line.shared else "differs"
        print(f"{line.side:4} {line.theirs_name:34} {line.ours_name:42} {line.theirs:12.4f} {line.ours:12.4f} "
              f"{100 * line.diff:6.2f}%  {verdict}" + (f": {line.note}" if line.note else ""))
    wall, cpu = times
    print(f"   load average (1, 5, 15 min): {load[0]} before the rounds, {load[1]} after")
    ratios, cpu_ratios = [], []
    for theirs in ("msprof-analyze", "msprof-analyze overall only"):
        ratio, text = ratio_line(wall, "parity", theirs, BAR)
        ratios.append(ratio)
        print(f"   speed (wall): {text}")
    print(f"   wall samples (s): {samples_line(wall)}")
    for theirs in ("msprof-analyze", "msprof-analyze overall only"):
        ratio, text = ratio_line(cpu, "parity", theirs, BAR)
        cpu_ratios.append(ratio)
        print(f"   speed (CPU time, user + system, children included): {text}")
    print(f"   CPU samples (s): {samples_line(cpu)}")
    return all(line.ok for line in lines), ratios, cpu_ratios


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--msprof", required=True, help="the msprof-analyze command")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per pair (a first one is left out)")
    parser.add_argument("--pairs", default=",".join(GPU_TRACES), help=f"GPU traces to pair: {', '.join(GPU_TRACES)}")
    parser.add_argument("--parity-python", default=sys.executable,
                        help="the Python of the environment parity is installed in (this one by default)")
    args = parser.parse_args()
    PARITY_PYTHON[0] = args.parity_python
    msprof_python = Path(args.msprof).resolve().parent / "python"
    print(f"# parity runs on {args.parity_python} (bare start-up {bare_start_cpu_s(args.parity_python):.3f} s CPU)"
          + (f"; msprof-analyze on {msprof_python} (bare start-up {bare_start_cpu_s(str(msprof_python)):.3f} s CPU)"
             if msprof_python.exists() else ""))
    agree, speed, cpu_speed = True, [], []
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        env = _env(tmp / "pycache")
        for name in args.pairs.split(","):
            pair = tmp / name
            pair.mkdir()
            gpu_json = pair / "gpu_trace.json"
            gpu_json.write_bytes(gzip.decompress(GPU_TRACES[name].read_bytes()))
            lines, compared = figures(args.msprof, gpu_json, pair, env)
            before = load_average()
            times = timing(args.msprof, gpu_json, pair, env, args.rounds)
            ok, ratios, cpu_ratios = report(name, GPU_TRACES[name], lines, compared, times, (before, load_average()))
            agree &= ok
            speed += ratios
            cpu_speed += cpu_ratios
    fast = min(speed) >= BAR
    print(f"figures: {'every shared figure within 1%' if agree else 'a shared figure beyond 1%'}; "
          f"speed: lowest wall ratio {min(speed):.2f}x ({'meets' if fast else 'BELOW'} the {BAR:g}x bar), "
          f"lowest CPU-time ratio {min(cpu_speed):.2f}x ({'meets' if min(cpu_speed) >= BAR else 'BELOW'} the bar); "
          f"load average at the end {load_average()}")
    return 0 if agree and fast else 1


if __name__ == "__main__":
    sys.exit(main())
