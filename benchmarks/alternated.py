"""Whole processes of two or more tools timed alternately: what a user waits for, each tool on
the same machine state.

:func:`alternate` runs one round of every command first and leaves it out (disk cache, first
imports, ``.pyc`` files), then ``rounds`` rounds, the order reversed every round, so drift on a
shared machine hits every tool alike. It keeps every sample; the caller derives the medians.
"""

from __future__ import annotations

import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path


class ProcessFailed(RuntimeError):
    """A timed command exited non-zero; the message holds the tail of what it wrote."""


def whole_process(command: list[str], *, env: dict | None = None, cwd: str | None = None) -> float:
    """Wall seconds of one process, start to exit; :class:`ProcessFailed` with its output's
    tail when it fails."""
    begin = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd)
    seconds = time.perf_counter() - begin
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise ProcessFailed(f"{Path(command[0]).name} exited {done.returncode}: {' | '.join(tail)}")
    return seconds


def alternate(commands: dict[str, Callable[[int], float]], rounds: int) -> dict[str, list[float]]:
    """``{tool: [seconds of rounds 1..rounds]}``: each callable runs its tool once (given the
    round number, for its output folder) and returns the seconds; round 0 is run and left out."""
    for tool, run in commands.items():
        run(0)
    times: dict[str, list[float]] = {tool: [] for tool in commands}
    order = list(commands)
    for i in range(1, rounds + 1):
        for tool in order if i % 2 else order[::-1]:
            times[tool].append(commands[tool](i))
    return times


def ratio_line(times: dict[str, list[float]], ours: str, theirs: str, bar: float) -> tuple[float, str]:
    """``theirs / ours`` of the medians, and a line that judges it against ``bar``."""
    mine, other = statistics.median(times[ours]), statistics.median(times[theirs])
    ratio = other / mine
    verdict = "meets" if ratio >= bar else "BELOW"
    return ratio, (f"{theirs} {other:.3f} s / {ours} {mine:.3f} s = {ratio:.2f}x ({verdict} the {bar:g}x bar; "
                   f"medians of {len(times[ours])} alternated whole-process rounds, a first round of each left out)")


def samples_line(times: dict[str, list[float]]) -> str:
    return "; ".join(f"{tool}: " + ", ".join(f"{t:.3f}" for t in samples) for tool, samples in times.items())


def print_verdict(times: dict[str, list[float]], theirs: str, bar: float, agrees: bool,
                  lines: list[str], *, end: str = "") -> float:
    """Print a job's agreement lines, its speed against ``bar`` and its samples; the ratio."""
    print("\n".join(lines))
    ratio, line = ratio_line(times, "parity", theirs, bar)
    print(f"  speed: {line}")
    print(f"  samples (s): {samples_line(times)}")
    print(f"  {'AGREE' if agrees else 'DISAGREE'}{end}")
    return ratio
