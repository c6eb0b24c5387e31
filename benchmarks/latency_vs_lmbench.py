"""Pointer-chase latency: parity's latency suite against an lmbench-style C chase, same run.

Compiles ``benchmarks/ref/lat_mem_rd.c`` (the lat_mem_rd method: a random ring at cache-line
stride, ``p = *p`` unrolled, total time over loads). Both sides chase the same working set at
the same 64 B stride with the same page size, pinned to the same CPU (a virtual machine's CPUs
can differ: one may share its physical core's caches with another tenant).

The comparison is paired and interleaved: every round measures, for each page size and each
point (an L1-resident, an L2-resident and a DRAM-sized working set, 256 MiB by default, well
past the last-level cache), parity and then C or C and then parity (alternating), back to back.
Memory latency on a shared machine drifts by tens of percent within minutes (other tenants, the
kernel's choice of pages), so a figure measured minutes apart from its reference says little;
a pair measured seconds apart shares the drift, and the median of the per-round ratios cancels
most of it. The page size is checked on both sides, not assumed: parity reads its buffer's
``AnonHugePages`` from ``/proc/self/smaps``, the C program prints its own; a round where either
side did not get the page size asked for (THP not granted, or huge pages despite
MADV_NOHUGEPAGE) is reported and left out of the comparison.

Each side's per-round figure comes in two estimators: the median (parity: slope between the two
chains' medians; C: median over repetitions) and the minimum (slope between minima; minimum over
repetitions). Printed per point and estimator: the median over rounds of each side, the median of
the paired ratios parity/C with their range, and whether that median ratio is within 10%.

With ``--quick-bar`` it checks the issue's bar instead: ``parity latency --quick --json`` (the
command as a user runs it, in its own process, pinned to the same CPU) and the C chase at 1 GiB
for each page size just before and just after it (their mean is the round's reference),
``--rounds`` times. Per page
size it prints parity's memory plateau (the last level named memory on that page size's curve,
``DRAM+page-walks`` on 4 KiB pages) beside
the C figure (median and minimum over repetitions), the median over rounds of the paired ratios
parity/C, and whether it is within 15% of the C minimum (parity's default estimator is the slope
between minima). A round whose curve names no memory level fails the bar.

With ``--plateaus`` it also sweeps the size curve for each page size with both programs,
interleaved size by size, runs parity's plateau detection on both curves, and compares the
detected plateaus with the cache sizes ``lscpu`` reports (the bar: within a factor of two; judged
on the curve parity names cache sizes from, the huge-page one where THP is available, and failed
when a reported level has no plateau).

    python benchmarks/latency_vs_lmbench.py --rounds 9 --plateaus
    python benchmarks/latency_vs_lmbench.py --quick-bar --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
BAR = 0.10
QUICK_BAR = 0.15  # parity latency --quick's memory plateau against the C chase at 1 GiB
BAR_BYTES = 1024 * 1024 * 1024
KIB, MIB = 1024, 1024 * 1024
# Loads per timed chain of the C program: a few milliseconds at each level's latency, like
# parity's chains, so both sides see the same odds of being preempted on a shared machine.
C_LOADS = {"L1": 1 << 22, "L2": 1 << 20, "DRAM": 1 << 15}
HUGE_SHARE_OK = 0.9  # THP counts as granted when at least this share of the buffer is huge


def compile_reference() -> Path:
    OUT.mkdir(exist_ok=True)
    exe = OUT / "lat_mem_rd"
    subprocess.run(["gcc", "-O3", "-march=native", "-o", str(exe), str(HERE / "ref" / "lat_mem_rd.c")], check=True)
    return exe


def run_reference(exe: Path, *, size: int, page: str, loads: int, reps: int) -> dict[str, float]:
    """The C chase: median and minimum ns per load over ``reps``, and its huge-page share."""
    proc = subprocess.run([str(exe), str(size), "64", page, str(loads), str(reps)], check=True,
                          capture_output=True, text=True)
    values = [float(v) for v in proc.stdout.split()]
    huge = next(int(line.split()[1]) for line in proc.stderr.splitlines() if line.startswith("huge_bytes"))
    return {"median": statistics.median(values), "min": min(values), "huge": min(1.0, max(0, huge) / size)}


def run_parity(*, size: int, page: str) -> dict[str, float]:
    """parity's latency suite on one size case: both estimators and its huge-page share."""
    from parity.families.latency.options import LatencyOptions
    from parity.families.latency.suite import LatencySuite
    from parity.harness.suite import CaseSpec
    from parity.device import get_device

    case = CaseSpec(suite="latency", key=f"size/{page}/{size}", params={
        "curve": "size", "page": page, "working_set_bytes": size, "blocks": 1, "stride_bytes": 64,
        "quick": False, "device": "cpu"})
    result = LatencySuite().measure(case, device=get_device("cpu"), options=LatencyOptions())
    if not result.ok:
        raise SystemExit(f"parity {case.key} failed: {result.error or result.check}")
    m = result.metrics
    return {"median": m["ns_per_load"], "min": m["ns_per_load_min"], "huge": m["huge_page_share"] or 0.0}


