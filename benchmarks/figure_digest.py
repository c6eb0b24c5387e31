"""One digest of every figure a run produces, before and after a change, on fixed inputs.

A refactor of the families, the harness or the summaries must leave every figure as it was.
Two digests show it, each computed by the base revision and by this checkout, each in a
process of its own that imports only its own code:

1. a fixed-seed run on the fake device (``parity.device.fake``: every timed call takes the
   scripted 1 ms, so timings, and the figures derived from them, are the same on every run)
   of each family that runs there, through ``python -m parity run --device fake --json``;
2. the stored cases of one quick CPU run (measured once, by this checkout) summarised again by
   each side, through ``get_suite(name).summarize`` and ``.figures``.

A digest is SHA-256 over the sorted figures, each written as the JSON of its name, value,
unit, method and scope (keys sorted), numbers rounded to 12 significant digits (the same
figure derived in another order of float operations differs in its last bits, ~1e-16
relative, which no figure's precision reaches); the figures themselves are listed under it. Both sides
go through public entry points (the command line, the suite registry), found where the
revision keeps them (``parity.harness`` from d985901 on, ``parity.bench`` before it), so
``--base`` may name either layout. Trace analyses are compared by ``figures_before_after.py``.
Exit status 1 when a digest differs.

    python benchmarks/figure_digest.py --base 708937b
    python benchmarks/figure_digest.py --base d985901 --skip-cpu --repeat
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures_before_after import ROOT, SUMMARISE, _env, base_tree  # noqa: E402

# Families measured on the fake device, and the quick settings that keep each run short.
FAKE_FAMILIES = ("collectives", "moe", "decode", "kernels", "gemm")
FAKE_SETTINGS = ["--set", "collectives.max_bytes=65536", "--set", "decode.batches=[1,2]",
                 "--set", "kernels.ceiling_budget_s=0.5", "--set", "gemm.ceiling_budget_s=1"]
# Families left out of the fake run, and why (each goes in when the reason does).
FAKE_EXCLUDED = {
    "membw": "its ceiling B copies two 200 MiB buffers for real hundreds of times (minutes on a "
             "2-core CPU), and its host-device ops need an accelerator",
    "latency": "the device chase is a Triton kernel, which needs a GPU driver",
    "overlap": "its work is timed together and alone by the host clock (parity.timing.together), "
               "not by the fake device's scripted events",
}
GEMM_SHAPES = "m,n,k,name\n64,64,64,square-64\n128,256,64,wide\n96,32,128,tall\n"
CPU_SUITES = "gemm,membw,latency"
CPU_SETTINGS = ["--set", "gemm.ceiling_budget_s=3", "--set", "membw.max_bytes=4194304",
                "--set", "latency.pages=base"]
# Each suite's figures, derived again from the stored cases in the revision's own process.
RESUMMARISE = SUMMARISE + r"""
out = {name: [f.to_dict() for f in suite.figures(s)] for name, (suite, s) in summaries.items()}
json.dump(out, sys.stdout, default=str)
"""


SIGNIFICANT = 12


def rounded(value: Any) -> Any:
    """``value`` with every float rounded to :data:`SIGNIFICANT` significant digits, through
    dicts and lists; other values as they are."""
    if isinstance(value, float):
        return float(f"{value:.{SIGNIFICANT}g}")
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v) for v in value]
    return value


def figure_line(figure: dict[str, Any]) -> str:
    """One figure as the digest reads it: name, value, unit, method and scope, keys sorted,
    floats rounded (:func:`rounded`)."""
    kept = {k: rounded(figure.get(k)) for k in ("name", "value", "unit", "method", "scope")}
    return json.dumps(kept, sort_keys=True, default=str)


def digest(figures: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """SHA-256 of the sorted figure lines, and the lines."""
    lines = sorted(figure_line(f) for f in figures)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest(), lines


def run_json(doc: Path) -> dict[str, list[dict[str, Any]]]:
    """Each suite's stored figures in a ``parity run --json`` document."""
    data = json.loads(doc.read_text())
    return {s["suite"]: list(s.get("figures") or []) for s in data["suites"]}


def fake_run(src: Path, out: Path, tag: str) -> dict[str, list[dict[str, Any]]]:
    """The fake-device run of :data:`FAKE_FAMILIES` by the code in ``src``: figures by family."""
    (out / "shapes.csv").write_text(GEMM_SHAPES)
    doc = out / f"fake-{tag}.json"
    command = [sys.executable, "-m", "parity", "run", "--device", "fake", "--quick", "--no-report",
               "--suite", ",".join(FAKE_FAMILIES), *FAKE_SETTINGS, "--set", f"gemm.shapes={out / 'shapes.csv'}",
               "--db", str(out / f"fake-{tag}.sqlite"), "--json", str(doc)]
    began = time.monotonic()
    done = subprocess.run(command, env=_env(src), cwd=out, capture_output=True, text=True)
    print(f"fake run ({tag}): exit {done.returncode}, {time.monotonic() - began:.0f} s", file=sys.stderr)
    if not doc.exists():
        raise SystemExit(f"fake run ({tag}) wrote no JSON: {done.stderr.strip().splitlines()[-1:]}")
    return run_json(doc)


