"""The family commands: flags made from the options type, one run path with ``--resume``, one
JSON shape with the figures, and the same spelling of a shared option on every command."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import orjson
import pytest
from click.testing import CliRunner

from parity.cli.main import cli
from parity.cli.option_flags import given_options, option_params
from parity.cli.suite_command import FamilyCommand, family_command
from parity.harness import registry
from parity.harness.options import describe_options, option
from parity.model.errors import ParityError
from parity.store import Store
from tiny_suites import TinySuite
from verdicts import ok_or_contended, verdict_line

PAYLOAD_KEYS = {"schema_version", "kind", "run_id", "suite", "ok", "quick", "device", "options", "summary",
                "summary_error", "figures", "counts", "doubtful", "cases", "provenance"}


@dataclass(frozen=True, kw_only=True)
class Knobs:
    source: str = option("", help="input file", positional=True)
    min_bytes: int = option(1024, help="smallest size, B", minimum=1, aliases=("--min-size",))
    iterations: int = option(20, help="timed iterations", minimum=1, aliases=("--iters",))
    names: tuple[str, ...] = option(("a",), help="names", choices=("a", "b", "c"))
    flush: bool = option(True, help="flush first")
    filled: str | None = option(None, help="filled in by the command", command_line=False)


def _knobs_command() -> click.Command:
    def callback(**values: Any) -> None:
        ctx = click.get_current_context()
        click.echo(orjson.dumps(given_options(ctx, Knobs, values)).decode())

    return click.Command("knobs", callback=callback,
                         params=option_params(Knobs))


def _given(*args: str) -> tuple[dict[str, Any], str]:
    result = CliRunner().invoke(_knobs_command(), list(args))
    assert result.exit_code == 0, result.output
    return orjson.loads(result.stdout.strip().splitlines()[-1]), result.stderr


def test_flags_are_the_option_names_and_only_given_ones_count() -> None:
    given, _ = _given("in.csv")
    assert given == {"source": "in.csv"}  # nothing else given: the suite's defaults apply
    given, err = _given("in.csv", "--min-bytes", "64KiB", "--iterations", "3", "--names", "a,b", "--names", "c",
                        "--no-flush")
    assert given == {"source": "in.csv", "min_bytes": 65536, "iterations": 3, "names": ["a", "b", "c"],
                     "flush": False}
    assert err == ""


def test_old_spellings_work_hidden_with_a_note() -> None:
    given, err = _given("x", "--min-size", "1K", "--iters", "5")
    assert given == {"source": "x", "min_bytes": 1024, "iterations": 5}
    assert "--min-size is deprecated; use --min-bytes" in err and "--iters is deprecated; use --iterations" in err
    help_text = CliRunner().invoke(_knobs_command(), ["--help"]).output
    assert "--min-bytes SIZE" in help_text and "--iterations N" in help_text and "--flush / --no-flush" in help_text
    assert "--min-size" not in help_text and "--iters " not in help_text and "--filled" not in help_text
    assert "[default: 1024]" in help_text and "[default: a]" in help_text


def test_a_bad_value_names_the_flag() -> None:
    result = CliRunner().invoke(_knobs_command(), ["x", "--min-bytes", "lots"])
    assert result.exit_code == 2 and "--min-bytes" in result.output and "not a size" in result.output
    result = CliRunner().invoke(_knobs_command(), ["x", "--iterations", "0"])
    assert result.exit_code == 2 and "--iterations" in result.output


def _flags(help_text: str) -> set[str]:
    return set(re.findall(r"(?m)^\s+(--[a-z0-9-]+)", help_text))


def test_comm_and_membw_spell_shared_options_the_same() -> None:
    runner = CliRunner()
    membw = runner.invoke(cli, ["membw", "--help"])
    comm = runner.invoke(cli, ["comm", "collectives", "--help"])
    assert membw.exit_code == 0 and comm.exit_code == 0
    shared = {"--min-bytes", "--max-bytes", "--warmup-s", "--quick", "--device", "--resume", "--db", "--json"}
    assert shared <= _flags(membw.output) and shared <= _flags(comm.output)
    for old in ("--min-size", "--max-size", "--iters"):
        assert old not in _flags(membw.output) | _flags(comm.output)


@pytest.mark.parametrize("path", [("gemm",), ("membw",), ("latency",), ("kernels",), ("comm", "collectives"),
                                  ("comm", "moe"), ("comm", "overlap"), ("decode", "offline")],
                         ids=" ".join)
def test_every_option_of_the_suite_is_a_flag(path: tuple[str, ...]) -> None:
    suite = {"collectives": "collectives", "moe": "moe", "overlap": "overlap", "offline": "decode"}.get(
        path[-1], path[-1])
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0, result.output
    flags = _flags(result.output)
    for info in describe_options(registry.get_suite(suite).options_type):
        if info.command_line:
            assert info.flag in flags, f"parity {' '.join(path)} has no {info.flag}"
    assert {"--quick", "--resume", "--json", "--db", "--device"} <= flags


FAMILY_PATHS = {("gemm",): "gemm", ("membw",): "membw", ("latency",): "latency", ("kernels",): "kernels",
                ("comm", "collectives"): "collectives", ("comm", "moe"): "moe", ("comm", "overlap"): "overlap",
                ("decode", "offline"): "decode"}


@pytest.mark.parametrize("path", list(FAMILY_PATHS), ids=" ".join)
def test_old_spellings_are_the_options_type_aliases(path: tuple[str, ...]) -> None:
    command: click.Command = cli
    for name in path:
        assert isinstance(command, click.Group)
        command = command.get_command(click.Context(command), name)
    hidden = {opt for param in command.params if getattr(param, "hidden", False) for opt in param.opts}
    declared = {old for info in describe_options(registry.get_suite(FAMILY_PATHS[path]).options_type)
                for old in info.aliases}
    assert hidden == declared  # the command adds no spelling of its own
    if path[0] == "comm":
        assert "--iters" in hidden


@pytest.fixture()
def tiny(monkeypatch: pytest.MonkeyPatch) -> click.Command:
    registry.register(TinySuite)
    yield family_command(FamilyCommand(suite="tiny"), help="The tiny suite.")
    registry.unregister("tiny")


def test_one_json_shape_with_the_figures(tiny: click.Command, db_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    result = CliRunner().invoke(tiny, ["--device", "fake", "--cases", "3", "--json", str(out)])
    assert result.exit_code == 0, result.output
    doc = orjson.loads(out.read_bytes())
    assert set(doc) == PAYLOAD_KEYS and doc["kind"] == "tiny" and doc["suite"] == "tiny" and doc["ok"] is True
    assert doc["options"] == {"cases": 3} and {k: doc["counts"][k] for k in ("cases", "failed", "errors")} == {"cases": 3, "failed": 0, "errors": 0}
    assert 0 <= doc["counts"]["contended"] <= 3 and doc["counts"]["concurrent"] == 0
    assert [f["name"] for f in doc["figures"]] == ["tiny.median_rate"] and doc["summary"]["measured"] == 3
    assert len(doc["cases"]) == 3 and doc["provenance"]
    assert f"run {doc['run_id']}" in result.stdout and "tiny.median_rate" in result.stdout
    assert ok_or_contended(verdict_line(result.stdout, f"run {doc['run_id']}: 3 cases, 0 failed - "))


def test_a_failed_check_is_failed_and_exit_1(tiny: click.Command, db_path: Path) -> None:
    result = CliRunner().invoke(tiny, ["--device", "fake", "--cases", "2", "--wrong", "case-001"],
                                standalone_mode=False)
    assert result.return_value == 1 and result.stdout.rstrip().endswith("2 cases, 1 failed - FAILED")


def _interrupted_run(db_path: Path, *, cases: int, stop_at: str) -> str:
    """A run of the tiny suite killed (Ctrl-C) as it is about to measure ``stop_at``."""
    from parity.device import get_device
    from parity.harness.runner import run_suites

    def progress(event: Any) -> None:
        if event.phase == "case" and event.key == stop_at:
            raise KeyboardInterrupt

    with Store.open(db_path) as store, pytest.raises(KeyboardInterrupt):
        run_suites(store, device=get_device("fake"), suites=[registry.get_suite("tiny")],
                   options={"tiny": {"cases": cases}}, progress=progress)
    with Store.open(db_path) as store:
        return store.list_runs()[0].run_id


def test_resume_measures_only_what_is_missing(tiny: click.Command, db_path: Path, tmp_path: Path) -> None:
    run_id = _interrupted_run(db_path, cases=4, stop_at="case-002")
    refused = CliRunner().invoke(tiny, ["--resume", run_id, "--cases", "5"])
    assert refused.exit_code != 0 and "drop --cases" in str(refused.exception)
    out = tmp_path / "r.json"
    result = CliRunner().invoke(tiny, ["--resume", run_id, "--json", str(out)])
    assert result.exit_code == 0, result.output
    doc = orjson.loads(out.read_bytes())
    assert doc["run_id"] == run_id and doc["counts"]["cases"] == 4 and doc["ok"] is True
    assert "2 measured" not in result.stdout  # the view, not the progress, is on stdout
    again = CliRunner().invoke(tiny, ["--resume", run_id])
    assert again.exit_code == 0 and "nothing to resume" in again.output


def test_resume_refuses_a_run_of_other_suites(tiny: click.Command, db_path: Path) -> None:
    result = CliRunner().invoke(cli, ["run", "--device", "fake", "--suite", "tiny", "--no-report",
                                      "--set", "tiny.cases=1"],
                                env={"PARITY_PLUGINS": "tiny_suites:TinySuite"})
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(cli, ["membw", "--resume", "latest"])
    assert result.exit_code != 0 and "not membw alone" in str(result.exception)


@pytest.mark.torch
@pytest.mark.slow
def test_membw_quick_json_holds_the_figures(db_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    result = CliRunner().invoke(cli, ["membw", "--quick", "--device", "cpu", "--ops", "copy",
                                      "--max-bytes", "16KiB", "--json", str(out)])
    assert result.exit_code == 0, result.output
    doc = orjson.loads(out.read_bytes())
    assert set(doc) == PAYLOAD_KEYS and doc["kind"] == "membw"
    names = {f["name"] for f in doc["figures"]}
    assert "membw.ceiling" in names and all(f["unit"] for f in doc["figures"])
    assert doc["options"]["max_bytes"] == 16 * 1024 and doc["summary"]
    assert ok_or_contended(verdict_line(result.stdout, f"run {doc['run_id']}: "))


def test_ceiling_from_latest_counts_only_gemm_sweeps(db_path: Path) -> None:
    from parity.cli.gemm import _latest_gemm_run

    with Store.open(db_path) as store:
        sweep = store.create_run(config={"suites": ["gemm"]}, provenance={}).run_id
        store.create_run(config={"suites": ["membw"]}, provenance={})
        assert _latest_gemm_run(store, "latest") == sweep  # the latest run measured membw
        assert _latest_gemm_run(store, sweep) == sweep
        with pytest.raises(ParityError, match="1 runs with a gemm sweep"):
            _latest_gemm_run(store, "latest~1")


def test_latency_pages_both_is_the_old_word_for_base_and_thp() -> None:
    from parity.cli.latency import _pages_both

    assert _pages_both({"pages": ("both",)}) == {"pages": ("base", "thp")}
    assert _pages_both({"pages": ("thp", "both")}) == {"pages": ("thp", "base")}
    assert _pages_both({"estimator": "min"}) == {"estimator": "min"}


def test_a_family_without_figures_says_so() -> None:
    from parity.cli.family_view import figures_table

    assert "no figures" in str(figures_table("x", []))


class TinyView:
    """A family view as ``parity.report.views.View`` asks: section, terminal and charts."""

    section = ("tiny", "Tiny")

    def terminal(self, summary: dict[str, Any], limit: int = 40) -> str:
        return f"tiny view: {summary['measured']} measured, limit {limit}"

    def charts(self, runs: list[Any]) -> list[Any]:
        return []


def test_the_family_view_draws_the_summary(db_path: Path) -> None:
    from parity.model.family import Family, register_family, unregister_family

    registry.register(TinySuite)
    register_family(Family(name="tiny", suite="tiny_suites:TinySuite", view="test_cli_family_commands:TinyView"))
    try:
        spec = FamilyCommand(suite="tiny", extra=(click.Option(["--limit"], type=int, default=40),))
        command = family_command(spec, help="The tiny suite.")
        result = CliRunner().invoke(command, ["--device", "fake", "--cases", "2", "--limit", "3"])
        assert result.exit_code == 0, result.output
        assert "tiny view: 2 measured, limit 3" in result.stdout and "tiny.median_rate" not in result.stdout
        run_id = re.search(r"run (\S+):", result.stdout).group(1)
        again = CliRunner().invoke(command, ["--resume", run_id, "--limit", "5"])  # a display flag is kept
        assert again.exit_code == 0 and "nothing to resume" in again.output
    finally:
        unregister_family("tiny")
        registry.unregister("tiny")


def test_a_family_command_lists_its_cases_warnings_by_code() -> None:
    from parity.cli.family_view import warning_line

    cases = [{"findings": [{"code": "one-rank", "severity": "warning"}, {"code": "outliers", "severity": "info"}]},
             {"findings": [{"code": "one-rank", "severity": "warning"}, {"code": "high-variance", "severity": "warning"}]},
             {"findings": []}]
    assert warning_line(cases) == "warnings: one-rank x2, high-variance x1"
    assert warning_line([{"findings": [{"code": "outliers", "severity": "info"}]}]) == ""
