"""The link bars of the multi-node work, in full, on two namespace nodes of two ranks each.

With the link between the nodes shaped to 1 Gbit/s (tc tbf, ``tests/multinode/netns.py``):

1. ``parity comm preflight`` names that link (and the figure of every link);
2. ``parity comm collectives`` all_reduce per dimension, 64 KiB to 64 MiB: the inter-node busbw
   at 16 MiB against the shaped rate's bus equivalent (``R/g``: the ``g`` inter-node groups
   share the one link; definitions.md, Link preflight), and the intra-node figure beside it;
3. the α-β fit of the inter-node all_reduce from the sizes up to 4 MiB, and its errors at
   16 MiB and 64 MiB;
4. ``--duration 60`` at 1 MiB on the inter dimension, the link reshaped to 250 Mbit/s after
   ``--change-after`` wall seconds: the drift figures and every window.

Writes a text report (and the stored runs' ids) to ``--out``. Needs root and iproute2. About
four minutes.

    python benchmarks/multinode_links.py --out results/cpu-amd-epyc-2026-12-03/multinode_links.txt
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "multinode"))

from links_launch import launch  # noqa: E402
from netns import make_nodes  # noqa: E402

from parity.export.points import stored_points  # noqa: E402
from parity.metrics.alphabeta import check_predictions, fit_alpha_beta  # noqa: E402
from parity.store import Store  # noqa: E402

RATE_BIT = 1e9
MIB = 2**20


def _run(nodes, args: list[str], db: Path, name: str) -> dict:
    out = db.parent / f"{name}.json"
    done = launch(nodes, [*args, "--rank-timeout", "120"], db=db, json_path=out, timeout_s=600)
    if done.returncode != 0:
        raise SystemExit(f"{name} failed:\nnode 0:\n{done.stdout[-3000:]}\nother nodes:\n{done.stderr[-3000:]}")
    return json.loads(out.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--change-after", type=float, default=50.0, help="wall s after launch to reshape")
    args = parser.parse_args()
    lines: list[str] = []
    say = lines.append
    with tempfile.TemporaryDirectory() as folder, make_nodes(2, rate_bit=RATE_BIT) as nodes:
        db = Path(folder) / "runs.sqlite"
        rate = RATE_BIT / 8
        say(f"two nodes x two ranks, inter-node link shaped to {RATE_BIT:.0e} bit/s = {rate / 1e6:.1f} MB/s each way")
        pf = _run(nodes, ["preflight", "--budget", "6", "--size-bytes", "2MiB"], db, "preflight")
        for link in pf["summary"]["links"]:
            say(f"preflight link {link['link']} ({link['scope']}): {link['bandwidth_bps'] / 1e6:.1f} MB/s, "
                f"{link['latency_s'] * 1e6:.0f} us{' SLOW' if link['slow'] else ''}")
        say(f"preflight names: {pf['summary']['slow']}")
        sweep = _run(nodes, ["collectives", "--ops", "all_reduce", "--dimensions", "intra,inter", "--min-bytes",
                             "64KiB", "--max-bytes", "64MiB", "--factor", "4", "--iterations", "5"], db, "sweep")
        rows = {(r.get("dimension"), r["size_bytes"]): r for r in sweep["summary"]["rows"]}
        expected = rate / 2
        for dim in ("inter", "intra"):
            bw = rows[(dim, 16 * MIB)]["busbw_bps"]
            say(f"all_reduce 16 MiB {dim}: busbw {bw / 1e6:.1f} MB/s, {bw / expected - 1:+.1%} against the shaped "
                f"rate's bus equivalent R/2 = {expected / 1e6:.1f} MB/s")
        with Store.open(db) as store:
            _, points = stored_points(store, [sweep["run_id"]])
            recorded = store.get_run(sweep["run_id"]).provenance.get("preflight", {}).get("run_id")
        say(f"the sweep records preflight {recorded} (the preflight run is {pf['run_id']})")
        inter = [p for p in points if p.op == "all_reduce" and p.dimension == "inter"]
        fit = fit_alpha_beta([p for p in inter if p.size_bytes <= 4 * MIB])
        check = check_predictions(fit, [p for p in inter if p.size_bytes > 4 * MIB], tolerance=0.15)
        say(f"fit <= 4 MiB: alpha {fit.alpha_s * 1e6:.0f} us, beta {fit.beta_bps / 1e6:.1f} MB/s "
            f"(95% CI {fit.beta_ci_bps[0] / 1e6:.1f}-{fit.beta_ci_bps[1] / 1e6:.1f})" if fit.beta_ci_bps else "")
        for p in check.predictions:
            say(f"  predicts {p.size_bytes / MIB:.0f} MiB: {p.predicted_s * 1e3:.1f} ms, measured "
                f"{p.measured_s * 1e3:.1f} ms, error {p.relative_error:+.1%}")
        say(f"  within 15%: {check.within}")
        change = threading.Timer(args.change_after, nodes.shape, args=(RATE_BIT / 4,))
        start = time.monotonic()
        change.start()
        try:
            duration = _run(nodes, ["collectives", "--ops", "all_reduce", "--dimensions", "inter", "--duration",
                                    str(args.duration), "--window", "5", "--size-bytes", "1MiB"], db, "duration")
        finally:
            change.cancel()
        say(f"--duration {args.duration:g} (the whole command {time.monotonic() - start:.0f} s wall; reshaped to 250 Mbit/s at "
            f"{args.change_after:g} s wall)")
        for drift in duration["summary"]["drift"]:
            say(f"  drift_spread {drift['drift_spread']:.3f}, drift_last_first {drift['drift_last_first']:+.3f}, "
                f"{drift['iterations']} iterations in {drift['duration_s']:.1f} s of the case's wall clock "
                f"({drift.get('timed_s', drift['duration_s']):.1f} s timed; windows by {drift.get('clock', 'timed')} clock)")
            for w in drift["windows"]:
                say(f"    window at {w['start_s']:5.1f} s: {w['iterations']:4d} it, median "
                    f"{w['median_bps'] / 1e6:6.1f} MB/s, p1 {w['p1_bps'] / 1e6:6.1f}, p99 {w['p99_bps'] / 1e6:6.1f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