def page_as_asked(page: str, huge: float) -> bool:
    """True when the buffer got the page size asked for: huge pages for thp, none for base."""
    return huge >= HUGE_SHARE_OK if page == "thp" else huge == 0.0


def measure_pair(exe: Path, *, page: str, level: str, size: int, reps: int, parity_first: bool) -> dict:
    """One round of one point: parity and C back to back, in the given order."""
    pair: dict[str, dict[str, float]] = {}
    for side in (("parity", "c") if parity_first else ("c", "parity")):
        if side == "parity":
            pair["parity"] = run_parity(size=size, page=page)
        else:
            pair["c"] = run_reference(exe, size=size, page=page, loads=C_LOADS[level], reps=reps)
    return pair


def median_ratio_within(ratios: list[float], bar: float) -> tuple[float, bool]:
    """The median of paired ratios parity/C and whether it is within ``bar`` of 1."""
    ratio = statistics.median(ratios)
    return ratio, abs(ratio - 1) <= bar


def compare(exe: Path, *, rounds: int, reps: int, pages: list[str], points: dict[str, int]) -> bool:
    pairs: dict[tuple[str, str], list[dict]] = {(pg, lv): [] for pg in pages for lv in points}
    for r in range(rounds):
        for page in pages:
            for level, size in points.items():
                pair = measure_pair(exe, page=page, level=level, size=size, reps=reps, parity_first=r % 2 == 0)
                pairs[(page, level)].append(pair)
                p, c = pair["parity"], pair["c"]
                print(f"round {r + 1:2}/{rounds} {page:4} {level:4} parity {p['median']:8.2f} ({p['huge']:.0%} huge)"
                      f"  C {c['median']:8.2f} ({c['huge']:.0%} huge)  ratio {p['median'] / c['median']:.3f}", flush=True)
    print(f"\n{'pages':5} {'level':5} {'size':>10} {'stat':6} {'rounds':>6} {'parity ns':>10} {'C ns':>9}"
          f" {'ratio':>7} {'ratio range':>13}  within {BAR:.0%}")
    ok = True
    for (page, level), rows in pairs.items():
        usable = [x for x in rows if page_as_asked(page, x["parity"]["huge"]) and page_as_asked(page, x["c"]["huge"])]
        if len(usable) < len(rows):
            print(f"{page:5} {level:5} {len(rows) - len(usable)} of {len(rows)} rounds left out: "
                  f"a side did not get {page} pages")
        if not usable:
            ok = False
            continue
        for stat in ("median", "min"):
            ratios = [x["parity"][stat] / x["c"][stat] for x in usable]
            ratio, good = median_ratio_within(ratios, BAR)
            ok &= good
            print(f"{page:5} {level:5} {points[level]:>10} {stat:6} {len(usable):>6}"
                  f" {statistics.median(x['parity'][stat] for x in usable):10.2f}"
                  f" {statistics.median(x['c'][stat] for x in usable):9.2f} {ratio:7.3f}"
                  f" {min(ratios):6.3f}-{max(ratios):5.3f}  {'yes' if good else 'NO'}")
    return ok


def lscpu_caches() -> dict[str, int]:
    out = subprocess.run(["lscpu", "-B", "-C=NAME,ONE-SIZE"], check=True, capture_output=True, text=True).stdout
    sizes = {}
    for line in out.splitlines()[1:]:
        name, size = line.split()
        if name != "L1i":
            sizes[name] = int(size)
    return sizes


def reference_row(case, c: dict[str, float]):
    """The C figure of one size case as a latency CaseResult, so parity's summary can read it."""
    from parity.device.pages import page_label
    from parity.model.result import CaseResult

    return CaseResult(suite="latency", key=case.key, params=dict(case.params), check={"passed": True},
                      metrics={"ns_per_load": c["median"], "ns_per_load_min": c["min"],
                               "huge_page_share": c["huge"], "page_label": page_label(case.params["page"])})


