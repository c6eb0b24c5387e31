"""Typed suite options: one frozen dataclass per suite, parsed once at the edge.

A suite declares ``options_type``, a frozen, keyword-only dataclass whose fields are made with
:func:`option` (a default and a help line, optionally the allowed choices and a lower bound).
The same type serves the command line (``parity run --set SUITE.KEY=VALUE``), the Python API
(``run_suites(options={"gemm": GemmOptions(dtype="fp32")})``), the stored run config
(:func:`options_to_dict` writes it, :func:`parse_options` reads it back on ``--resume``) and the
family's own command (``parity membw --min-bytes 4KiB``): each field is one flag named after it
(``min_bytes`` is ``--min-bytes``), with its help and default. A field may also name the old
spellings its flag still accepts (``aliases``, hidden and deprecated), ask to be the command's
positional argument (``positional``), or stay off the command line (``command_line=False``, for
a value filled in by the command itself).

A field whose default is ``None`` means "the mode's default" (quick or full, CPU or
accelerator): the suite resolves it and records the value it used in each case's params.
Unknown keys and values of the wrong type are refused with one line that names the key, the
value and the valid keys, never ignored; so are impossible ranges: ``min_X`` above ``max_X``,
and a size (an option named ``*_bytes``) of zero.
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from parity.model.errors import ParityError


def option(
    default: Any,
    *,
    help: str,  # noqa: A002 - the word users see in the metadata
    choices: Sequence[str] | None = None,
    minimum: float | None = None,
    exclusive_minimum: bool = False,
    aliases: Sequence[str] = (),
    positional: bool = False,
    command_line: bool = True,
) -> Any:
    """A dataclass field with its help text and checks; ``default`` may be ``None``.

    ``aliases`` are old flag spellings (``"--iters"``) the family's command still accepts,
    hidden from ``--help``; ``positional`` makes the field the command's argument instead of a
    flag; ``command_line=False`` keeps it off the command (it is filled in by the command).
    """
    bad = [a for a in aliases if not a.startswith("--")]
    if bad:
        raise TypeError(f"option aliases are flags starting with --, got {bad[0]!r}")
    metadata = {"help": help, "choices": tuple(choices) if choices else None,
                "minimum": minimum, "exclusive_minimum": exclusive_minimum,
                "aliases": tuple(aliases), "positional": positional, "command_line": command_line}
    if isinstance(default, (list, dict, set)):
        raise TypeError("option defaults must be immutable (use a tuple)")
    return dataclasses.field(default=default, metadata=metadata)


@dataclasses.dataclass(frozen=True, kw_only=True)
class OptionInfo:
    """What ``--help`` and error messages say about one option."""

    key: str
    type_name: str
    default: Any
    help: str
    choices: tuple[str, ...] | None = None
    minimum: float | None = None
    exclusive_minimum: bool = False
    aliases: tuple[str, ...] = ()
    positional: bool = False
    command_line: bool = True

    @property
    def flag(self) -> str:
        """The command-line flag of this option: ``min_bytes`` is ``--min-bytes``."""
        return flag_name(self.key)

    def line(self) -> str:
        default = "mode default" if self.default is None else _show(self.default)
        allowed = f" ({'|'.join(self.choices)})" if self.choices else ""
        return f"{self.key}={self.type_name}{allowed}: {self.help} [default: {default}]"


def flag_name(key: str) -> str:
    """The one spelling of option ``key`` on every command line: ``--`` and dashes for underscores."""
    return "--" + key.replace("_", "-")


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value) or "none"
    return str(value).lower() if isinstance(value, bool) else str(value)


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _base_type(hint: Any) -> tuple[Any, bool]:
    """``(type, optional)`` for ``T`` or ``T | None``."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return hint, False


def option_types(cls: type) -> dict[str, tuple[Any, bool]]:
    """Each option's ``(base type, optional)``; a tuple option's base is ``tuple[T, ...]``."""
    return {key: _base_type(hint) for key, hint in _hints(cls).items()}


def _type_name(hint: Any) -> str:
    base, _ = _base_type(hint)
    if typing.get_origin(base) is tuple:
        return f"list of {typing.get_args(base)[0].__name__}"
    return {bool: "bool", int: "int", float: "number", str: "text"}.get(base, str(base))


def describe_options(cls: type) -> list[OptionInfo]:
    """Every option of ``cls`` in declaration order, for ``--help`` and errors."""
    hints = _hints(cls)
    return [
        OptionInfo(key=f.name, type_name=_type_name(hints[f.name]), default=f.default,
                   help=str(f.metadata.get("help", "")), choices=f.metadata.get("choices"),
                   minimum=f.metadata.get("minimum"), exclusive_minimum=bool(f.metadata.get("exclusive_minimum")),
                   aliases=tuple(f.metadata.get("aliases", ())), positional=bool(f.metadata.get("positional")),
                   command_line=bool(f.metadata.get("command_line", True)))
        for f in dataclasses.fields(cls)
    ]


