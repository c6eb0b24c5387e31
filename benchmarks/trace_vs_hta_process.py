"""Speed as a user meets it: ``parity trace analyze TRACE --json OUT`` as a whole process
(start-up, read, analyse, write the JSON) against a whole Python process running HTA's load
and temporal breakdown of the same trace (``hta_breakdown.py TRACE 1``, imports included),
in alternated runs (the order swapped every round, so both see the machine alike), after one
round of each left out. The ratio is the median of HTA's times over the median of parity's.

HTA runs in its own environment (``--hta-python``, default ``benchmarks/.venv-hta/bin/python``
as ``trace_vs_hta.py`` makes it). Both run from compiled bytecode, as installed packages do:
pip compiled HTA's modules when it installed them, and parity's are compiled here first
(``compileall`` into the ``__pycache__`` folders beside its sources), since a source checkout
run with ``PYTHONDONTWRITEBYTECODE=1`` would otherwise compile every module in every process
(about 0.1 s). The load average is printed before and after: other work on the machine slows
both tools, the shorter one relatively more. Bar: ratio >= 10 on ``df_index_resolver`` (the
goal; 7 is where it stood). ``--parity-python`` runs parity from the interpreter of its own
environment, as HTA runs from its own (``python -m venv /tmp/parity-venv &&
/tmp/parity-venv/bin/pip install -e '.[fast]'``); this interpreter by default. A shared
interpreter may cost more at start-up (a ``.pth`` file that imports a package at every start),
so each interpreter's bare start-up (``python -c pass``, median wall) is printed beside the ratio.

    python benchmarks/trace_vs_hta_process.py --rounds 5 --traces df_index_resolver \
        --parity-python /tmp/parity-venv/bin/python
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRACES = HERE.parent.parent / "shared/data/traces/kineto/hta"
BAR = 10.0


def whole_process(command: list[str], env: dict | None = None) -> float:
    """Wall seconds of one process, start to exit."""
    begin = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=env)
    return time.perf_counter() - begin


def compile_parity(python: str) -> Path:
    """parity's package folder (as ``python`` imports it), its modules compiled to bytecode
    beside the sources by that interpreter."""
    found = subprocess.run([python, "-c", "import parity, os; print(os.path.dirname(parity.__file__))"],
                           check=True, capture_output=True, text=True)
    package = Path(found.stdout.strip())
    subprocess.run([python, "-m", "compileall", "-q", str(package)], check=True, capture_output=True)
    return package


def bare_start(python: str, runs: int = 5) -> float:
    """Median wall seconds of ``python -c pass``: the interpreter's own start-up."""
    return statistics.median(whole_process([python, "-c", "pass"]) for _ in range(runs))


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--traces", default="df_index_resolver", help="comma-separated folders under kineto/hta")
    parser.add_argument("--hta-python", default=str(HERE / ".venv-hta" / "bin" / "python"))
    parser.add_argument("--parity-python", default=sys.executable,
                        help="the Python of the environment parity is installed in (this one by default)")
    args = parser.parse_args()
    env = dict(os.environ, HTA_DISABLE_NS_ROUNDING="1")
    print(f"parity's bytecode compiled first (as pip install does): {compile_parity(args.parity_python)}")
    print(f"bare start-up (python -c pass, median wall): parity's interpreter {bare_start(args.parity_python):.3f} s, "
          f"HTA's {bare_start(args.hta_python):.3f} s")
    for name in args.traces.split(","):
        trace = next(p for p in sorted((TRACES / name).glob("*.json*")))
        load_before = load_average()
        with tempfile.TemporaryDirectory() as tmp:
            parity = [args.parity_python, "-m", "parity", "trace", "analyze", str(trace), "--json", str(Path(tmp) / "out.json")]
            hta = [args.hta_python, str(HERE / "hta_breakdown.py"), str(trace), "1"]
            whole_process(parity), whole_process(hta, env)  # left out: disk cache, first imports
            times: dict[str, list[float]] = {"parity": [], "hta": []}
            for i in range(args.rounds):
                order = [("parity", parity, None), ("hta", hta, env)]
                for tool, command, tool_env in order if i % 2 == 0 else order[::-1]:
                    times[tool].append(whole_process(command, tool_env))
        ours, theirs = statistics.median(times["parity"]), statistics.median(times["hta"])
        ratio = theirs / ours
        print(f"{name}: parity trace analyze {ours:.3f} s, HTA script {theirs:.3f} s (medians of {args.rounds} "
              f"alternated whole-process runs): HTA / parity = {ratio:.2f}x "
              f"({'meets' if ratio >= BAR else 'below'} the {BAR:g}x goal)")
        print(f"  parity runs: {', '.join(f'{t:.3f}' for t in times['parity'])}")
        print(f"  HTA runs:    {', '.join(f'{t:.3f}' for t in times['hta'])}")
        print(f"  load average (1, 5, 15 min): {load_before} before, {load_average()} after")


if __name__ == "__main__":
    main()
