"""One parity command as a user runs it, before and after a change: whole processes, alternated.

The ``--base`` revision's ``src`` (``git archive`` into a temporary folder) and this checkout's
run the same command line with the same interpreter (``--python``, default this one), each
imported through ``PYTHONPATH`` and compiled to bytecode first (as an installed package is);
round 0 of each is left out and the order is reversed every round (``alternated.alternate``),
so a machine whose speed drifts slows both alike. Every sample is printed with the medians,
their ratio (before / after: above 1 is faster now) and the load average around the rounds.

The command is parity's arguments after ``--``; ``{OUT}`` in them becomes a path of each side's
own (an output folder or file), so the two never write to one place::

    python benchmarks/speed_before_after.py --base 779192c --rounds 9 -- trace fleet RANKS/ --out {OUT}
    python benchmarks/speed_before_after.py --base 779192c --python /tmp/parity-venv/bin/python \\
        --rounds 15 -- trace compare a.json.gz rank0_ascend_pt --window span --json {OUT}.json
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from alternated import alternate, samples_line, whole_process
from figures_before_after import ROOT, base_tree
from trace_vs_hta_process import load_average


def side_env(src: Path) -> dict[str, str]:
    """The environment of one side: its ``src`` first on the path, bytecode written as usual."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(src)
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the revision before the change")
    parser.add_argument("--python", default=sys.executable, help="the interpreter both sides run on")
    parser.add_argument("--rounds", type=int, default=9, help="timed rounds of each side (after one left out)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then parity's arguments ({OUT}: a side's own path)")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the parity command after --, e.g. -- trace analyze rank0.json.gz")
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        (tmp / "base").mkdir()
        sides = {f"before ({args.base})": base_tree(args.base, tmp / "base"),
                 f"after ({head.stdout.strip()}, working tree)": ROOT / "src"}  # fmt: skip
        for src in sides.values():
            subprocess.run([args.python, "-m", "compileall", "-q", str(src / "parity")], check=True,
                           env=side_env(src))  # fmt: skip

        def runner(tag: str, src: Path):
            def run(i: int) -> float:
                argv = [a.replace("{OUT}", str(tmp / f"{tag}-{i}")) for a in command]
                return whole_process([args.python, "-m", "parity", *argv], env=side_env(src))
            return run

        print(f"$ parity {' '.join(command)}")
        print(f"# {args.python}; load average before {load_average()}")
        times = alternate({label: runner(f"side{k}", src) for k, (label, src) in enumerate(sides.items())},
                          args.rounds)  # fmt: skip
    before, after = (statistics.median(v) for v in times.values())
    for label, samples in times.items():
        print(f"{label}: median {statistics.median(samples):.3f} s")
    print(f"before / after = {before / after:.3f} (medians of {args.rounds} alternated whole-process rounds, "
          f"a first round of each left out); load average after {load_average()}")
    print(f"samples (s): {samples_line(times)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
