"""Every figure before and after a change of the code that derives them, on the same inputs.

A refactor of the harness, the suites' summaries or the trace analysis must leave every figure
as it was. Timings move from run to run, so the microbenchmark figures are compared on the same
measured cases: one quick CPU run (GEMM, membw, latency) is measured with the code in this
checkout, and its stored cases are summarised twice, by this checkout and by the ``--base``
revision (taken with ``git archive`` into a temporary folder and imported from there in a
process of its own). Trace figures are compared by running ``parity trace analyze`` of each
revision, as a whole command, on every trace in ``../shared/data/traces``.

Each summary and analysis is flattened to ``path -> value``; numbers must agree within 1e-9
relative, everything else exactly. Keys that exist on one side only are listed apart from
changed values (a new figure is not a changed one). Exit status 1 when any value changed.

    python benchmarks/figures_before_after.py --base 37cd420
    python benchmarks/figures_before_after.py --base 37cd420 --skip-run --json out/figures.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT.parent / "shared" / "data" / "traces"
RUN_SETTINGS = ["--set", "gemm.ceiling_budget_s=5", "--set", "membw.max_bytes=16777216",
                "--set", "latency.pages=base"]
# Run in a revision's own process on a run JSON (``sys.argv[1]``): each suite's summary of the
# stored cases through that revision's suite registry and options (``parity.harness`` from
# d985901 on, ``parity.bench`` before), so ``--base`` may name either layout.
SUMMARISE = r"""
import importlib, json, sys
from parity.model.result import CaseResult

def first(*names):
    for name in names:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError:
            continue
    raise SystemExit(f"none of {names} in this revision")

registry = first("parity.harness.registry", "parity.bench.registry")
options = first("parity.harness.options", "parity.bench.options")
doc = json.load(open(sys.argv[1]))
given = doc["run"]["config"].get("options", {})
by_suite = {}
for c in doc["cases"]:
    by_suite.setdefault(c["suite"], []).append(CaseResult.from_dict(c))
summaries = {}
for name, cases in by_suite.items():
    suite = registry.get_suite(name)
    typed = options.parse_options(suite.options_type, given.get(name, {}), suite=name)
    summaries[name] = (suite, suite.summarize(cases, options=typed))
