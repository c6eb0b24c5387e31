"""``parity run`` and a family command end DOUBTFUL (not OK) when a figure is invalid or
contended, say so in --json, and exit 1 for it only with --strict (the test-only
``DoubtfulSuite``: one invalid figure, one contended case, on the fake device)."""

from __future__ import annotations

import re
from pathlib import Path

import click
import orjson
import pytest
from click.testing import CliRunner

from parity.cli.main import cli
from parity.cli.suite_command import FamilyCommand, family_command
from parity.harness import registry

TESTS = Path(__file__).resolve().parents[1]
LAST = re.compile(r"DOUBTFUL: (\d+) figures cannot be trusted: contended (\d+), invalid 1")


def _doubtful_as_made(text: str) -> bool:
    """The suite's verdict: its 3 doubtful figures (one contended case, one invalid figure), or
    more where a busy machine made its other case contended too (every figure of it then counts)."""
    found = LAST.search(text)
    return found is not None and int(found[1]) >= 3 and int(found[2]) >= 3


def _counts_as_made(doubtful: dict) -> bool:
    return (doubtful["figures"] >= 3 and doubtful["by_reason"]["invalid"] == 1
            and doubtful["by_reason"]["contended"] >= 3 and set(doubtful["by_reason"]) == {"contended", "invalid"})


@pytest.fixture()
def plugin(monkeypatch: pytest.MonkeyPatch, db_path: Path) -> None:
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setenv("PARITY_PLUGINS", "tiny_suites:DoubtfulSuite")


@pytest.mark.parametrize(("strict", "status"), [([], 0), (["--strict"], 1)])
def test_run_ends_doubtful_and_strict_exits_one(plugin: None, tmp_path: Path, strict: list[str],
                                                status: int) -> None:
    out = tmp_path / "run.json"
    result = CliRunner().invoke(cli, ["run", "--device", "fake", "--suite", "doubtful", "--set", "doubtful.cases=2",
                                      "--no-report", "--json", str(out), *strict], standalone_mode=False)
    assert result.exception is None and result.return_value == status, result.output
    assert result.stdout.rstrip().splitlines()[-1].startswith("DOUBTFUL: ")
    assert _doubtful_as_made(result.stdout.rstrip().splitlines()[-1])
    assert "invalid: doubtful doubtful.fraction: the tiny rate is 250.0% of the measured ceiling P" in result.stdout
    doc = orjson.loads(out.read_bytes())
    assert doc["ok"] is True and _counts_as_made(doc["doubtful"])


@pytest.fixture()
def doubtful(monkeypatch: pytest.MonkeyPatch, db_path: Path) -> click.Command:
    monkeypatch.syspath_prepend(str(TESTS))
    from tiny_suites import DoubtfulSuite

    registry.register(DoubtfulSuite)
    yield family_command(FamilyCommand(suite="doubtful"), help="The doubtful suite.")
    registry.unregister("doubtful")


def test_a_family_command_ends_doubtful_and_strict_exits_one(doubtful: click.Command, tmp_path: Path) -> None:
    out = tmp_path / "d.json"
    result = CliRunner().invoke(doubtful, ["--cases", "2", "--device", "fake", "--json", str(out)],
                                standalone_mode=False)
    assert result.exception is None and result.return_value == 0, result.output
    last = result.stdout.rstrip().splitlines()[-1]
    assert "2 cases, 0 failed - DOUBTFUL: " in last and _doubtful_as_made(last)
    assert "invalid: doubtful.fraction: the tiny rate is 250.0%" in result.stdout
    doc = orjson.loads(out.read_bytes())
    assert _counts_as_made(doc["doubtful"])
    assert [g["code"] for f in doc["figures"] if f["name"] == "doubtful.fraction" for g in f["findings"]] == ["invalid"]
    strict = CliRunner().invoke(doubtful, ["--cases", "2", "--device", "fake", "--strict"], standalone_mode=False)
    assert strict.exception is None and strict.return_value == 1, strict.output
