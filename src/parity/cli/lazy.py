"""A click group whose subcommands are imported only when used."""

from __future__ import annotations

import importlib

import click
from click.utils import make_default_short_help


class LazyGroup(click.Group):
    """Subcommands given as ``{"name": ("module.path:attribute", "one-line help")}``, imported
    on first use.

    This keeps ``parity --help`` and ``parity trace ...`` free of torch imports: the group's
    help lists each subcommand by its one-line help without importing it (importing every
    subcommand to ask it costs ``parity --help`` a fifth of a second). Each line is the start
    of its command's own short help (a test holds them together).
    """

    def __init__(self, *args, lazy_commands: dict[str, tuple[str, str]] | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands = {name: target for name, (target, _) in (lazy_commands or {}).items()}
        self.lazy_help = {name: line for name, (_, line) in (lazy_commands or {}).items()}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy_commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy_commands:
            module_name, attribute = self.lazy_commands[cmd_name].split(":")
            command = getattr(importlib.import_module(module_name), attribute)
            if not isinstance(command, click.Command):
                raise TypeError(f"{self.lazy_commands[cmd_name]} is not a click command")
            return command
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The ``Commands`` section as click writes it, a lazy subcommand's line from
        :attr:`lazy_help` (the others asked as click asks them)."""
        rows: list[tuple[str, str | click.Command]] = []  # (name, its lazy line or the command)
        for name in self.list_commands(ctx):
            what = self.lazy_help.get(name) or super().get_command(ctx, name)
            if what is not None and not getattr(what, "hidden", False):
                rows.append((name, what))
        if not rows:
            return
        limit = formatter.width - 6 - max(len(name) for name, _ in rows)
        lines = [(name, make_default_short_help(what, limit) if isinstance(what, str) else what.get_short_help_str(limit))
                 for name, what in rows]
        with formatter.section("Commands"):
            formatter.write_dl(lines)
