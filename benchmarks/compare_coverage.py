"""How often a comparison of identical runs says "no difference measured", as it should.

Makes ``--runs`` identical quick CPU runs (``parity run --repeat``: GEMM on three small shapes,
the bandwidth sweep from 4 KiB to 64 KiB and the latency chase to 64 KiB, whose slope is made of
two chains' medians, small budgets), then compares random disjoint
groups of 3 against 3 (``--splits`` times, seeded) and, as a drift check, consecutive groups of
3 in the order they ran. Nothing differs between the runs, so every 95% CI should hold 1: it
prints the share of per-case CIs, of median CIs and of suite-figure CIs that do (bar: 95%), and
checks that each CI holding 1 is worded "no difference measured" and that no claim calls such a
ratio a speed-up. Last it compares single runs (1 against 1) and checks that the output says the
CI is within-run only (their coverage is printed for information: within-run CIs ignore
run-to-run variation, which is what the between-run CI fixes).

    python benchmarks/compare_coverage.py                      # makes 12 runs (~4 min here)
    python benchmarks/compare_coverage.py --db cov.sqlite --reuse --splits 60
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

BAR = 0.95
SUITE_SETTINGS = ("--suite", "gemm,membw,latency", "--set", "gemm.ceiling_budget_s=0.2", "--set", "gemm.budget_s=0.01",
                  "--set", "gemm.warmup_s=0.002", "--set", "membw.min_bytes=4096", "--set", "membw.max_bytes=65536",
                  "--set", "membw.budget_s=0.005", "--set", "membw.warmup_s=0.002", "--set", "latency.max_bytes=65536",
                  "--set", "latency.pages=base", "--set", "latency.per_octave=1")


def make_runs(db: Path, runs: int, folder: Path) -> list[str]:
    """``runs`` identical quick CPU runs of one repeat group; their ids in the order they ran."""
    shapes = folder / "shapes.csv"
    shapes.write_text("32,32,32\n64,64,64\n128,128,128\n")
    out = folder / "runs.json"
    command = [sys.executable, "-m", "parity", "run", "--quick", "--device", "cpu", *SUITE_SETTINGS,
               "--set", f"gemm.shapes={shapes}", "--repeat", str(runs), "--label", "identical", "--no-report",
               "--db", str(db), "--json", str(out)]
    done = subprocess.run(command, capture_output=True, text=True)
    if not out.exists():
        raise SystemExit(f"parity run failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return [r["run_id"] for r in json.loads(out.read_text())["runs"]]


def stored_runs(db: Path) -> list[str]:
    """The runs of the newest repeat group in ``db``, oldest first."""
    from parity.compare.sides import group_runs
    from parity.store import Store

    with Store.open(db, read_only=True) as store:
        return group_runs(store, "group:latest")


def _holds(ci: Any) -> bool:
    return bool(ci) and ci[0] <= 1.0 <= ci[1]


class Tally:
    """CIs counted by level: how many, how many hold 1, how many are worded wrongly."""

    def __init__(self) -> None:
        self.total: dict[str, int] = {}
        self.held: dict[str, int] = {}
        self.wording_errors: list[str] = []
        self.kinds: set[str] = set()
        self.misses: dict[str, int] = {}
        self.widths: dict[str, list[float]] = {}
        self.suites: dict[str, list[int]] = {}  # per suite, case CIs: [held, total]

    def add(self, doc: dict[str, Any]) -> None:
        for record in doc["ratios"]:
            if record["ci95"] is None or record["ratio"] is None:
                continue
            level = record["level"]
            self.total[level] = self.total.get(level, 0) + 1
            held = _holds(record["ci95"])
            if level == "case":
                counts = self.suites.setdefault(record["suite"], [0, 0])
                counts[0] += held
                counts[1] += 1
            self.widths.setdefault(level, []).append(record["ci95"][1] / record["ci95"][0])
            self.held[level] = self.held.get(level, 0) + held
            self.kinds.add(record["ci_kind"])
            if not held:
                name = f"{record['suite']}/{record['name']}"
                self.misses[name] = self.misses.get(name, 0) + 1
            if held and record["verdict"] != "no difference measured":
                self.wording_errors.append(f"{record['name']}: {record['verdict']}")
        for row in doc["cases"]:
            if _holds(row.get("ratio_ci95")) and row.get("verdict") != "no difference measured":
                self.wording_errors.append(f"case {row['key']}: {row.get('verdict')}")
        for figure in doc["summary"]:
            if figure["name"].startswith("compare.") and _holds(figure.get("ci95")):
                if "no difference measured" not in figure.get("note", ""):
                    self.wording_errors.append(f"figure {figure['name']}: note {figure.get('note')!r}")
        for claim in doc["claims"]:
            if "no difference measured" not in claim and " ran " in claim and "(no CI)" not in claim:
                self.check_claim(claim, doc)

    def check_claim(self, claim: str, doc: dict[str, Any]) -> None:
        """A claim worded as a speed-up must come from a median whose CI excludes 1."""
        for figure in doc["summary"]:
            if figure["name"].startswith("compare.") and _holds(figure.get("ci95")):
                cases = figure["scope"].get("cases")
                if f"these {cases} " in claim and figure["scope"].get("subset", "") in claim + "all joined":
                    self.wording_errors.append(f"claim worded as a difference: {claim[:90]}")
                    return

    def lines(self, title: str) -> list[str]:
        out = [title]
        for level in ("case", "summary", "figure"):
            n = self.total.get(level, 0)
            if n:
                share = self.held[level] / n
                verdict = "meets" if share >= BAR else "BELOW"
                width = float(np.median(self.widths[level]))
                out.append(f"  {level:8s} CIs holding 1: {self.held[level]}/{n} = {share:.1%} ({verdict} the 95% bar); "
                           f"median CI high/low {width:.3g}")
        n_all = sum(self.total.values())
        if n_all:
            share = sum(self.held.values()) / n_all
            out.append(f"  all      CIs holding 1: {sum(self.held.values())}/{n_all} = {share:.1%} "
                       f"({'meets' if share >= BAR else 'BELOW'} the 95% bar)")
        if self.suites:
            out.append("  case CIs holding 1 by suite: " + ", ".join(
                f"{suite} {held}/{total} = {held / total:.1%}" for suite, (held, total) in sorted(self.suites.items())))
        out.append(f"  CI kinds stated: {', '.join(sorted(self.kinds)) or 'none'}")
        worst = sorted(self.misses.items(), key=lambda kv: -kv[1])[:5]
        if worst:
            out.append("  most missed: " + ", ".join(f"{name} x{count}" for name, count in worst))
        out.append(f"  wording errors: {len(self.wording_errors)}"
                   + (f" (first: {self.wording_errors[0]})" if self.wording_errors else ""))
        return out


def compare_all(db: Path, pairs: Iterable[tuple[list[str], list[str]]]) -> tuple[Tally, list[dict[str, Any]], float]:
    """Every pair compared in this process; the tally, the documents and the seconds per compare."""
    from parity.compare import compare_runs
    from parity.store import Store

    tally, docs, seconds = Tally(), [], []
    with Store.open(db, read_only=True) as store:
        for a, b in pairs:
            begin = time.perf_counter()
            doc = compare_runs(store, [",".join(a), ",".join(b)]).to_dict()
            seconds.append(time.perf_counter() - begin)
            tally.add(doc)
            docs.append(doc)
    return tally, docs, float(np.median(seconds)) if seconds else 0.0


def random_splits(ids: list[str], count: int, size: int, seed: int) -> list[tuple[list[str], list[str]]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        picked = rng.permutation(len(ids))[:2 * size]
        out.append(([ids[i] for i in picked[:size]], [ids[i] for i in picked[size:]]))
    return out


def within_run_check(db: Path, ids: list[str]) -> list[str]:
    """1 against 1: the output must say the CI is within-run only (JSON, notes, claims, text)."""
    pairs = [([ids[i]], [ids[i + 1]]) for i in range(0, len(ids) - 1, 2)]
    tally, docs, _ = compare_all(db, pairs)
    said = all(d["ci_kind"] == "within-run only" and any("within-run only" in n for n in d["notes"])
               and all("within-run CI only" in c or "(no CI)" in c for c in d["claims"]) for d in docs)
    result = subprocess.run([sys.executable, "-m", "parity", "compare", ids[0], ids[1], "--db", str(db)],
                            capture_output=True, text=True)
    in_text = "within-run" in result.stdout
    lines = tally.lines(f"1 run against 1 ({len(pairs)} comparisons; within-run CIs, for information)")
    lines.append(f"  output says within-run only: {'yes' if said and in_text else 'NO'} "
                 f"(JSON ci_kind, notes and every claim: {said}; terminal text: {in_text})")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     epilog="example: python benchmarks/compare_coverage.py --runs 12 --splits 40")
    parser.add_argument("--runs", type=int, default=12, help="identical runs to make (at least 6)")
    parser.add_argument("--splits", type=int, default=40, help="random 3-against-3 comparisons")
    parser.add_argument("--size", type=int, default=3, help="runs per side")
    parser.add_argument("--db", type=Path, help="store to use (default: a temporary one)")
    parser.add_argument("--reuse", action="store_true", help="compare the newest repeat group already in --db")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="parity-coverage-"))
    db = args.db or folder / "coverage.sqlite"
    begin = time.perf_counter()
    ids = stored_runs(db) if args.reuse else make_runs(db, args.runs, folder)
    made_s = time.perf_counter() - begin
    if len(ids) < 2 * args.size:
        raise SystemExit(f"need at least {2 * args.size} runs, have {len(ids)}")
    lines = [f"command: python benchmarks/compare_coverage.py {' '.join(argv if argv is not None else sys.argv[1:])}",
             f"runs made with: parity run --quick --device cpu {' '.join(SUITE_SETTINGS)} --set gemm.shapes=FILE "
             "(3 shapes: 32, 64, 128 cubed) --repeat N --label identical --no-report",
             f"compare coverage: {len(ids)} identical quick CPU runs (gemm on 3 small shapes, membw 4 KiB..64 KiB, latency to 64 KiB), "
             f"{'reused' if args.reuse else f'made in {made_s:.0f} s'}; store {db}"]
    tally, _, per_compare = compare_all(db, random_splits(ids, args.splits, args.size, args.seed))
    lines += tally.lines(f"{args.size} runs against {args.size}, {args.splits} random disjoint splits "
                         f"(seed {args.seed}; {per_compare:.2f} s per compare)")
    ordered = [(ids[i:i + args.size], ids[i + args.size:i + 2 * args.size])
               for i in range(0, len(ids) - 2 * args.size + 1, args.size)]
    drift, _, _ = compare_all(db, ordered)
    lines += drift.lines(f"{args.size} runs against the next {args.size}, in the order they ran "
                         f"({len(ordered)} comparisons; for information: runs made back to back share the "
                         "machine's state of the moment, so drift over time shows here)")
    lines += within_run_check(db, ids)
    ok = (sum(tally.held.values()) >= BAR * sum(tally.total.values())
          and all(tally.held.get(k, 0) >= BAR * n for k, n in tally.total.items()) and not tally.wording_errors)
    lines.append(f"verdict: {'PASS' if ok else 'FAIL'} (every level of between-run CI holds 1 in at least 95% "
                 "of comparisons of identical runs, worded 'no difference measured')")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
