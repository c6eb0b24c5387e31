"""A family's command-line flags, made from its typed options (``parity.harness.options``).

Every option field is one flag named after it (``min_bytes`` is ``--min-bytes``, ``iterations``
is ``--iterations``), so a key reads the same in ``parity membw``, ``parity comm collectives``
and ``parity run --set``. The help line and the default come from the field; a bool is a
``--flag/--no-flag`` pair; a list takes ``A,B`` (or the flag repeated); an integer number of
bytes (a ``*_bytes`` field) takes ``64MiB``, ``1K`` or ``4096``. The old spellings a field lists
in ``aliases`` still work, hidden from ``--help``, with a note on stderr naming the new one.

Only what the user gave reaches the options mapping: an option left out takes the field's
default (or the mode's, for a ``None`` default) when the suite parses it.
"""

from __future__ import annotations

import typing
from typing import Any

import click

from parity.harness.options import OptionInfo, describe_options, option_types
from parity.harness.run_record import AVAILABILITY
from parity.model.errors import ParityError

# Names the family commands use for their own flags; an option of the same name would clash.
RESERVED = frozenset({"device_name", "quick", "resume_id", "db_path", "json_path", "nproc", "join",
                      "backend", "step_timeout_s", "availability", "label"})

AVAILABILITY_CHOICE = click.Choice(AVAILABILITY)
AVAILABILITY_HELP = ("The stack's availability category, stored in the run's config and compared by the audit "
                     "(MLPerf's): available (released, obtainable now), preview (released within 180 days), rd "
                     "(research, development or internal: prototype hardware, proof-of-concept firmware).")

LABEL_HELP = ("A short name for the run, stored in its config and shown by compare and the report instead of the "
              "device name (e.g. 'H200 driver 550').")


class SizeType(click.ParamType):
    """Bytes written as ``64MiB``, ``1K``, ``4 GiB`` or a plain number."""

    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        from parity.device.host import parse_size

        try:
            return parse_size(str(value))
        except (ValueError, ParityError):
            self.fail(f"{value!r} is not a size; write it like 64MiB, 1K or 4096", param, ctx)


class ListType(click.ParamType):
    """``A,B,C``: items of one type, each checked as the flag is read."""

    def __init__(self, item: click.ParamType) -> None:
        self.item = item
        self.name = f"list of {item.name}"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[Any, ...]:
        if isinstance(value, tuple):
            return value
        items = [part.strip() for part in str(value).split(",") if part.strip()]
        if not items:
            self.fail(f"{value!r} lists nothing; write it like A,B", param, ctx)
        return tuple(self.item.convert(part, param, ctx) for part in items)


def _scalar_type(info: OptionInfo, base: Any, *, is_list: bool = False) -> click.ParamType:
    """The click type of one value of option ``info`` (base type ``base``). A list's items are
    checked against the choices when the options are parsed, so a command may accept an old
    word for several of them (``--pages both``)."""
    if info.choices and not is_list:
        return click.Choice(list(info.choices))
    low, open_low = info.minimum, info.exclusive_minimum
    if base is int:
        if info.key.endswith("_bytes"):
            return SizeType()
        return click.INT if low is None else click.IntRange(min=int(low), min_open=open_low)
    if base is float:
        return click.FLOAT if low is None else click.FloatRange(min=low, min_open=open_low)
    return click.STRING


def _help(info: OptionInfo, *, is_list: bool) -> str:
    """The field's help line, with its default (a ``None`` default's text is in the help)."""
    text = info.help[:1].upper() + info.help[1:]
    if is_list and info.choices:
        text += f"; comma-separated, of {', '.join(info.choices)}"
    elif is_list:
        text += "; comma-separated"
    if info.default is None or info.default == "":
        return text + "."
    if isinstance(info.default, bool):
        shown = "on" if info.default else "off"
    elif isinstance(info.default, tuple):
        shown = ",".join(str(v) for v in info.default) or "none"
    else:
        shown = str(info.default)
    return f"{text} [default: {shown}]"


def _metavar(info: OptionInfo, base: Any, *, is_list: bool) -> str | None:
    if info.key.endswith("_bytes") and not is_list:
        return "SIZE"
    if is_list:
        return "LIST"
    if info.choices:
        return None
    return {int: "N", float: "NUMBER", str: "TEXT"}.get(base)


def option_params(cls: type) -> list[click.Parameter]:
    """The click parameters of every command-line option of ``cls``, in declaration order, each
    followed by a hidden one per old spelling the field lists in ``aliases``."""
    types = option_types(cls)
    params: list[click.Parameter] = []
    for info in describe_options(cls):
        if not info.command_line:
            continue
        if info.key in RESERVED:
            raise TypeError(f"option {info.key!r} of {cls.__name__} clashes with a command flag")
        base, _ = types[info.key]
        params.extend(_params_for(info, base, info.aliases))
    return params


def _params_for(info: OptionInfo, base: Any, old: tuple[str, ...]) -> list[click.Parameter]:
    """The flag (or argument) of one option, then one hidden parameter per old spelling."""
    is_list = typing.get_origin(base) is tuple
    item = typing.get_args(base)[0] if is_list else base
    help_text = _help(info, is_list=is_list)
    if base is bool:
        flag = info.flag
        main: click.Parameter = click.Option([f"{flag}/--no-{flag[2:]}", info.key], default=info.default,
                                             help=help_text)
        hidden = [click.Option([name, f"{info.key}__old{i}"], is_flag=True, default=None, hidden=True)
                  for i, name in enumerate(old)]
        return [main, *hidden]
    kind: click.ParamType = _scalar_type(info, item, is_list=is_list)
    if is_list:
        kind = ListType(kind)
    if info.positional:
        main = click.Argument([info.key], type=kind, required=info.default is None, default=info.default)
    else:
        main = click.Option([info.flag, info.key], type=kind, default=None, multiple=is_list,
                            metavar=_metavar(info, item, is_list=is_list), help=help_text)
    hidden = [click.Option([name, f"{info.key}__old{i}"], type=kind, default=None, multiple=is_list, hidden=True)
              for i, name in enumerate(old)]
    return [main, *hidden]


def given_options(ctx: click.Context, cls: type, values: dict[str, Any]) -> dict[str, Any]:
    """The options the user gave (``values`` are the command's parameters by name), keyed by
    option name; an old spelling counts as its option, with a note on stderr."""
    given: dict[str, Any] = {}
    for info in describe_options(cls):
        if not info.command_line:
            continue
        value = _given(ctx, values, info.key)
        for param in ctx.command.params:
            if not (param.name or "").startswith(f"{info.key}__old"):
                continue
            old = _given(ctx, values, str(param.name))
            if old is None:
                continue
            click.echo(f"parity: note: {param.opts[0]} is deprecated; use {info.flag}", err=True)
            value = old if value is None else value
        if value is not None:
            given[info.key] = value
    return given


def _given(ctx: click.Context, values: dict[str, Any], name: str) -> Any:
    """The value of parameter ``name`` when the user gave it, else None (a list: joined)."""
    source = ctx.get_parameter_source(name)
    if source in (None, click.core.ParameterSource.DEFAULT):
        return None
    value = values.get(name)
    if isinstance(value, tuple) and value and isinstance(value[0], tuple):
        return tuple(v for part in value for v in part)  # --ops a,b --ops c
    if value == ():
        return None
    return value