"""
# The base's summaries, a typed summary as its ``to_dict()``.
OLD_SUMMARY = SUMMARISE + r"""
out = {name: s.to_dict() if hasattr(s, "to_dict") else dict(s) for name, (_, s) in summaries.items()}
json.dump(out, sys.stdout, default=str)
"""


def flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(path, leaf)`` for every leaf of a JSON document; list items by index."""
    if isinstance(value, dict):
        for key in sorted(value):
            yield from flatten(value[key], f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from flatten(item, f"{prefix}[{i}]")
    else:
        yield prefix, value


def same(a: Any, b: Any, *, rel: float = 1e-9) -> bool:
    """Equal, numbers within ``rel`` relative (NaN equals NaN)."""
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return a == b
    if math.isnan(a) and math.isnan(b):
        return True
    return math.isclose(a, b, rel_tol=rel, abs_tol=0.0) or a == b


def compare(before: Any, after: Any, *, ignore: tuple[str, ...] = ()) -> dict[str, Any]:
    """Changed values, and keys on one side only, between two documents."""
    old = {k: v for k, v in flatten(before) if not k.startswith(ignore)}
    new = {k: v for k, v in flatten(after) if not k.startswith(ignore)}
    changed = {k: [old[k], new[k]] for k in old.keys() & new.keys() if not same(old[k], new[k])}
    return {"compared": len(old.keys() & new.keys()), "changed": dict(sorted(changed.items())),
            "only_before": sorted(old.keys() - new.keys()), "only_after": sorted(new.keys() - old.keys())}


def base_tree(rev: str, into: Path) -> Path:
    """The ``src`` folder of ``rev``, unpacked under ``into``."""
    archive = into / "base.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", "-o", str(archive), rev, "src"], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def _env(src: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    return env


def quick_run(out: Path) -> Path:
    """One quick CPU run of the three kernel suites with this checkout; its JSON document."""
    doc = out / "run.json"
    command = [sys.executable, "-m", "parity", "run", "--quick", "--device", "cpu", "--suite", "gemm,membw,latency",
               *RUN_SETTINGS, "--db", str(out / "run.sqlite"), "--json", str(doc)]
    print("measuring:", " ".join(command[2:]), file=sys.stderr)
    subprocess.run(command, env=_env(ROOT / "src"), check=False)
    return doc


def suite_figures(doc_path: Path, base_src: Path) -> dict[str, Any]:
    """Each suite's summary from this checkout (as stored) against the base's, same cases."""
    doc = json.loads(doc_path.read_text())
    new = {s["suite"]: s["summary"] for s in doc["suites"]}
    done = subprocess.run([sys.executable, "-c", OLD_SUMMARY, str(doc_path)], env=_env(base_src),
                          capture_output=True, text=True, check=True)
    old = json.loads(done.stdout)
    return {suite: compare(old[suite], json.loads(json.dumps(new[suite], default=str))) for suite in old}


def trace_inputs() -> list[Path]:
    """What ``parity trace analyze`` takes in the shared data: Kineto files, Nsight exports,
    Ascend rank folders and the database export."""
    found = sorted((TRACES / "kineto").rglob("*.json*")) + sorted((TRACES / "nsys").rglob("*.sqlite"))
    found += sorted(p for p in (TRACES / "ascend").rglob("*_ascend_pt") if p.is_dir())
    found += sorted(p for p in (TRACES / "ascend" / "msinsight" / "db").glob("level*") if p.is_dir())
    return found


def analyze(path: Path, src: Path, out: Path) -> Any:
    """``parity trace analyze PATH --json`` of the code in ``src``: the document, or the error line."""
    target = out / "analysis.json"
    target.unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "-m", "parity", "trace", "analyze", str(path), "--json", str(target)],
                          env=_env(src), capture_output=True, text=True, timeout=600)
    if done.returncode != 0 or not target.exists():
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(target.read_text())


def trace_figures(base_src: Path, out: Path) -> dict[str, Any]:
    results = {}
    for path in trace_inputs():
        name = str(path.relative_to(TRACES))
        before, after = analyze(path, base_src, out), analyze(path, ROOT / "src", out)
        results[name] = compare(before, after, ignore=("provenance", "parity_version", "source", "sources"))
        print(f"{name}: {len(results[name]['changed'])} changed of {results[name]['compared']}", file=sys.stderr)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the revision to compare with (before the change)")
    parser.add_argument("--run", type=Path, help="a run JSON to summarise instead of measuring a new one")
    parser.add_argument("--skip-run", action="store_true", help="compare trace figures only")
    parser.add_argument("--skip-traces", action="store_true", help="compare the microbenchmark figures only")
    parser.add_argument("--json", type=Path, help="write the comparison here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="parity-before-after-") as tmp:
        out = Path(tmp)
        base_src = base_tree(args.base, out)
        report: dict[str, Any] = {"base": args.base}
        if not args.skip_run:
            report["suites"] = suite_figures(args.run or quick_run(out), base_src)
        if not args.skip_traces:
            report["traces"] = trace_figures(base_src, out)
    changed = 0
    for family in ("suites", "traces"):
        for name, result in report.get(family, {}).items():
            changed += len(result["changed"])
            print(f"{family} {name}: {result['compared']} compared, {len(result['changed'])} changed, "
                  f"{len(result['only_before'])} only before, {len(result['only_after'])} only after")
            for key, (was, now) in list(result["changed"].items())[:10]:
                print(f"    {key}: {was!r} -> {now!r}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str))
    print("UNCHANGED" if changed == 0 else f"CHANGED: {changed} values")
    return 0 if changed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