def _coerce(value: Any, hint: Any, *, where: str) -> Any:
    """``value`` as the field's type, or a one-line error saying what was expected."""
    base, optional = _base_type(hint)
    if value is None:
        if optional:
            return None
        raise ParityError(f"{where}=null is not allowed; give a {_type_name(hint)}")
    if typing.get_origin(base) is tuple:
        item = typing.get_args(base)[0]
        items = [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)):
            raise ParityError(f"{where}={value!r} is not a list; give NAME,NAME or a JSON list")
        return tuple(_coerce(v, item, where=where) for v in items)
    if base is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "yes", "no", "on", "off", "1", "0"):
            return value.lower() in ("true", "yes", "on", "1")
        raise ParityError(f"{where}={value!r} is not a bool; give true or false")
    if base is int:
        if isinstance(value, bool) or not isinstance(value, (int, str)) or not _is_int(value):
            raise ParityError(f"{where}={value!r} is not an integer")
        return int(value)
    if base is float:
        try:
            if isinstance(value, bool):
                raise ValueError
            return float(value)
        except (TypeError, ValueError):
            raise ParityError(f"{where}={value!r} is not a number") from None
    if base is str:
        if isinstance(value, (dict, list, tuple)):
            raise ParityError(f"{where}={value!r} is not text")
        return str(value)
    raise TypeError(f"{where}: option type {hint!r} is not supported")


def _is_int(value: int | str) -> bool:
    try:
        return int(value) == float(value)
    except (TypeError, ValueError):
        return False


def _check_bounds(value: Any, field: dataclasses.Field, *, where: str) -> None:
    meta = field.metadata
    choices = meta.get("choices")
    values = value if isinstance(value, tuple) else (value,)
    for v in values:
        if v is None:
            continue
        if choices and v not in choices:
            raise ParityError(f"{where}={v!r} is not one of {', '.join(choices)}")
        low = meta.get("minimum")
        if low is not None and isinstance(v, (int, float)):
            bad = v <= low if meta.get("exclusive_minimum") else v < low
            if bad:
                relation = "greater than" if meta.get("exclusive_minimum") else "at least"
                raise ParityError(f"{where}={v!r} must be {relation} {low:g}")


def unknown_key_error(suite: str, key: str, cls: type) -> ParityError:
    """The error for ``SUITE.KEY`` that ``cls`` does not have: the nearest key and all of them."""
    keys = [f.name for f in dataclasses.fields(cls)]
    near = difflib.get_close_matches(key, keys, n=1, cutoff=0.5)
    hint = f"did you mean {suite}.{near[0]}? " if near else ""
    return ParityError(
        f"unknown option {suite}.{key}; {hint}{suite} options: {', '.join(keys) or 'none'}"
    )


def parse_options(cls: type, raw: Mapping[str, Any] | Any, *, suite: str) -> Any:
    """An instance of ``cls`` from ``raw`` (a mapping of keys to values, or already a ``cls``).

    Unknown keys, wrong types, values outside ``choices`` or under ``minimum`` raise
    ParityError naming ``SUITE.KEY`` and the value.
    """
    if isinstance(raw, cls):
        values = {f.name: getattr(raw, f.name) for f in dataclasses.fields(cls)}
    elif isinstance(raw, Mapping):
        values = dict(raw)
    else:
        raise ParityError(f"options for suite {suite!r} must be a mapping or {cls.__name__}, got {type(raw).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    hints = _hints(cls)
    for key in values:
        if key not in fields:
            raise unknown_key_error(suite, key, cls)
    parsed: dict[str, Any] = {}
    for key, value in values.items():
        where = f"option {suite}.{key}"
        parsed[key] = _coerce(value, hints[key], where=where)
        _check_bounds(parsed[key], fields[key], where=where)
        _check_size(parsed[key], key, where=where)
    _check_ranges({**{k: f.default for k, f in fields.items()}, **parsed}, suite=suite)
    return cls(**parsed)


SIZE_SUFFIX = "_bytes"  # an option named for bytes is a size: zero of it measures nothing


def _check_size(value: Any, key: str, *, where: str) -> None:
    """A size option (its name ends in ``_bytes``) of 0 B, or below, is refused: there is no
    operand, working set or stride of no bytes to measure."""
    if not key.endswith(SIZE_SUFFIX):
        return
    for v in value if isinstance(value, tuple) else (value,):
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v <= 0:
            raise ParityError(f"{where}={v!r} is a size of no bytes; give a positive size, e.g. 4096")


def _check_ranges(values: Mapping[str, Any], *, suite: str) -> None:
    """``min_X`` above ``max_X`` (given, or a declared default) is refused: the range would hold
    nothing."""
    for key, low in values.items():
        if not key.startswith("min_") or low is None:
            continue
        high = values.get("max_" + key.removeprefix("min_"))
        if isinstance(low, (int, float)) and isinstance(high, (int, float)) and low > high:
            top = "max_" + key.removeprefix("min_")
            raise ParityError(f"option {suite}.{key}={low!r} is above {suite}.{top}={high!r}; "
                              f"give {key} <= {top}")


def options_to_dict(options: Any) -> dict[str, Any]:
    """The JSON form of a typed options instance: only the keys that differ from the defaults,
    so a stored config reads as what was asked (tuples become lists)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(options):
        value = getattr(options, f.name)
        if value != f.default:
            out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


def help_text(cls: type, *, suite: str) -> str:
    """One line per option, ``SUITE.KEY=TYPE: help [default]``, for ``--help``."""
    return "\n".join(f"  {suite}.{info.line()}" for info in describe_options(cls))


@dataclasses.dataclass(frozen=True, kw_only=True)
class EmptyOptions:
    """The options of a suite that takes none (``options_type = EmptyOptions``): any key is refused."""