def cpu_run(out: Path) -> Path:
    """One quick CPU run of the kernel suites, measured by this checkout; its JSON document."""
    doc = out / "cpu.json"
    command = [sys.executable, "-m", "parity", "run", "--quick", "--device", "cpu", "--no-report",
               "--suite", CPU_SUITES, *CPU_SETTINGS, "--db", str(out / "cpu.sqlite"), "--json", str(doc)]
    began = time.monotonic()
    subprocess.run(command, env=_env(ROOT / "src"), cwd=out, capture_output=True, check=False)
    print(f"cpu run: {time.monotonic() - began:.0f} s", file=sys.stderr)
    return doc


def resummarise(doc: Path, src: Path) -> dict[str, list[dict[str, Any]]]:
    """The figures the code in ``src`` derives again from the stored cases of ``doc``."""
    done = subprocess.run([sys.executable, "-c", RESUMMARISE, str(doc)], env=_env(src),
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"summarising with {src}: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout)


def compare(label: str, sides: dict[str, dict[str, list[dict[str, Any]]]]) -> int:
    """Print each family's digest per side and the figures that differ; the count that differ."""
    names = sorted(set().union(*(s.keys() for s in sides.values())))
    differ = 0
    print(f"\n== {label}")
    for name in names:
        digests = {side: digest(figs.get(name, [])) for side, figs in sides.items()}
        shown = "  ".join(f"{side} {d[0][:16]}" for side, d in digests.items())
        agree = len({d[0] for d in digests.values()}) == 1
        differ += not agree
        print(f"{name:12s} {len(next(iter(digests.values()))[1]):3d} figures  {shown}  "
              f"{'same' if agree else 'DIFFERENT'}")
        if not agree:
            (a, (_, la)), (b, (_, lb)) = list(digests.items())[:2]
            for line in sorted(set(la) ^ set(lb))[:8]:
                print(f"    {'only ' + a if line in la else 'only ' + b}: {line[:160]}")
    every = {side: digest([f for fam in figs.values() for f in fam]) for side, figs in sides.items()}
    print("all          " + "  ".join(f"{side} {d[0]}" for side, d in every.items()))
    return differ


def list_figures(sides: dict[str, dict[str, list[dict[str, Any]]]]) -> None:
    """The figure lines of the first side, which every side agrees on when the digests do."""
    first = next(iter(sides.values()))
    for name in sorted(first):
        for line in digest(first[name])[1]:
            print(f"  {line}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the revision to compare with (before the change)")
    parser.add_argument("--run", type=Path, help="a CPU run JSON to summarise instead of measuring one")
    parser.add_argument("--skip-fake", action="store_true", help="leave out the fake-device run")
    parser.add_argument("--skip-cpu", action="store_true", help="leave out the CPU run's summaries")
    parser.add_argument("--repeat", action="store_true",
                        help="run this checkout's fake run twice, to show it is deterministic")
    parser.add_argument("--list", action="store_true", help="list every figure under the digests")
    args = parser.parse_args()
    differ = 0
    with tempfile.TemporaryDirectory(prefix="parity-digest-") as tmp:
        out = Path(tmp)
        base_src = base_tree(args.base, out)
        if not args.skip_fake:
            sides = {"base": fake_run(base_src, out, "base"), "new": fake_run(ROOT / "src", out, "new")}
            if args.repeat:
                sides["again"] = fake_run(ROOT / "src", out, "again")
            differ += compare(f"fake device, fixed seed: {', '.join(FAKE_FAMILIES)}", sides)
            for name, why in FAKE_EXCLUDED.items():
                print(f"{name:12s} not run on the fake device: {why}")
            if args.list:
                list_figures(sides)
        if not args.skip_cpu:
            doc = args.run or cpu_run(out)
            sides = {"stored": run_json(doc), "base": resummarise(doc, base_src),
                     "new": resummarise(doc, ROOT / "src")}
            differ += compare(f"quick CPU run ({CPU_SUITES}) summarised again", sides)
            if args.list:
                list_figures(sides)
    print("\nUNCHANGED" if differ == 0 else f"\nCHANGED: {differ} digests differ")
    return 0 if differ == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