def _kib(n: int | None) -> str:
    return "-" if n is None else str(n // KIB)


def check_plateaus(exe: Path, *, pages: list[str], max_bytes: int, per_octave: int, estimator: str) -> bool:
    from parity.families.latency.options import LatencyOptions
    from parity.families.latency.suite import LatencySuite
    from parity.device import get_device

    cpu = get_device("cpu")
    suite = LatencySuite()
    options = LatencyOptions(pages=tuple(pages), max_bytes=max_bytes, per_octave=per_octave)
    cases = [c for c in suite.cases(device=cpu, quick=False, options=options) if c.params["curve"] == "size"]
    ours, theirs = [], []
    for k, case in enumerate(cases):  # size by size, alternating which side goes first
        size, page = case.params["working_set_bytes"], case.params["page"]
        for side in (("parity", "c") if k % 2 == 0 else ("c", "parity")):
            if side == "parity":
                ours.append(suite.measure(case, device=cpu, options=LatencyOptions()))
            else:
                loads = max(1 << 14, int(4e6 / max(1.0, ours[-1].metrics["ns_per_load_min"]))) if ours else 1 << 20
                theirs.append(reference_row(case, run_reference(exe, size=size, page=page, loads=loads, reps=11)))
        print(f"{case.key} done", flush=True)
    reported = lscpu_caches()
    print(f"\nlscpu: {reported}")
    ok = True
    for name, rows in (("parity", ours), ("C reference", theirs)):
        summary = suite.summarize(rows, options=LatencyOptions(estimator=estimator)).to_dict()
        print(f"\n{name} ({estimator} estimator); plateaus named from the {summary.get('plateaus_page')} curve")
        for curve in summary["size_curves"]:
            print(f"{curve['page']} pages: " + ", ".join(
                f"{p['working_set_bytes'] / MIB:.3g}M {p['latency_s'] * 1e9:.1f}" for p in curve["points"]))
            judged = curve["page"] == summary.get("plateaus_page")
            for p in curve["plateaus"]:
                ratio = p.get("size_ratio")
                good = ratio is None or 0.5 <= ratio <= 2.0
                ok &= good or not judged
                print(f"  {p['level']:18} {p['latency_s'] * 1e9:8.1f} ns  {p['start_bytes'] // KIB:>8} .. "
                      f"{p['size_bytes'] // KIB:>8} KiB, capacity {_kib(p.get('capacity_bytes')):>8} KiB, "
                      f"reported {p.get('reported_bytes') and p['reported_bytes'] // KIB} KiB"
                      f"  ratio {'-' if ratio is None else f'{ratio:.2f}'}  {'ok' if good else 'OUTSIDE 2x'}")
            found = {p["level"] for p in curve["plateaus"]}
            missing = [c["level"] for c in curve["reported_caches"] if c["level"] not in found]
            ok &= not (judged and missing)
            if missing:
                print(f"  no plateau for {', '.join(missing)}")
        for f in summary.get("findings", []):
            print(f"  finding {f['code']}: {f['message']} ({f['hint']})")
    return ok


def run_quick_command(out: Path) -> dict[str, float | None]:
    """``parity latency --quick --json out`` in its own process: each page size's memory latency."""
    subprocess.run([sys.executable, "-m", "parity", "latency", "--quick", "--json", str(out),
                    "--db", str(OUT / "quick-bar.sqlite")], check=True, stdout=subprocess.DEVNULL)
    data = json.loads(out.read_text())["summary"]  # the family command's JSON nests the summary
    memory = {}
    for curve in data["size_curves"]:
        # The last memory level: on 4 KiB pages it pays page walks (DRAM+page-walks), as the C
        # chase on 4 KiB pages does.
        level = next((p for p in reversed(curve["plateaus"]) if p["memory"]), None)
        memory["thp" if "THP" in curve["page"] else "base"] = level and level["latency_s"] * 1e9  # ns
    return memory


def quick_bar(exe: Path, *, rounds: int, reps: int, pages: list[str]) -> bool:
    """The issue's bar: the quick command's memory plateau within 15% of C at 1 GiB, per page.

    The C chase runs just before and just after each quick command, and its figure for the
    round is the mean of the two, so a drift of the machine's memory latency during the command
    (tens of percent within a minute on a shared machine) falls on both sides of the pair.
    """
    def reference() -> dict[str, dict[str, float]]:
        return {pg: run_reference(exe, size=BAR_BYTES, page=pg, loads=C_LOADS["DRAM"], reps=reps) for pg in pages}

    rows: dict[str, list[tuple[float | None, dict[str, float]]]] = {pg: [] for pg in pages}
    for r in range(rounds):
        before = reference()
        ours = run_quick_command(OUT / f"quick-bar-{r}.json")
        after = reference()
        for pg in pages:
            c = {stat: (before[pg][stat] + after[pg][stat]) / 2 for stat in ("median", "min")}
            c["huge"] = min(before[pg]["huge"], after[pg]["huge"])
            rows[pg].append((ours.get(pg), c))
            got = ours.get(pg)
            print(f"round {r + 1}/{rounds} {pg:4} parity memory {'none' if got is None else f'{got:7.1f}'} ns"
                  f"  C 1 GiB median {c['median']:7.1f} min {c['min']:7.1f}"
                  f" (before {before[pg]['min']:.1f}, after {after[pg]['min']:.1f}; {c['huge']:.0%} huge)", flush=True)
    ok = True
    print(f"\n{'pages':5} {'rounds':>6} {'parity ns':>10} {'C min':>8} {'C median':>9} {'ratio/min':>10}"
          f" {'range':>13} {'ratio/median':>13}  within {QUICK_BAR:.0%} of C min")
    for pg, pairs in rows.items():
        usable = [(p, c) for p, c in pairs if p is not None and page_as_asked(pg, c["huge"])]
        if len(usable) < len(pairs):
            print(f"{pg:5} {len(pairs) - len(usable)} of {len(pairs)} rounds named no memory level or did not get {pg} pages")
        if not usable or len(usable) < len(pairs):
            ok = False
        if not usable:
            continue
        ratios = [p / c["min"] for p, c in usable]
        ratio, good = median_ratio_within(ratios, QUICK_BAR)
        ok &= good
        print(f"{pg:5} {len(usable):>6} {statistics.median(p for p, _ in usable):10.1f}"
              f" {statistics.median(c['min'] for _, c in usable):8.1f} {statistics.median(c['median'] for _, c in usable):9.1f}"
              f" {ratio:10.3f} {min(ratios):6.3f}-{max(ratios):5.3f}"
              f" {statistics.median(p / c['median'] for p, c in usable):13.3f}  {'yes' if good else 'NO'}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--reps", type=int, default=51, help="C repetitions per round")
    parser.add_argument("--pages", default="base,thp")
    parser.add_argument("--dram-size", type=int, default=256, help="DRAM working set in MiB (both sides)")
    parser.add_argument("--levels", default="L1,L2,DRAM", help="points to compare (L1, L2, DRAM)")
    parser.add_argument("--plateaus", action="store_true", help="also compare detected plateaus with lscpu")
    parser.add_argument("--quick-bar", action="store_true",
                        help="only the bar: parity latency --quick's memory plateau against C at 1 GiB")
    parser.add_argument("--plateau-max", type=int, default=128, help="largest working set of the sweep, MiB")
    parser.add_argument("--per-octave", type=int, default=4, help="sweep points per doubling of the size")
    parser.add_argument("--estimator", choices=["min", "median"], default="min",
                        help="per-point figure of the sweep (parity latency's default: min)")
    parser.add_argument("--cpu", type=int, default=None,
                        help="pin this process and the C program (which inherits it) to one CPU; "
                             "default: the first CPU this process may use")
    args = parser.parse_args()
    allowed = sorted(os.sched_getaffinity(0))
    cpu = allowed[0] if args.cpu is None else args.cpu
    os.sched_setaffinity(0, {cpu})  # both sides then run on the same core and its caches
    print(f"pinned to CPU {cpu}", flush=True)
    pages = args.pages.split(",")
    points = {"L1": 16 * KIB, "L2": 64 * KIB, "DRAM": args.dram_size * MIB}
    points = {k: v for k, v in points.items() if k in args.levels.split(",")}
    exe = compile_reference()
    if args.quick_bar:
        return 0 if quick_bar(exe, rounds=args.rounds, reps=args.reps, pages=pages) else 1
    ok = compare(exe, rounds=args.rounds, reps=args.reps, pages=pages, points=points) if points else True
    if args.plateaus:
        ok &= check_plateaus(exe, pages=pages, max_bytes=args.plateau_max * MIB, per_octave=args.per_octave,
                             estimator=args.estimator)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
