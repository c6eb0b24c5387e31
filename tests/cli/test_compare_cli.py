"""``parity compare`` end to end: two real quick CPU runs that differ in dtype and thread count,
Markdown that parses as a table, two real Kineto traces whose compared figures equal each
trace's own analysis, and stored trace analyses with their digest."""

from __future__ import annotations

import hashlib
from pathlib import Path

import orjson
import pytest
from markdown_it import MarkdownIt

from parity.cli.main import main

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def parity(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def _gemm_run(capsys, tmp_path: Path, dtype: str) -> None:
    shapes = tmp_path / "shapes.csv"
    shapes.write_text("32,32,32\n64,64,64\n")
    status, _, err = parity(capsys, "run", "--quick", "--device", "cpu", "--suite", "gemm",
                            "--set", f"gemm.shapes={shapes}", "--set", f"gemm.dtype={dtype}",
                            "--set", "gemm.ceiling_budget_s=0.2", "--set", "gemm.budget_s=0.01",
                            "--set", "gemm.warmup_s=0.002")
    assert status in (0, 1), err


def _membw_run(capsys, threads: int) -> None:
    status, _, err = parity(capsys, "run", "--quick", "--device", "cpu", "--suite", "membw",
                            "--set", "membw.ops=[\"copy\"]", "--set", "membw.min_bytes=4096",
                            "--set", "membw.max_bytes=8192", "--set", f"membw.threads={threads}",
                            "--set", "membw.budget_s=0.005", "--set", "membw.warmup_s=0.002")
    assert status in (0, 1), err


def _markdown_tables(text: str) -> list[list[str]]:
    """The header cells of every table the Markdown renders (CommonMark with GitHub tables)."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    tables, inside = [], False
    for token in tokens:
        if token.type == "thead_open":
            tables.append([])
            inside = True
        elif token.type == "thead_close":
            inside = False
        elif inside and token.type == "inline":
            tables[-1].append(token.content)
    return tables


def test_two_cpu_runs_differing_in_dtype_list_it_and_render_markdown(capsys, tmp_path: Path, db_path: Path) -> None:
    _gemm_run(capsys, tmp_path, "bf16")
    _gemm_run(capsys, tmp_path, "fp32")
    md, js = tmp_path / "cmp.md", tmp_path / "cmp.json"
    status, out, err = parity(capsys, "compare", "latest~1", "latest", "--markdown", str(md), "--json", str(js))
    assert status == 0, err
    doc = orjson.loads(js.read_bytes())
    assert doc["kind"] == "runs" and doc["schema_version"] >= 1 and len(doc["runs"]) == 2
    audit = {a["condition"]: a for a in doc["audit"]}
    assert audit["dtypes"]["values"] == ["bf16", "fp32"]
    assert audit["option gemm.dtype"]["values"] == [None, "fp32"]  # bf16 is the default, not stored
    assert "case sets" in audit and not any(a["refused"] for a in doc["audit"])
    assert "dtypes" in out
    tables = _markdown_tables(md.read_text())
    assert ["suite", "case", *(r["label"] for r in doc["runs"]), "ratio", "marked"] in tables
    assert ["condition", "values", "why it matters", "refused"] in tables


def test_two_cpu_runs_differing_in_threads_list_it(capsys, db_path: Path, tmp_path: Path) -> None:
    _membw_run(capsys, 1)
    _membw_run(capsys, 2)
    js = tmp_path / "cmp.json"
    assert parity(capsys, "compare", "latest~1", "latest", "--json", str(js))[0] == 0
    doc = orjson.loads(js.read_bytes())
    audit = {a["condition"]: a["values"] for a in doc["audit"]}
    assert audit["option membw.threads"] == [1, 2]
    assert doc["cases"] and all(c["ratio"] and c["ratio"] > 0 for c in doc["cases"])


def test_compare_user_errors_are_one_line(capsys, db_path: Path, tmp_path: Path, traces_dir: Path) -> None:
    trace = traces_dir / "kineto/hta/trace_compare/base/base.json.gz"
    for args, expected in ((["compare", "latest"], "at least two runs"),
                           (["compare", "latest", str(trace)], "runs or traces, not both"),
                           (["compare", "latest~x", "latest"], "latest~N"),
                           # a path that names nothing is said to be one, not looked up as a run
                           (["compare", str(tmp_path / "gone.json.gz"), str(trace)], "gone.json.gz: no such file"),
                           (["trace", "compare", str(trace), "rank0_ascend_pt"], "rank0_ascend_pt: no such file")):
        status, out, err = parity(capsys, *args)
        assert status == 2 and expected in err and err.count("\n") == 1, err
        assert "reading" not in err + out  # refused before the first trace is read


def _analysis(capsys, path: Path, out: Path, *extra: str) -> dict:
    status, _, err = parity(capsys, "trace", "analyze", str(path), "--json", str(out), *extra)
    assert status == 0, err
    return orjson.loads(out.read_bytes())


def test_trace_compare_figures_equal_each_traces_own_analysis(capsys, tmp_path: Path, db_path: Path,
                                                             traces_dir: Path) -> None:
    a = traces_dir / "kineto/hta/trace_compare/base/base.json.gz"
    b = traces_dir / "kineto/hta/trace_diff/control/control.json.gz"
    own = [_analysis(capsys, a, tmp_path / "a.json"), _analysis(capsys, b, tmp_path / "b.json")]
    js = tmp_path / "cmp.json"
    status, _, err = parity(capsys, "compare", str(a), str(b), "--json", str(js), "--markdown", str(tmp_path / "t.md"))
    assert status == 0, err
    doc = orjson.loads(js.read_bytes())
    assert doc["kind"] == "traces"
    assert [r["window"] for r in doc["runs"]] == [o["ranks"][0]["window"] for o in own]
    rows = {(c["suite"], c["key"]): c for c in doc["cases"]}
    # base's window is its one steady step, control's several: every time is compared per step
    steps = [o["ranks"][0]["window"]["step_count"] for o in own]
    assert doc["times"] == "per step" and doc["steps"] == steps and steps[0] != steps[1]
    for i, analysis in enumerate(own):
        n = steps[i]
        for category in analysis["categories"]:
            row = rows[("category", category["category"])]
            assert row["values"][i] == category["time_us"] / n and row["shares"][i] == category["share_of_busy"]
        first_rank = analysis["ranks"][0]["rank"]
        for stream in (s for s in analysis["streams"] if s["rank"] == first_rank):
            where = {"device": stream["device"], "stream": stream["stream"]}
            row = next(c for c in doc["cases"] if c["suite"] == "stream" and c["streams"][i] == where)
            assert row["values"][i] == stream["busy_us"] / n and row["shares"][i] == stream["share_of_summed"]
            assert row["busy_fraction"][i] == stream["busy_fraction"]
        assert rows[("device", "all streams")]["values"][i] == analysis["device"]["busy_us"] / n
        assert rows[("compute-communication", "compute")]["values"][i] == analysis["compute_communication"]["compute_us"] / n
        busy = [f for f in doc["summary"] if f["name"] == "trace.device.busy_fraction"][i]
        assert busy["value"] == analysis["device"]["busy_fraction"]
    assert _markdown_tables((tmp_path / "t.md").read_text())


def test_stored_trace_analyses_keep_path_digest_and_compare(capsys, tmp_path: Path, db_path: Path,
                                                           traces_dir: Path) -> None:
    a = traces_dir / "kineto/hta/trace_compare/base/base.json.gz"
    b = traces_dir / "kineto/hta/trace_compare/test/test.json.gz"
    first = _analysis(capsys, a, tmp_path / "a.json", "--store", "--label", "base")
    second = _analysis(capsys, b, tmp_path / "b.json", "--store", "--window", "span")
    assert first["stored"]["sha256"] == hashlib.sha256(a.read_bytes()).hexdigest()
    assert second["window"]["source"] == "user-span"
    js = tmp_path / "cmp.json"
    status, _, err = parity(capsys, "compare", first["stored"]["id"], "trace:latest", "--json", str(js))
    assert status == 0, err
    doc = orjson.loads(js.read_bytes())
    assert [r["label"] for r in doc["runs"]] == ["A: base", "B: test.json.gz"]
    assert [r["sha256"] for r in doc["runs"]] == [first["stored"]["sha256"], second["stored"]["sha256"]]
    assert doc["runs"][0]["paths"] == [str(a.resolve())]
    memory = next(c for c in doc["cases"] if c["key"] == "memory")
    assert memory["values"] == [next(c["time_us"] for c in x["categories"] if c["category"] == "memory")
                                for x in (first, second)]
    assert any(e["condition"] == "window choice" for e in doc["audit"])
    status, _, err = parity(capsys, "compare", "trace:latest~1", "trace:latest", "--json", str(js))
    assert status == 0, err  # trace:latest~1, as runs' latest~1
    assert [r["label"] for r in orjson.loads(js.read_bytes())["runs"]] == ["A: base", "B: test.json.gz"]


def test_runs_import_cli_round_trip_and_one_line_refusals(capsys, tmp_path: Path, db_path: Path) -> None:
    _membw_run(capsys, 1)
    exported = tmp_path / "run.json"
    assert parity(capsys, "runs", "export", "latest", "--format", "json", "--output", str(exported))[0] == 0
    other = tmp_path / "other.sqlite"
    status, out, err = parity(capsys, "runs", "import", str(exported), "--db", str(other), "--json", "-")
    assert status == 0, err
    imported = orjson.loads(out)
    assert imported["kind"] == "run-import" and imported["run_id"] == imported["original_id"]
    newer = tmp_path / "newer.json"
    newer.write_bytes(exported.read_bytes().replace(b'"schema_version": 1', b'"schema_version": 99', 1))
    foreign = tmp_path / "foreign.json"
    foreign.write_bytes(orjson.dumps({"schema_version": 1, "kind": "trace-analysis"}))
    for path, expected in ((exported, "already in"), (newer, "schema_version 99 is newer"),
                           (foreign, "'trace-analysis' document, not a 'run-export'")):
        status, _, err = parity(capsys, "runs", "import", str(path), "--db", str(other))
        assert status == 2 and str(path) in err and expected in err and err.count("\n") == 1, err
    status, out, err = parity(capsys, "runs", "import", str(exported), "--as-new", "--db", str(other), "--json", "-")
    assert status == 0, err
    copy = orjson.loads(out)["run_id"]
    js = tmp_path / "self.json"  # the import and its copy: the same measurement under two ids
    assert parity(capsys, "compare", imported["run_id"], copy, "--db", str(other), "--json", str(js))[0] == 0
    doc = orjson.loads(js.read_bytes())
    # nothing differs; contention is listed whenever a side was measured on a busy machine (this
    # test's run is, when other tests run beside it), equal shares or not
    assert [e for e in doc["audit"] if e["condition"] != "contention"] == []
    assert all(c["ratio"] == pytest.approx(1.0) for c in doc["cases"] if c["ratio"])


def test_report_compare_draws_the_comparison_of_two_stored_runs(tmp_path: Path) -> None:
    """``parity report A B --compare`` runs compare itself; its ratios reach the report's data."""
    pytest.importorskip("vl_convert")
    import orjson
    from click.testing import CliRunner
    from test_export_figures import _stored_gemm_run

    from parity.cli.main import cli
    from parity.store import Store

    db = tmp_path / "r.sqlite"
    with Store.open(db) as store:
        a = _stored_gemm_run(store, (0.5, 0.8, 0.5))
        b = _stored_gemm_run(store, (0.25, 0.4, 0.25))
    out, data = tmp_path / "c.html", tmp_path / "c.json"
    result = CliRunner().invoke(cli, ["report", a, b, "--compare", "--db", str(db), "-o", str(out), "--json", str(data)])
    assert result.exit_code == 0, result.output
    doc = orjson.loads(data.read_bytes())
    sections = {s["id"]: s for s in doc["sections"]}
    assert "compare" in sections and "compare-ratios" in out.read_text()
    with pytest.raises(SystemExit) as refused:
        main(["report", a, "--compare", "--db", str(db), "-o", str(out)])
    assert refused.value.code == 2


def test_traces_of_one_name_are_told_apart_by_their_folders() -> None:
    """Two ranks' folders share a name (rank0_ascend_pt in db/level0 and text/level0): each
    label grows its parent folders until they differ; every label gets its letter."""
    from parity.compare.traces import TraceInput, side_labels

    def of(path: str) -> TraceInput:
        return TraceInput(label=path.rsplit("/", 1)[1], analysis={}, paths=(path,))

    inputs = [of("/t/ascend/db/level0/rank0_ascend_pt"), of("/t/ascend/text/level0/rank0_ascend_pt"),
              of("/t/kineto/rank0.json.gz")]
    assert side_labels(inputs) == ["A: db/level0/rank0_ascend_pt", "B: text/level0/rank0_ascend_pt",
                                   "C: rank0.json.gz"]
    stored = [TraceInput(label="base", analysis={}), TraceInput(label="base", analysis={})]  # no path to grow
    assert side_labels(stored) == ["A: base", "B: base"]
    # one file analysed twice: the label grows to the whole path, written once ("/t/...", not "//t/...")
    twice = [of("/t/base.json.gz"), of("/t/base.json.gz")]
    assert side_labels(twice) == ["A: /t/base.json.gz", "B: /t/base.json.gz"]
