"""Every example in README.md runs as written.

The examples are the ``parity ...`` commands of README.md's code blocks and of its command
table's example column. Each one's flags must exist on its command (checked through the command's
own parameters, deprecated spellings excluded); those that need nothing this machine lacks are
also run, in a temporary folder with a temporary store, producers before the commands that read
stored runs. An example is only checked, not run, when it needs a GPU, a server, a launcher, a
file that is not there, or many minutes (the reason is in ``NOT_RUN``).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner
import pytest

from parity.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"

# Why an example is checked but not run: a pattern of its text and the reason.
NOT_RUN = (
    (r"--url |--endpoint ", "needs an OpenAI-compatible server"),
    (r"--engine ", "needs a served engine installed (vLLM) and a model folder"),
    (r"torchrun|srun| --join", "needs the user's launcher"),
    (r"--device (cuda|npu|xpu)", "needs an accelerator"),
    (r"\S+\.json\.gz|vllm-result\.json|traces/", "reads files this checkout does not have"),
    (r"^parity run --quick$", "measures every suite: many minutes on a CPU"),
    (r"^parity gemm --quick", "the quick catalog takes minutes on a CPU"),
)
# Commands that read stored runs: run after the ones that make them.
READERS = ("parity runs", "parity compare", "parity report")


def _examples(text: str) -> list[str]:
    """The ``parity`` commands of the code blocks and of the table's example column, in order."""
    found: list[str] = []
    for block in re.findall(r"(?ms)^```(\w*)\n(.*?)^```", text):
        if block[0] in ("python", "sql"):
            continue
        for line in block[1].splitlines():
            found += [part.strip() for part in line.split("&&") if part.strip().startswith("parity ")]
    for row in re.findall(r"(?m)^\|.*\|\s*`(parity [^`]+)`\s*\|\s*$", text):
        found.append(row.strip())
    return list(dict.fromkeys(found))


EXAMPLES = _examples(README.read_text(encoding="utf-8"))


def _why_not_run(example: str) -> str | None:
    return next((why for pattern, why in NOT_RUN if re.search(pattern, example)), None)


def _command(words: list[str]) -> tuple[click.Command, list[str], list[str]]:
    """The command an example names, its path, and the words after the path."""
    command: click.Command = cli
    path: list[str] = []
    rest = list(words)
    while isinstance(command, click.Group) and rest and not rest[0].startswith("-"):
        ctx = click.Context(command, info_name=" ".join(["parity", *path]))
        sub = command.get_command(ctx, rest[0])
        if sub is None:
            break
        command, path = sub, [*path, rest.pop(0)]
    return command, path, rest


def _visible_flags(command: click.Command) -> set[str]:
    flags = {"--help", "-h"}
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            flags.update(param.opts)
            flags.update(param.secondary_opts)
    return flags


def test_the_readme_has_one_example_per_family_command() -> None:
    commands = {" ".join(_command(shlex.split(e)[1:])[1]) for e in EXAMPLES}
    assert {"run", "gemm", "membw", "latency", "kernels", "comm collectives", "comm moe", "comm overlap",
            "decode offline", "decode online", "decode import", "compare", "report", "runs export", "doctor",
            "trace analyze"} <= commands


def test_the_readme_names_the_fast_inner_loop() -> None:
    text = README.read_text(encoding="utf-8")
    loop = re.search(r'`(python -m pytest [^`]*-m "([^"]+)")`', text)
    assert loop, "README.md names no marker-based fast test loop"
    markers = set(re.findall(r"[a-z_]+", loop.group(2))) - {"not", "and", "or"}
    declared = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert all(f'"{m}:' in declared for m in markers), f"unknown markers in {loop.group(1)}"


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_example_uses_flags_its_command_has(example: str) -> None:
    words = shlex.split(example)
    assert words[0] == "parity"
    command, path, rest = _command(words[1:])
    flags = _visible_flags(command)
    for word in rest:
        if word.startswith("-"):
            assert word.split("=")[0] in flags, f"{example}: parity {' '.join(path)} has no {word}"
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0, result.output


@pytest.mark.torch
@pytest.mark.slow
def test_examples_run_as_written(tmp_path: Path) -> None:
    runnable = [e for e in EXAMPLES if _why_not_run(e) is None]
    ordered = [e for e in runnable if not e.startswith(READERS)] + [e for e in runnable if e.startswith(READERS)]
    env = {**os.environ, "PARITY_DB": str(tmp_path / "results.sqlite"),
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    failed = []
    for example in ordered:
        argv = [sys.executable, "-m", "parity", *shlex.split(example)[1:]]
        done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        if done.returncode == 1 and _only_disturbed(tmp_path / "results.sqlite"):
            # A case refused as disturbed by other work is the run's declared outcome on a busy
            # host (exit 1, the case stored with its reason); the example is run once more, as a
            # user would. A wrong result or any other error fails at once.
            done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            failed.append(f"{example}: exit {done.returncode}: {done.stderr.strip()[-400:]}")
    assert not failed, "\n".join(failed)


def _only_disturbed(db: Path) -> bool:
    """Whether the newest stored run failed only by cases refused as disturbed (their error
    holds the latency suite's :data:`DISTURBED`) and holds at least one such case."""
    from parity.families.latency.suite import DISTURBED
    from parity.store import Store

    if not db.exists():
        return False
    with Store.open(db, read_only=True) as store:
        runs = store.list_runs(limit=1)
        if not runs:
            return False
        cases = store.cases(runs[0].run_id)
    errors = [c.error for c in cases if c.error is not None]
    failed = [c for c in cases if c.error is None and c.ok is False]
    return bool(errors) and not failed and all(DISTURBED in e for e in errors)
