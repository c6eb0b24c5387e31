"""Per pair of a kept what-if validation run: replay error against the run-queue share."""
import json, sys, statistics
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import whatif_scoring as s
from parity.trace import load_trace
from parity.trace.whatif import parse_scale
from parity.trace.whatif.timeline import build_timeline
from parity.metrics.whatif import prediction_error, run_queue_share

rows = []
for sub in sorted(Path(sys.argv[1]).iterdir()):
    if not sub.is_dir() or not sub.name.startswith(sys.argv[2]):
        continue
    trace = sorted(sub.glob("cpu_*_*.json"))[0]
    base, fast = trace.stem.split("_")[1:3]
    waits = {w["profiler_step"]: w for w in json.loads((sub / "run_queue.json").read_text())}
    table = load_trace([trace])
    pairs = s.adjacent_pairs(s.tagged_steps(table), base, fast)
    tl = build_timeline(table)
    ks = [s.matrix_ns(tl, *b[:2]) / s.matrix_ns(tl, *f[:2]) for b, f in pairs]
    k = statistics.median(ks)
    pred = s.predict_steps(table, tl, [b[:2] for b, _ in pairs], [parse_scale(f"matrix={k!r}")])
    for (b, f), p in zip(pairs, pred):
        def share(step):
            w = waits.get(step[3]) or {}
            return max(run_queue_share(w.get(r + "_wait_ns") or 0, w["wall_ns"]) for r in ("main", "worker")) if w else None
        rows.append((sub.name, prediction_error(p["replay"], f[1] - f[0]), max(share(b) or 0, share(f) or 0),
                     (b[1] - b[0]) / 1e6, (f[1] - f[0]) / 1e6))
for lo, hi in ((0, 0.005), (0.005, 0.02), (0.02, 0.05), (0.05, 1)):
    sel = [r[1] for r in rows if lo <= r[2] < hi]
    if sel:
        print(f"run-queue share {lo:.1%}-{hi:.1%}: {len(sel):3d} pairs, median replay error {statistics.median(sel):+.2%}")
