"""Typed suite options: parsed once at the edge, refused loudly when wrong, stored as asked."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from click.testing import CliRunner

from parity.families.gemm.options import GemmOptions, GemmPlan
from parity.families.latency.options import LatencyOptions
from parity.families.membw.options import MembwOptions
from parity.harness.options import describe_options, option, options_to_dict, parse_options
from parity.cli.main import cli
from parity.model.errors import ParityError


@dataclass(frozen=True, kw_only=True)
class Sample:
    count: int = option(3, help="how many", minimum=1)
    rate: float | None = option(None, help="per second", minimum=0.0, exclusive_minimum=True)
    names: tuple[str, ...] = option(("a",), help="names", choices=("a", "b", "c"))
    flag: bool = option(False, help="on or off")
    mode: str = option("x", help="mode", choices=("x", "y"))


def test_values_are_coerced_to_the_declared_types() -> None:
    parsed = parse_options(Sample, {"count": "7", "rate": 2, "names": "b, c", "flag": "true", "mode": "y"},
                           suite="s")
    assert parsed == Sample(count=7, rate=2.0, names=("b", "c"), flag=True, mode="y")
    assert parse_options(Sample, {"names": ["a", "c"], "rate": None}, suite="s").names == ("a", "c")
    assert parse_options(Sample, Sample(count=2), suite="s") == Sample(count=2)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"cuont": 2}, r"unknown option s\.cuont; did you mean s\.count\? s options: count, rate, names, flag, mode"),
        ({"zzz": 1}, r"unknown option s\.zzz; s options: count"),
        ({"count": 0}, r"option s\.count=0 must be at least 1"),
        ({"count": 2.5}, r"option s\.count=2\.5 is not an integer"),
        ({"count": True}, r"option s\.count=True is not an integer"),
        ({"rate": 0}, r"option s\.rate=0\.0 must be greater than 0"),
        ({"rate": "fast"}, r"option s\.rate='fast' is not a number"),
        ({"names": "a,d"}, r"option s\.names='d' is not one of a, b, c"),
        ({"flag": "maybe"}, r"option s\.flag='maybe' is not a bool"),
        ({"mode": "z"}, r"option s\.mode='z' is not one of x, y"),
        ({"count": None}, r"option s\.count=null is not allowed"),
        ({"mode": ["x"]}, r"option s\.mode=\['x'\] is not text"),
    ],
)
def test_bad_options_are_one_line_errors_naming_key_and_value(raw: dict, message: str) -> None:
    with pytest.raises(ParityError, match=message) as caught:
        parse_options(Sample, raw, suite="s")
    assert "\n" not in str(caught.value)


def test_stored_form_keeps_only_what_was_asked_and_reads_back() -> None:
    asked = Sample(count=5, names=("b",))
    stored = options_to_dict(asked)
    assert stored == {"count": 5, "names": ["b"]}
    assert parse_options(Sample, stored, suite="s") == asked
    assert options_to_dict(Sample()) == {}


def test_describe_lists_every_key_with_type_and_default() -> None:
    lines = [i.line() for i in describe_options(Sample)]
    assert lines[0] == "count=int: how many [default: 3]"
    assert lines[1] == "rate=number: per second [default: mode default]"
    assert lines[2] == "names=list of str (a|b|c): names [default: a]"


def test_builtin_suites_declare_typed_options() -> None:
    assert parse_options(GemmOptions, {"dtype": "bfloat16", "backends": "matmul,linear,matmul"}, suite="gemm") == \
        GemmOptions(dtype="bf16", backends=("matmul", "linear"))
    with pytest.raises(ParityError, match="unknown gemm dtype 'int3'"):
        parse_options(GemmOptions, {"dtype": "int3"}, suite="gemm")
    plan = GemmPlan.resolve(GemmOptions(budget_s=0.5), quick=True, device_type="cpu")
    assert (plan.budget_s, plan.warmup_s, plan.ceiling_budget_s) == (0.5, 0.02, 20.0)
    assert parse_options(MembwOptions, {"ops": "copy,triad", "max_bytes": 4096}, suite="membw").ops == ("copy", "triad")
    assert parse_options(LatencyOptions, {"pages": "base"}, suite="latency").pages == ("base",)


def test_run_refuses_an_unknown_key_naming_the_right_one(tmp_path) -> None:
    """The whole command, as a user runs it: exit 2, one line on stderr, nothing measured."""
    import subprocess
    import sys

    db = tmp_path / "r.sqlite"
    done = subprocess.run([sys.executable, "-m", "parity", "run", "--db", str(db), "--set", "gemm.dtypes=bf16"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("parity: unknown option gemm.dtypes; did you mean gemm.dtype?") and "budget_s" in line
    if db.exists():  # the store may be opened, but no run was started
        import sqlite3

        assert sqlite3.connect(db).execute("SELECT count(*) FROM runs").fetchone()[0] == 0


def test_run_help_lists_every_suite_option_key() -> None:
    result = CliRunner().invoke(cli, ["run", "--help"])
    assert result.exit_code == 0
    for key in ("gemm.dtype", "gemm.backends", "membw.ops", "membw.max_bytes", "latency.pages", "latency.estimator"):
        assert key in result.output
    assert "--set gemm.dtype=fp32" in result.output


def test_command_line_metadata_is_described() -> None:
    from parity.harness.options import flag_name

    @dataclass(frozen=True, kw_only=True)
    class Flags:
        min_bytes: int = option(1, help="smallest", aliases=("--min-size",))
        source: str = option("", help="input", positional=True)
        filled: str | None = option(None, help="set by the command", command_line=False)

    infos = {i.key: i for i in describe_options(Flags)}
    assert infos["min_bytes"].flag == "--min-bytes" == flag_name("min_bytes")
    assert infos["min_bytes"].aliases == ("--min-size",) and infos["source"].positional
    assert not infos["filled"].command_line and infos["min_bytes"].command_line
    with pytest.raises(TypeError, match="starting with --"):
        option(1, help="x", aliases=("min-size",))
