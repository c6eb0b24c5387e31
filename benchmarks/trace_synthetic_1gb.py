"""Bar: a 1 GB Kineto trace is loaded and fully analysed in under 60 s with peak memory under 4 GB.

The trace is built from a real one (HTA's ``negative_queue_length_values_check/rank0.json.gz``
by default) replicated back to back with shifted times until the file reaches the target size:
every copy moves ``ts`` by the source's span plus a 1 ms gap, renumbers ``ProfilerStep#N`` and
offsets correlation, external and flow ids, so the result is one long, valid trace with many
steps. It is written uncompressed under a temporary folder (deleted afterwards unless
``--keep``).

The measurement runs ``load_trace`` + ``analyze`` in a child process; peak memory is the summed
resident memory of the child and its descendants, sampled every 20 ms (psutil); wall and CPU
times come from the child and ``getrusage``.

    python benchmarks/trace_synthetic_1gb.py            # 1 GB, default source
    python benchmarks/trace_synthetic_1gb.py --size-gb 0.25 --keep
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = ROOT.parent / "shared/data/traces/kineto/hta/negative_queue_length_values_check/rank0.json.gz"
TIME_BAR_S = 60.0
MEMORY_BAR_BYTES = 4 * 1024**3
_STEP = re.compile(r"^(ProfilerStep#)(\d+)$")

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from parity.trace import analyze, load_trace
table = load_trace([sys.argv[1]])
t1 = time.perf_counter()
result = analyze(table)
t2 = time.perf_counter()
first = result.first
print(json.dumps({"load_s": t1 - t0, "analyze_s": t2 - t1, "rows": len(table),
                  "device_rows": int(table.device_mask().sum()), "window": first.window.to_dict(),
                  "device_busy_us": first.device.busy_ns / 1e3, "streams": len(first.streams)}))
"""


def _load(source: Path) -> dict:
    opener = gzip.open if source.suffix == ".gz" else open
    with opener(source, "rb") as handle:
        return orjson.loads(handle.read())


def _span_us(events: list[dict]) -> tuple[float, float]:
    times = [(float(e["ts"]), float(e.get("dur", 0) or 0)) for e in events if "ts" in e]
    return min(t for t, _ in times), max(t + d for t, d in times)


def build_trace(source: Path, target: Path, size_bytes: int) -> int:
    """Write ``target`` (uncompressed JSON) of at least ``size_bytes``; returns the copy count."""
    data = _load(source)
    events = data.pop("traceEvents")
    lo, hi = _span_us(events)
    period = hi - lo + 1000.0
    steps = [int(m.group(2)) for e in events if (m := _STEP.match(str(e.get("name", ""))))]
    step_stride = (max(steps) - min(steps) + 1) if steps else 0
    ids = [int(v) for e in events for v in (e.get("id"), (e.get("args") or {}).get("correlation"))
           if isinstance(v, (int, float))]
    id_stride = (max(ids) + 1) if ids else 0
    head = orjson.dumps(data)[:-1] + b',"traceEvents":['
    written, copy = 0, 0
    with target.open("wb") as out:
        out.write(head)
        while written < size_bytes:
            chunk = orjson.dumps([_shifted(e, copy, period, step_stride, id_stride) for e in events])[1:-1]
            out.write((b"," if copy else b"") + chunk)
            written += len(chunk)
            copy += 1
        out.write(b"]}\n")
    return copy


def _shifted(event: dict, copy: int, period: float, step_stride: int, id_stride: int) -> dict:
    if copy == 0:
        return event
    e = dict(event)
    if "ts" in e and e.get("ph") != "M":
        e["ts"] = float(e["ts"]) + copy * period
    m = _STEP.match(str(e.get("name", "")))
    if m:
        e["name"] = f"{m.group(1)}{int(m.group(2)) + copy * step_stride}"
    if isinstance(e.get("id"), (int, float)):
        e["id"] = int(e["id"]) + copy * id_stride
    args = e.get("args")
    if isinstance(args, dict):
        args = dict(args)
        for key in ("correlation", "External id"):
            if isinstance(args.get(key), (int, float)):
                args[key] = int(args[key]) + copy * id_stride
        e["args"] = args
    return e


def _tree_rss(process) -> int:
    """Resident bytes of a process and all its descendants (worker processes included)."""
    import psutil

    total = 0
    for p in [process, *process.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def measure(path: Path) -> dict:
    """Run load + analyze in a child; add its wall time, CPU time and peak memory (bytes).

    Peak memory is sampled every 20 ms as the summed RSS of the child and its descendants (the
    reader may parse on several processes), and is never below the largest single process's
    peak from ``getrusage``.
    """
    import psutil

    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    watched = psutil.Process(child.pid)
    peak = 0
    while child.poll() is None:
        try:
            peak = max(peak, _tree_rss(watched))
        except psutil.Error:
            pass
        time.sleep(0.02)
    out, err = child.communicate()
    wall = time.perf_counter() - start
    if child.returncode != 0:
        raise SystemExit(f"analysis failed:\n{err[-4000:]}")
    result = json.loads(out.strip().splitlines()[-1])
    result["wall_s"] = wall
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    result["peak_rss_bytes"] = max(peak, usage.ru_maxrss * 1024)
    result["cpu_s"] = usage.ru_utime + usage.ru_stime
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--size-gb", type=float, default=1.0, help="target size in GB (10^9 bytes)")
    parser.add_argument("--keep", action="store_true", help="keep the built trace and print its path")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="parity-synthetic-"))
    target = folder / "synthetic_rank0.json"
    t0 = time.perf_counter()
    copies = build_trace(args.source, target, int(args.size_gb * 1e9))
    size = target.stat().st_size
    print(f"built {target} from {args.source.name}: {copies} copies, {size / 1e9:.3f} GB "
          f"in {time.perf_counter() - t0:.1f} s")
    try:
        r = measure(target)
    finally:
        if not args.keep:
            target.unlink(missing_ok=True)
            folder.rmdir()
    print(f"rows {r['rows']:,} (device {r['device_rows']:,}), streams {r['streams']}, "
          f"window {r['window']['source']}: {r['window']['detail']}")
    print(f"load {r['load_s']:.1f} s + analyze {r['analyze_s']:.1f} s; child wall {r['wall_s']:.1f} s "
          f"(bar < {TIME_BAR_S:.0f} s), child CPU {r['cpu_s']:.1f} s (wall above CPU: other load on the machine)")
    print(f"peak RSS (child and its workers together) {r['peak_rss_bytes'] / 1024**3:.2f} GiB "
          f"(bar < {MEMORY_BAR_BYTES / 1024**3:.0f} GiB)")
    ok = r["wall_s"] < TIME_BAR_S and r["peak_rss_bytes"] < MEMORY_BAR_BYTES
    print(f"{'PASS' if ok else 'FAIL'}: {size / 1e9:.2f} GB trace in {r['wall_s']:.1f} s, "
          f"{r['peak_rss_bytes'] / 1024**3:.2f} GiB peak")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
