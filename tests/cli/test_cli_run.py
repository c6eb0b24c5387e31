"""``parity run`` and ``parity runs`` end to end: the fake device, the test-only ``tiny`` suite,
a real SQLite store, JSON documents and exit statuses as a user sees them."""

from __future__ import annotations

import csv
import io
import sqlite3
from pathlib import Path

import orjson
import pytest

from parity.harness.runner import ProgressEvent
from parity.cli.main import main
from parity.cli.progress import ProgressRenderer, format_duration
from parity.cli.run import parse_settings
from parity.model import ParityError
from verdicts import ok_or_contended, verdict_line

TESTS = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def tiny_plugin(monkeypatch: pytest.MonkeyPatch, db_path: Path) -> None:
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setenv("PARITY_PLUGINS", "tiny_suites:TinySuite")


def parity(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run the real entry point; (exit status, stdout, stderr)."""
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def _json(path: Path) -> dict:
    return orjson.loads(path.read_bytes())


def test_run_ok_prints_summary_and_writes_json(capsys, tmp_path: Path, db_path: Path) -> None:
    status, out, err = parity(
        capsys,
        "run",
        "--device",
        "fake",
        "--suite",
        "tiny",
        "--set",
        "tiny.cases=3",
        "--json",
        str(tmp_path / "run.json"),
    )
    assert status == 0, err
    assert ok_or_contended(verdict_line(out, "(3 cases, 0 not ok)")) and "tiny" in out
    assert f"(store {db_path})" in err and "[3/3 100%] tiny/case-002 ok" in err
    doc = _json(tmp_path / "run.json")
    assert doc["schema_version"] >= 1 and doc["kind"] == "run" and doc["ok"] is True
    assert [c["key"] for c in doc["cases"]] == ["case-000", "case-001", "case-002"]
    assert doc["run"]["config"]["options"] == {"tiny": {"cases": 3}}
    assert doc["run"]["provenance"]["device"] and doc["db"] == str(db_path)


def test_run_failed_exits_1_and_names_the_case(capsys) -> None:
    status, out, _ = parity(
        capsys,
        "run",
        "--device",
        "fake",
        "--suite",
        "tiny",
        "--quick",
        "--set",
        'tiny.raise_on=["case-001"]',
    )
    assert status == 1
    assert "tiny/case-001: RuntimeError: boom at case-001" in out
    # on a busy machine the counts go on with the contended figures: "(4 cases, 1 not ok; 3 figures ...)"
    assert verdict_line(out, "(4 cases, 1 not ok").startswith("FAILED (4 cases, 1 not ok")


def test_run_json_to_stdout_keeps_tables_on_stderr(capsys) -> None:
    status, out, err = parity(
        capsys, "run", "--device", "fake", "--suite", "tiny", "--quick", "--json", "-"
    )
    assert status == 0
    assert orjson.loads(out)["ok"] is True
    assert ok_or_contended(verdict_line(err, "(4 cases, 0 not ok)"))


def test_user_errors_are_one_line_with_status_2(capsys, tmp_path: Path) -> None:
    cases = [
        (
            ["run", "--suite", "nope", "--device", "fake"],
            "parity: unknown suite 'nope'; known suites: ",
        ),
        (["run", "--resume", "nope"], "parity: no run 'nope' in "),
        (
            ["run", "--device", "fake", "--set", "cases=3"],
            "parity: --set 'cases=3': expected SUITE.KEY=VALUE",
        ),
        (["runs", "show", "missing"], "parity: no run 'missing' in "),
        (
            ["run", "--device", "fake", "--set", "gemmm.budget_s=1"],
            "parity: --set names unknown suite 'gemmm'",
        ),
    ]
    for args, prefix in cases:
        status, _, err = parity(capsys, *args)
        assert status == 2, args
        assert err.startswith(prefix) and err.count("\n") == 1, err

    bad = tmp_path / "garbage.sqlite"
    bad.write_bytes(b"\x00garbage" * 500)
    status, _, err = parity(capsys, "runs", "list", "--db", str(bad))
    assert status == 2 and str(bad) in err and err.count("\n") == 1


def test_resume_refuses_flags_that_change_the_run(capsys) -> None:
    assert parity(capsys, "run", "--device", "fake", "--suite", "tiny", "--quick")[0] == 0
    status, _, err = parity(capsys, "run", "--resume", "latest", "--suite", "tiny", "--quick")
    assert status == 2
    assert "continues run" in err and "drop --suite, --quick" in err


def test_resume_of_a_finished_run_measures_nothing(capsys, tmp_path: Path) -> None:
    assert parity(capsys, "run", "--device", "fake", "--suite", "tiny", "--quick")[0] == 0
    status, out, _ = parity(capsys, "run", "--resume", "latest", "--json", str(tmp_path / "r.json"))
    assert status == 0 and "is complete: nothing to resume" in out
    assert parity(capsys, "runs", "show", "latest", "--json", str(tmp_path / "s.json"))[0] == 0
    doc = _json(tmp_path / "s.json")
    assert "resumes" not in doc["run"]["provenance"]  # not counted as a resume
    assert doc["state"] == "complete"


def test_runs_list_show_export(capsys, tmp_path: Path) -> None:
    assert parity(capsys, "run", "--device", "fake", "--suite", "tiny", "--quick")[0] == 0
    status, out, _ = parity(capsys, "runs", "list", "--json", str(tmp_path / "list.json"))
    (entry,) = _json(tmp_path / "list.json")["runs"]
    run_id = entry["run_id"]
    assert status == 0 and run_id in out and (entry["cases"], entry["not_ok"]) == (4, 0)

    status, out, _ = parity(
        capsys, "runs", "show", run_id[:15], "--json", str(tmp_path / "show.json")
    )
    shown = _json(tmp_path / "show.json")
    assert status == 0 and f"run {run_id} on fake (complete)" in out and ok_or_contended(verdict_line(out, "(4 cases, 0 not ok)"))
    assert "case-000" in out and "IQR/median" in out  # the per-case table
    assert entry["mode"] == "quick" and entry["state"] == "complete"
    assert (
        shown["kind"] == "run" and len(shown["cases"]) == 4 and "host" in shown["run"]["provenance"]
    )

    for fmt in ("json", "csv", "parquet"):
        target = tmp_path / f"export.{fmt}"
        status, _, err = parity(
            capsys,
            "runs",
            "export",
            run_id,
            "--format",
            fmt,
            "--output",
            str(target),
            "--json",
            str(tmp_path / "exp.json"),
        )
        assert status == 0, err
        assert _json(tmp_path / "exp.json") | {} == {
            "schema_version": 1,
            "kind": "run-export-result",
            "run_id": run_id,
            "format": fmt,
            "path": str(target),
            "cases": 4,
        }
    assert [r["key"] for r in csv.DictReader((tmp_path / "export.csv").open())][-1] == "case-003"
    status, out, _ = parity(capsys, "runs", "export", "latest", "--format", "csv", "--output", "-")
    assert status == 0 and out.splitlines()[0].startswith("run_id,suite,key,ok")


def test_store_path_comes_from_db_option_over_env(capsys, tmp_path: Path, db_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    assert (
        parity(capsys, "run", "--device", "fake", "--suite", "tiny", "--quick", "--db", str(other))[
            0
        ]
        == 0
    )
    assert sqlite3.connect(other).execute("SELECT count(*) FROM cases").fetchone()[0] == 4
    assert not db_path.exists()


def test_parse_settings_reads_json_values() -> None:
    assert parse_settings(
        ('gemm.dtypes=["bf16","fp32"]', "gemm.budget_s=0.5", "membw.label=x y")
    ) == {"gemm": {"dtypes": ["bf16", "fp32"], "budget_s": 0.5}, "membw": {"label": "x y"}}
    with pytest.raises(ParityError, match="expected SUITE.KEY=VALUE"):
        parse_settings(("gemm=3",))


def test_progress_plain_lines_carry_eta() -> None:
    stream = io.StringIO()
    with ProgressRenderer(label="parity run", stream=stream, tty=False) as progress:
        progress(ProgressEvent(phase="start", done=2, total=10, skipped=2))
        progress(ProgressEvent(phase="case", done=2, total=10, suite="gemm", key="m1"))
        progress(
            ProgressEvent(
                phase="measured",
                done=3,
                total=10,
                suite="gemm",
                key="m1",
                ok=True,
                elapsed_s=4.0,
                eta_s=187.0,
            )
        )
        progress.update(done=4, total=10, label="step 4", ok=False, eta_s=None)
    assert stream.getvalue().splitlines() == [
        "parity run: 10 cases (2 already stored, skipped)",
        "[ 3/10  30%] gemm/m1 ok  elapsed 4s  eta 3m07s",
        "[ 4/10  40%] step 4 FAILED  elapsed 0s  eta ?",
    ]


class _Clock:
    """Seconds that move only when a test says so."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_plain_updates_of_short_work_print_only_failures() -> None:
    stream, clock = io.StringIO(), _Clock()
    with ProgressRenderer(label="reading", stream=stream, tty=False, min_interval_s=2.0, clock=clock) as p:
        for done in range(1, 101):
            clock.now += 0.01  # one second in all: under the interval
            p.update(done=done, total=100, label="trace.json", ok=False if done == 50 else None)
    lines = stream.getvalue().splitlines()
    assert [line.split("]")[0] for line in lines] == ["[ 50/100  50%"]
    assert "FAILED" in lines[0]


def test_plain_updates_of_long_work_are_throttled_and_the_end_shows() -> None:
    stream, clock = io.StringIO(), _Clock()
    with ProgressRenderer(label="reading", stream=stream, tty=False, min_interval_s=2.0, clock=clock) as p:
        for done in range(1, 11):
            clock.now += 0.75  # 7.5 s in all: lines at 2.25 s, 4.5 s, 6.75 s and the end
            p.update(done=done, total=10, label="trace.json")
    assert [line.split("]")[0] for line in stream.getvalue().splitlines()] == [
        "[ 3/10  30%", "[ 6/10  60%", "[ 9/10  90%", "[10/10 100%",
    ]


def test_plain_update_after_a_long_silence_prints_the_end() -> None:
    stream, clock = io.StringIO(), _Clock()
    with ProgressRenderer(label="reading", stream=stream, tty=False, min_interval_s=2.0, clock=clock) as p:
        p.update(done=1, total=2, label="trace.json")
        clock.now += 5.0
        p.update(done=2, total=2, label="trace.json")
    assert [line.split("]")[0] for line in stream.getvalue().splitlines()] == ["[2/2 100%"]


def test_plain_updates_print_a_repeated_count_once() -> None:
    stream = io.StringIO()
    with ProgressRenderer(label="reading", stream=stream, tty=False, min_interval_s=0) as p:
        p.update(done=100, total=100, label="trace.json")
        p.update(done=100, total=100, label="trace.json")
    assert len(stream.getvalue().splitlines()) == 1


def test_progress_bar_on_a_terminal_shows_eta() -> None:
    stream = io.StringIO()
    with ProgressRenderer(label="parity run", stream=stream, tty=True) as progress:
        progress(
            ProgressEvent(
                phase="measured",
                done=5,
                total=10,
                suite="gemm",
                key="m1",
                ok=True,
                elapsed_s=1.0,
                eta_s=65.0,
            )
        )
    text = stream.getvalue()
    assert "5/10" in text and "eta 1m05s" in text and "gemm/m1" in text


def test_format_duration() -> None:
    assert [format_duration(s) for s in (None, -1, 0.4, 59.6, 61, 3599, 3600, 7500)] == [
        "?",
        "?",
        "0s",
        "1m00s",
        "1m01s",
        "59m59s",
        "1h00m",
        "2h05m",
    ]


def test_ctrl_c_keeps_the_run_resumable_and_says_how(capsys, db_path: Path) -> None:
    status, _, err = parity(
        capsys,
        "run",
        "--device",
        "fake",
        "--suite",
        "tiny",
        "--quick",
        "--set",
        "tiny.interrupt_at=case-002",
    )
    assert status == 130
    (run_id,) = {r[0] for r in sqlite3.connect(db_path).execute("SELECT id FROM runs")}
    assert f"parity: continue with: parity run --resume {run_id}" in err
    assert err.rstrip().splitlines()[-1] in ("parity: interrupted", "parity: aborted")
    stored = sqlite3.connect(db_path).execute("SELECT key FROM cases ORDER BY key").fetchall()
    assert stored == [("case-000",), ("case-001",)]
    status, out, _ = parity(capsys, "runs", "show", run_id)
    assert status == 0
    assert f"INCOMPLETE (2 cases, 0 not ok); continue with parity run --resume {run_id}" in out


def test_every_suite_on_one_rank_leaves_out_the_pair_preflight_and_says_so(
        capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, db_path: Path) -> None:
    # "parity run --quick" (no --suite) takes every registered suite; here tiny and the
    # preflight, which times pairs of ranks: on one rank it is left out, not the run's end
    from parity.harness import registry

    monkeypatch.setattr(registry, "names", lambda: ["tiny", "preflight"])
    status, out, err = parity(capsys, "run", "--device", "fake", "--quick", "--no-report",
                              "--json", str(tmp_path / "run.json"))
    assert status == 0, err
    why = "it needs 2 ranks or more and this run has 1 (parity run --ranks 2 --suite preflight)"
    assert f"parity: preflight left out: {why}" in err
    assert f"left out: preflight: {why}" in " ".join(out.split())
    doc = _json(tmp_path / "run.json")
    assert doc["run"]["config"]["suites"] == ["tiny"] and doc["run"]["config"]["left_out"] == {"preflight": why}
    # named on one rank, it is the user's request: refused with the reason
    status, _, err = parity(capsys, "run", "--device", "fake", "--quick", "--no-report", "--suite", "preflight")
    assert status == 2 and "the preflight times pairs of ranks and found 1" in err
