"""The fleet report on hand-made output folders (``tests/fleet_report_rows.py``): the headline
figures by hand, the heatmap's binning and its maxima, findings beside their charts, the
1,024-rank page's size, the CLI, and the README's DuckDB query."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from parity.cli.main import main
from parity.model.errors import ParityError
from parity.report.html.fleet_cells import group_median, heatmap_cells, skew_histogram, step_rows
from parity.trace.fleet.folder import fleet_headline, read_fleet_folder
from tests.fleet_report_rows import write_fleet_folder

pytest.importorskip("pyarrow")
README = Path(__file__).resolve().parents[2] / "README.md"


def readme_query() -> str:
    """The README's DuckDB query (the ten ranks that most often arrive last, and the step time
    they cost), read from the README itself: the ``sql`` block over ``stragglers.parquet``."""
    blocks = README.read_text(encoding="utf-8").split("```sql\n")[1:]
    (query,) = [b.split("```")[0] for b in blocks if "stragglers.parquet" in b]
    return query


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """4 ranks (2 per node), 3 steps, rank 3 late by 10, 20, 30 us, rank 2 slow in compute."""
    return write_fleet_folder(tmp_path_factory.mktemp("fleet-small") / "out")


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """1,024 ranks (8 per node) x 20 steps, rank 700 late."""
    return write_fleet_folder(tmp_path_factory.mktemp("fleet-large") / "out", ranks=1024, steps=20, late=700,
                              ranks_per_node=8)


def parity(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def test_headline_figures_by_hand(small: Path) -> None:
    # arrivals at each collective: ranks 0, 1, 2 at +0, +10, +20 ns, rank 3 at +L, L = 10, 20, 30 us by step
    head = fleet_headline(read_fleet_folder(small))
    assert head["ranks"] == 4 and head["ranks_per_node"] == 2 and head["collectives"] == 6
    assert head["skew_median_ns"] == 20_000  # skews 10k, 10k, 20k, 20k, 30k, 30k
    assert head["skew_p99_ns"] == 30_000
    # per collective the waits are L, L - 10, L - 20, 0: 3L - 30; two ops per step
    assert head["wait_total_ns"] == 2 * sum(3 * L - 30 for L in (10_000, 20_000, 30_000)) == 359_820
    assert head["straggler_ranks"] == [3]
    ops = {o["op"]: o for o in head["ops"]}
    assert ops["all_reduce"]["skew_p99_ns"] == pytest.approx(20_000 + 0.98 * 10_000)  # linear interpolation
    assert ops["all_reduce"]["wait_total_ns"] == ops["all_gather"]["wait_total_ns"] == 179_910
    algbw = (1 << 20) / 50e-6
    assert ops["all_reduce"]["busbw_median_bps"] == pytest.approx(algbw * 2 * 3 / 4)
    assert ops["all_gather"]["busbw_median_bps"] == pytest.approx(algbw * 3 / 4)
    assert ops["all_gather"]["comm_median_ns"] == 50_000


def test_group_median_and_the_per_rank_step_maxima(small: Path) -> None:
    keys, medians = group_median(np.array([2, 1, 2, 1, 1]), np.array([5.0, 3.0, 1.0, 9.0, 4.0]))
    assert keys.tolist() == [1, 2] and medians.tolist() == [4.0, 3.0]
    folder = read_fleet_folder(small)
    cells = heatmap_cells(folder)  # 4 ranks, 3 steps: one rank and one step per cell
    assert cells["ranks_per_row"] == cells["steps_per_col"] == 1 and len(cells["rows"]) == 12
    late = {c["step_lo"]: c for c in cells["rows"] if c["rank_lo"] == 3}
    # rank 3's lateness: its arrival minus the median arrival (15 ns after the base): L - 15
    assert [late[s]["lateness_s"] for s in range(3)] == pytest.approx([9.985e-6, 19.985e-6, 29.985e-6])
    binned = heatmap_cells(folder, max_rows=2, max_cols=2)  # ranks 0-1, 2-3; steps 0-1, 2
    assert binned["ranks_per_row"] == 2 and binned["steps_per_col"] == 2 and len(binned["rows"]) == 4
    cell = next(c for c in binned["rows"] if c["ranks"] == "2–3" and c["steps"] == "0–1")
    assert cell["compute_s"] == pytest.approx(800e-6) and cell["compute_rank"] == 2  # the slow rank
    assert cell["lateness_s"] == pytest.approx(19.985e-6) and cell["lateness_rank"] == 3  # the late one
    assert cell["idle_s"] == pytest.approx(300e-6) and cell["idle_rank"] == 3
    steps = step_rows(folder)
    assert [s["lateness_max_rank"] for s in steps] == [3, 3, 3] and [s["compute_max_rank"] for s in steps] == [2, 2, 2]
    bins = skew_histogram(folder)
    assert {op: sum(b["collectives"] for b in bins if b["op"] == op) for op in ("all_reduce", "all_gather")} == {
        "all_reduce": 3, "all_gather": 3}


def test_report_data_has_every_fleet_chart_with_findings_beside_them(small: Path) -> None:
    from parity.report.html import render_data, report_data

    data = report_data(fleets=[read_fleet_folder(small)])
    charts = {c["id"]: c for c in data["charts"]}
    assert {"fleet-0-summary", "fleet-0-heatmap", "fleet-0-skew", "fleet-0-stragglers", "fleet-0-ranks"} <= set(charts)
    assert [f["code"] for f in charts["fleet-0-stragglers"]["findings"]] == ["straggler-by-arrival"]
    assert [f["code"] for f in charts["fleet-0-skew"]["findings"]] == ["p2p-not-matched"]
    stragglers = charts["fleet-0-stragglers"]["spec"]["datasets"]["stragglers"]
    assert stragglers[0]["rank"] == 3 and stragglers[0]["times_last"] == 6 and stragglers[0]["node"] == "node-1"
    assert stragglers[0]["step_cost_s"] == pytest.approx(39.96e-6)  # per step 2 x (L - 20 ns), median L = 20 us
    assert stragglers[0]["over_expected"] == 4.0 and stragglers[0]["method"] == "first-order"
    assert stragglers[0]["median_lateness_s"] == pytest.approx(19.985e-6)
    figures = {r["figure"]: r["value"] for r in charts["fleet-0-summary"]["spec"]["datasets"]["figures"]}
    assert figures["arrival skew, median"] == pytest.approx(20e-6) and figures["stragglers named (rank 3)"] == 1
    assert figures["ranks per node"] == 2
    html = render_data(data)
    assert "look at rank &lt;b&gt;host stalls&lt;/b&gt;" in html and "<b>host" not in html  # a hint is text
    assert 'data-code="straggler-by-arrival"' in html
    assert data["fleets"] == [{"path": str(small.resolve()), "ranks": 4, "ranks_per_node": 2}]


def test_a_straggler_in_doubt_is_marked_in_the_chart_table_and_headline(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from parity.report.html import report_data

    out = write_fleet_folder(tmp_path / "out")
    table = pq.read_table(out / "stragglers.parquet")
    doubted = table.column("rank").to_numpy() == 3
    table = table.set_column(table.column_names.index("in_doubt"), table.schema.field("in_doubt"), pa.array(doubted))
    table = table.set_column(table.column_names.index("clock_suspect_last"), table.schema.field("clock_suspect_last"),
                             pa.array(doubted.astype("int64") * 6))
    pq.write_table(table, out / "stragglers.parquet")
    charts = {c["id"]: c for c in report_data(fleets=[read_fleet_folder(out)])["charts"]}
    chart = charts["fleet-0-stragglers"]
    rows = {r["rank"]: r for r in chart["spec"]["datasets"]["stragglers"]}
    assert rows[3]["straggler"] == "yes, in doubt" and rows[3]["clock_suspect_last"] == 6 and rows[0]["straggler"] == "no"
    assert "clock-suspect lasts" in [c["title"] for c in chart["tables"][0]["columns"]]
    assert "In doubt (rank 3)" in chart["note"]
    figures = {r["figure"] for r in charts["fleet-0-summary"]["spec"]["datasets"]["figures"]}
    assert "stragglers named (rank 3 in doubt)" in figures


def test_a_1024_rank_fleet_is_binned_and_the_page_stays_small(large: Path, tmp_path: Path) -> None:
    pytest.importorskip("vl_convert")
    from parity.cli.report import build_report

    data, path, _ = build_report(runs=[], fleet_dirs=(str(large),), output=tmp_path / "fleet.html")
    heatmap = next(c for c in data["charts"] if c["id"] == "fleet-0-heatmap")
    cells = heatmap["spec"]["datasets"]["cells"]
    assert len(cells) == 128 * 20  # 8 ranks to a row, every step its own column, not 20,480 cells
    late = next(c for c in cells if c["rank_lo"] <= 700 < c["rank_hi"] and c["step_lo"] == 19)
    assert late["lateness_rank"] == 700 and late["lateness_s"] == max(c["lateness_s"] for c in cells)
    html = path.read_text()
    assert len(html.encode()) < 6_000_000  # the chart library is 0.9 MB of it
    assert html.count("<td") < 30_000 and html.count("<tr>") < 2_200
    ranks = next(c for c in data["charts"] if c["id"] == "fleet-0-ranks")
    assert len(ranks["spec"]["datasets"]["ranks"]) == 1024


def test_the_cli_writes_the_fleet_report_and_refuses_a_folder_without_tables(
        capsys: pytest.CaptureFixture[str], small: Path, tmp_path: Path) -> None:
    pytest.importorskip("vl_convert")
    out = tmp_path / "fleet.html"
    status, stdout, err = parity(capsys, "report", "--fleet", str(small), "-o", str(out), "--json", str(tmp_path / "f.json"))
    assert status == 0, err
    assert "3 charts, 2 tables-only panels" in stdout and out.is_file()
    assert json.loads((tmp_path / "f.json").read_text())["fleets"][0]["ranks"] == 4
    empty = tmp_path / "empty"
    empty.mkdir()
    status, _, err = parity(capsys, "report", "--fleet", str(empty), "-o", str(out))
    assert status == 2 and "has no fleet.json" in err and err.count("\n") == 1
    broken = tmp_path / "broken"
    write_fleet_folder(broken)
    (broken / "stragglers.parquet").unlink()
    with pytest.raises(ParityError, match=r"stragglers.parquet is missing"):
        read_fleet_folder(broken)


def test_the_readme_duckdb_query_names_the_late_rank_and_its_cost(small: Path, large: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    query = readme_query()
    assert "FROM 'fleet/stragglers.parquet'" in query
    rows = duckdb.sql(query.replace("'fleet/", f"'{small}/")).fetchall()
    assert rows[0] == (3, "node-1", 6, 100.0, 25.0, 39.96, "first-order")
    assert [r[0] for r in rows] == [3, 0, 1, 2]
    top = duckdb.sql(query.replace("'fleet/", f"'{large}/")).fetchall()
    # 20 steps: L = 10..200 us, median 105 us; the latest other rank (1023) arrives 10.23 us in
    assert len(top) == 10 and top[0][:3] == (700, "node-87", 40) and top[0][5] == pytest.approx(2 * (105 - 10.23))


def test_a_fleet_without_steps_or_matched_collectives_still_reports(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from parity.report.html import render_data, report_data

    out = write_fleet_folder(tmp_path / "out")
    for name in ("steps", "collectives", "arrivals"):
        pq.write_table(pq.read_table(out / f"{name}.parquet").slice(0, 0), out / f"{name}.parquet")
    data = report_data(fleets=[read_fleet_folder(out)])
    charts = {c["id"]: c for c in data["charts"]}
    assert not charts["fleet-0-heatmap"]["draw"] and "no step markers" in charts["fleet-0-heatmap"]["note"]
    assert not charts["fleet-0-skew"]["draw"] and charts["fleet-0-stragglers"]["draw"]
    assert fleet_headline(read_fleet_folder(out))["skew_median_ns"] is None
    assert "No collective was matched" in render_data(data)


def test_columns_added_at_a_tables_end_are_optional_the_others_required(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    out = write_fleet_folder(tmp_path / "out")
    table = pq.read_table(out / "stragglers.parquet")
    older = table.drop_columns([c for c in ("median_margin_ns", "mean_step_cost_ns", "clock_suspect_last", "in_doubt")
                                if c in table.column_names])
    pq.write_table(older, out / "stragglers.parquet")
    from parity.trace.fleet.folder import straggler_rows

    rows = straggler_rows(read_fleet_folder(out))
    assert rows[0]["rank"] == 3 and "median_margin_ns" not in rows[0] and "in_doubt" not in rows[0]
    assert fleet_headline(read_fleet_folder(out))["straggler_ranks_in_doubt"] == []
    ranks = pq.read_table(out / "ranks.parquet")  # reduced before ranks had its window
    pq.write_table(ranks.drop_columns(["window_ns"]), out / "ranks.parquet")
    from parity.report.html import report_data

    chart = next(c for c in report_data(fleets=[read_fleet_folder(out)])["charts"] if c["id"] == "fleet-0-ranks")
    assert "window_s" not in chart["spec"]["datasets"]["ranks"][0]
    assert "window_s" not in [c["field"] for c in chart["tables"][0]["columns"]]
    pq.write_table(older.drop_columns(["step_cost_ns"]), out / "stragglers.parquet")
    with pytest.raises(ParityError, match="lacks columns step_cost_ns; write it again"):
        read_fleet_folder(out)


def test_a_folder_whose_values_are_not_what_the_reduce_writes_is_refused_in_one_line(tmp_path: Path) -> None:
    # a null skew read back as NaN made the report's histogram and compare's median fail inside;
    # a text rank, a float time, a fleet.json field of the wrong type were read as they were
    import pyarrow as pa
    import pyarrow.parquet as pq

    def damaged(name: str, table: str | None = None, column: str | None = None, values=None, summary=None) -> Path:
        out = write_fleet_folder(tmp_path / name)
        if table is not None:
            t = pq.read_table(out / f"{table}.parquet")
            t = t.set_column(t.schema.get_field_index(column), column, values(t))
            pq.write_table(t, out / f"{table}.parquet")
        if summary is not None:
            doc = json.loads((out / "fleet.json").read_text())
            (out / "fleet.json").write_text(json.dumps({**doc, **summary}))
        return out

    null_skew = damaged("null", "collectives", "skew_ns", lambda t: pa.array([None] * t.num_rows, pa.int64()))
    text_rank = damaged("text", "stragglers", "rank", lambda t: pa.array([str(r) for r in t.column("rank").to_pylist()]))
    float_time = damaged("float", "arrivals", "wait_ns", lambda t: pa.array([float(w) for w in t.column("wait_ns").to_pylist()]))
    for out, expected in ((null_skew, "collectives.parquet: column skew_ns is null in row 0"),
                          (text_rank, "stragglers.parquet: column rank holds string values where int32 belong"),
                          (float_time, "arrivals.parquet: column wait_ns holds double values where int64 belong"),
                          (damaged("ranks", summary={"ranks": "many"}), 'fleet.json: ranks is "many", not a rank count'),
                          (damaged("counts", summary={"counts": [1, 2]}), "fleet.json: counts is [1, 2], not an object")):
        with pytest.raises(ParityError, match=re.escape(expected)) as info:
            read_fleet_folder(out)
        assert "\n" not in str(info.value) and "parity trace fleet" in str(info.value)
    # integers of another width and floats given as integers are what they declare
    ok = damaged("widths", "ranks", "collectives", lambda t: pa.array(t.column("collectives").to_pylist(), pa.int32()))
    assert read_fleet_folder(ok).rows("ranks") == 4
