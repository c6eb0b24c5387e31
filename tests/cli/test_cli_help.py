"""Every command is documented: help with a worked example, and ``--json`` on every command.

Walks the whole command tree from ``parity.cli.main.cli`` (lazy subcommands included), so a new
command without an ``Example:`` block or without ``--json`` fails here.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from parity.cli.lazy import LazyGroup
from parity.cli.main import cli


def _walk(
    command: click.Command, path: tuple[str, ...]
) -> list[tuple[tuple[str, ...], click.Command]]:
    found = [(path, command)]
    if isinstance(command, click.Group):
        ctx = click.Context(command, info_name=path[-1] if path else "parity")
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, (
                f"parity {' '.join(path + (name,))} is listed but cannot be loaded"
            )
            found.extend(_walk(sub, path + (name,)))
    return found


def _names(command: click.Group, path: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Command paths without importing them (so one broken module fails only its own test)."""
    ctx = click.Context(command, info_name="parity")
    paths = []
    for name in command.list_commands(ctx):
        paths.append(path + (name,))
    return paths


TOP_LEVEL = _names(cli, ())


def _command_tree(top: tuple[str, ...]) -> list[tuple[tuple[str, ...], click.Command]]:
    ctx = click.Context(cli, info_name="parity")
    command = cli.get_command(ctx, top[0])
    assert command is not None, f"parity {top[0]} cannot be loaded"
    return _walk(command, top)


def test_the_tree_has_the_commands_the_release_promises() -> None:
    assert {path[0] for path in TOP_LEVEL} >= {
        "run",
        "runs",
        "doctor",
        "gemm",
        "membw",
        "latency",
        "trace",
    }


def _example_block(help_text: str) -> list[str]:
    """The indented lines after the ``Example:``/``Examples:`` heading of rendered help."""
    lines = help_text.splitlines()
    for i, line in enumerate(lines):
        if re.fullmatch(r"\s*Examples?:\s*", line):
            block = []
            for follow in lines[i + 1 :]:
                if not follow.strip():
                    break
                block.append(follow.strip())
            return block
    return []


@pytest.mark.parametrize("top", TOP_LEVEL, ids=lambda p: " ".join(p))
def test_every_command_has_an_example_and_json(top: tuple[str, ...]) -> None:
    runner = CliRunner()
    for path, command in _command_tree(top):
        name = "parity " + " ".join(path)
        result = runner.invoke(cli, [*path, "--help"])
        assert result.exit_code == 0, f"{name} --help failed: {result.output}"
        assert command.help, f"{name} has no help text"
        block = _example_block(result.output)
        assert block, f"{name} --help has no 'Example:' block (put \\b on the line before it)"
        assert any(line.startswith(name + " ") or line == name for line in block), (
            f"{name}: its Example block never shows '{name}' itself: {block}"
        )
        if isinstance(command, click.Group):
            continue
        json_params = [p for p in command.params if "--json" in getattr(p, "opts", [])]
        assert json_params, f"{name} has no --json option"
        assert "--json" in result.output, f"{name} --help does not list --json"
        assert not json_params[0].is_flag, f"{name}: --json takes a PATH, not a flag"


def test_the_root_command_has_an_example() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    assert any(line.startswith("parity ") for line in _example_block(result.output))


def _groups() -> list[tuple[tuple[str, ...], click.Group]]:
    """The groups whose subcommands load lazily (the root, trace, decode)."""
    ctx = click.Context(cli, info_name="parity")
    found: list[tuple[tuple[str, ...], click.Group]] = [((), cli)]
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        if isinstance(command, LazyGroup):
            found.append(((name,), command))
    return found


@pytest.mark.parametrize("path,group", _groups(), ids=lambda p: " ".join(p) if isinstance(p, tuple) else "")
def test_a_group_lists_each_subcommand_by_the_start_of_its_own_help(path, group) -> None:
    lines = group.lazy_help
    assert lines, f"parity {' '.join(path)} lists no lazy subcommand"
    ctx = click.Context(group, info_name="parity")
    for name, line in lines.items():
        own = group.get_command(ctx, name).get_short_help_str(limit=10**6)
        assert own.startswith(line), f"parity {' '.join((*path, name))}: listed as {line!r}, its help says {own!r}"
    listed = CliRunner().invoke(cli, [*path, "--help"], terminal_width=100).output.split("Commands:")[1]
    assert [row.split()[0] for row in listed.strip().splitlines()] == sorted(lines)


def test_the_root_help_imports_no_subcommand() -> None:
    code = ("import sys; from parity.cli.main import main; sys.argv = ['parity', '--help']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('parity.cli.') or m in ('numpy', 'torch')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    assert set(loaded) <= {"parity.cli.main", "parity.cli.lazy", "parity.cli.numpy_load"}, loaded
    assert "Commands:" in done.stdout and "trace" in done.stdout
