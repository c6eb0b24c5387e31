"""Compare on hand-built runs: ratios and CIs on hand cases, the export/import round trip that
compares equal to itself, refusal of mixed byte conventions, the v1 store upgrade, and the
import parser fuzzed (bad input: one line, nothing written)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_export_figures import _stored_gemm_run

from parity.cli.main import main
from parity.compare import compare_runs
from parity.compare.ratio import speed_ratio
from parity.model import ParityError
from parity.model.result import CaseResult
from parity.model.samples import Samples
from parity.store import STORE_VERSION, Store
from parity.store.runs_import import import_run, parse_export
from parity.store.schema import MIGRATIONS


def test_speed_ratio_hand_cases() -> None:
    assert speed_ratio(2e12, 4e12, higher_is_better=True) == 2.0  # B's rate is twice A's
    assert speed_ratio(2.0, 1.0, higher_is_better=False) == 2.0  # B takes half A's time
    with pytest.raises(ValueError):
        speed_ratio(0.0, 1.0, higher_is_better=True)


def test_export_import_into_an_empty_store_compares_equal_to_itself(tmp_path: Path) -> None:
    with Store.open(tmp_path / "h200.sqlite") as source:
        run_id = _stored_gemm_run(source)
        exported = source.export(run_id, "json", tmp_path / "run.json")
        original = source.get_run(run_id)
        original_cases = source.cases(run_id)
    with Store.open(tmp_path / "laptop.sqlite") as store:
        imported = import_run(store, exported)
        assert imported.run_id == run_id and imported.cases == len(original_cases)
        with pytest.raises(ParityError, match="already in .*--as-new"):
            import_run(store, exported)
        again = import_run(store, exported, as_new=True)
        assert again.run_id != run_id
        assert store.get_run(run_id).to_dict() == original.to_dict()
        assert [c.to_dict() for c in store.cases(run_id)] == [c.to_dict() for c in original_cases]
        doc = compare_runs(store, [run_id, again.run_id]).to_dict()  # the copy against the original
        ratios = [c["ratio"] for c in doc["cases"] if c["ratio"] is not None]
        assert len(ratios) == 3 and all(r == pytest.approx(1.0) for r in ratios)
        assert doc["audit"] == [] and doc["forced"] is False
        assert all(f["value"] == pytest.approx(1.0) for f in doc["summary"] if f["unit"] == "x")
        with pytest.raises(ParityError, match="is on side A .* and on side B .*1x by construction"):
            compare_runs(store, [run_id, run_id])  # one run against itself is no comparison


def _bandwidth_run(store: Store, convention: str, *, seconds: float) -> str:
    run = store.create_run(config={"device": "cpu", "suites": ["bw"]}, provenance={"host": {"architecture": "x86-64"}})
    for size in (1024, 2048):
        store.add_case(run.run_id, CaseResult(
            suite="bw", key=f"copy/{size}", params={"op": "copy", "bytes": size},
            samples={"main": Samples(values_s=(seconds, seconds * 1.1, seconds * 0.9), method="host-clock")},
            metrics={"median_s": seconds, "bytes_per_s": 2 * size / seconds, "bytes_convention": convention},
            check={"passed": True}))
    store.finish_run(run.run_id, status="complete", summary={"ok": True})
    return run.run_id


def test_mixed_byte_conventions_are_refused_unless_forced_then_marked(tmp_path: Path, capsys) -> None:
    with Store.open(tmp_path / "r.sqlite") as store:
        a = _bandwidth_run(store, "bytes read + written (STREAM)", seconds=1e-6)
        b = _bandwidth_run(store, "bytes of one operand", seconds=0.5e-6)
        for extra, status in (((), 2), (("--force",), 0)):
            with pytest.raises(SystemExit) as info:
                main(["compare", a, b, "--db", str(tmp_path / "r.sqlite"), *extra])
            out, err = capsys.readouterr()
            assert info.value.code == status
            assert (err.count("\n") == 1 and "--force" in err) if status else "MARKED" in out
        with pytest.raises(ParityError) as info:
            compare_runs(store, [a, b])
        message = str(info.value)
        assert "byte conventions" in message and "--force" in message and "\n" not in message
        doc = compare_runs(store, [a, b], force=True).to_dict()
    assert doc["forced"] is True and all(c["marked"] for c in doc["cases"])
    assert [c["ratio"] for c in doc["cases"]] == [pytest.approx(2.0), pytest.approx(2.0)]
    assert any(e["condition"] == "byte conventions" and e["refused"] for e in doc["audit"])
    assert doc["claims"] and all(c.startswith("[marked") for c in doc["claims"])


def test_a_version_1_store_is_upgraded_with_its_runs_kept(tmp_path: Path) -> None:
    path = tmp_path / "v1.sqlite"
    conn = sqlite3.connect(path)
    for statement in MIGRATIONS[0]:
        conn.execute(statement)
    conn.execute("INSERT INTO runs VALUES ('r1', '2026-01-01', '2026-01-01', 'complete', '{}', '{}', '{}')")
    conn.execute("PRAGMA application_id = 1347572825")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with Store.open(path) as store:
        assert store.get_run("r1").status == "complete"
        assert store.query("SELECT count(*) FROM trace_analyses") == [(0,)]
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == STORE_VERSION
    conn.close()


_json = st.recursive(st.none() | st.booleans() | st.integers(-2**53, 2**53) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                     max_leaves=12)
_documents = st.fixed_dictionaries(
    {"schema_version": st.sampled_from([1, 0, 2, "1", None]), "kind": st.sampled_from(["run-export", "run", 3]),
     "run": _json | st.fixed_dictionaries({"run_id": st.text(max_size=4), "created_at": _json, "status": _json,
                                           "config": _json}),
     "cases": st.lists(_json | st.fixed_dictionaries({"suite": _json, "key": _json, "samples": _json,
                                                      "findings": _json, "params": _json}), max_size=3)})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=64) | _json.map(orjson.dumps) | _documents.map(orjson.dumps))
def test_import_parser_fuzz_one_line_errors_and_nothing_written(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "fuzz.json"
    path.write_bytes(raw)
    with Store.open(tmp_path / "fuzz.sqlite") as store:
        before = store.query("SELECT count(*) FROM runs")[0][0], store.query("SELECT count(*) FROM cases")[0][0]
        try:
            parse_export(raw, source=str(path))
        except ParityError as exc:
            assert "\n" not in str(exc) and str(path) in str(exc)
            with pytest.raises(ParityError):
                import_run(store, path)
            after = store.query("SELECT count(*) FROM runs")[0][0], store.query("SELECT count(*) FROM cases")[0][0]
            assert after == before


def test_medians_over_the_compute_bound_intersection_hand_case(tmp_path: Path) -> None:
    # P = 100 TFLOP/s and B = 1 TB/s on both: 3072^3 and 6144^3 are compute-bound, 96^3 is not.
    # B is twice as fast on every shape: ratios 2; efficiencies 25%, 40% on A and 50%, 80% on B.
    with Store.open(tmp_path / "r.sqlite") as store:
        a = _stored_gemm_run(store, (0.25, 0.4, 0.25))
        b = _stored_gemm_run(store, (0.5, 0.8, 0.5))
        doc = compare_runs(store, [a, b]).to_dict()
    shapes = [c for c in doc["cases"] if c["params"].get("kind") == "shape"]
    assert [c["ratio"] for c in shapes] == [pytest.approx(2.0)] * 3
    figures = {(f["name"], f["scope"].get("run")): f for f in doc["summary"]}
    bound = figures[("compare.gemm.median_ratio.compute-bound", None)]
    assert bound["value"] == pytest.approx(2.0) and bound["scope"]["cases"] == 2
    assert figures[("gemm.median_efficiency.compute-bound.intersection", "A: NVIDIA H200")]["value"] == pytest.approx(0.325)
    assert figures[("gemm.median_efficiency.compute-bound.intersection", "B: NVIDIA H200")]["value"] == pytest.approx(0.65)
    assert figures[("compare.gemm.shape.median_ratio", None)]["value"] == pytest.approx(2.0)
    assert any(c.startswith("on these 2 compute-bound bf16 gemm shapes") and "32.5% on A" in c and "65.0% on B" in c
               for c in doc["claims"])
    assert doc["audit"] == []


def _decode_case(tokens_per_s: float, *, declared: bool = True, key: str = "batch=4") -> CaseResult:
    metrics = {"step_s": 4 / tokens_per_s, "tpot_s": 4 / tokens_per_s, "cards": 1, "tokens_per_s_per_card": tokens_per_s}
    if declared:
        metrics["headline_metric"] = "tokens_per_s_per_card"
    return CaseResult(suite="decode", key=key, params={"config": "tiny", "batch": 4, "context": 1024, "cards": 1},
                      check={"passed": True}, metrics=metrics)


def _run_of(store: Store, cases: list[CaseResult]) -> str:
    run = store.create_run(config={"device": "cpu", "suites": sorted({c.suite for c in cases})}, provenance={})
    for case in cases:
        store.add_case(run.run_id, case)
    store.finish_run(run.run_id, status="complete", summary={"ok": True, "suites": {}})
    return run.run_id


def test_decode_cases_are_compared_by_tokens_per_second_per_card_and_a_case_without_a_figure_says_why(
        tmp_path: Path) -> None:
    """B decodes 1,000 tok/s per card where A does 800: ratio 1.25. A ceiling sentinel (no
    headline: its rounds make P, as its metrics say) and a case that failed in B get no ratio,
    each row says so, and a note names them once per reason."""
    sentinel = CaseResult(suite="gemm", key="ceiling/bf16/sentinel-1", check={"passed": True},
                          params={"kind": "ceiling-sentinel", "dtype": "bf16"},
                          metrics={"median_flops": 1e12,  # as the GEMM suite writes it: why it has no ratio
                                   "not_compared": "a ceiling sentinel: its rounds make the ceiling P, compared as "
                                                   "the ceiling's case"})
    good = CaseResult(suite="membw", key="copy/1MiB", check={"passed": True}, params={"op": "copy"},
                      samples={"main": Samples(values_s=(1e-3, 1e-3, 1e-3), method="host-clock")},
                      metrics={"median_s": 1e-3, "bytes_per_s": 2e9})
    failed = CaseResult(suite="membw", key="copy/1MiB", params={"op": "copy"}, error="out of memory\nat ...")
    with Store.open(tmp_path / "r.sqlite") as store:
        a = _run_of(store, [_decode_case(800.0), sentinel, good])
        b = _run_of(store, [_decode_case(1000.0), sentinel, failed])
        doc = compare_runs(store, [a, b]).to_dict()
    rows = {c["key"]: c for c in doc["cases"]}
    assert rows["batch=4"]["ratio"] == pytest.approx(1.25) and rows["batch=4"]["unit"] == "tok/s"
    assert rows["batch=4"]["comparable"] and rows["batch=4"]["reason"] == ""
    assert not rows["ceiling/bf16/sentinel-1"]["comparable"] and "ceiling sentinel" in rows["ceiling/bf16/sentinel-1"]["reason"]
    assert rows["copy/1MiB"]["ratio"] is None and f"in run {b} (failed: out of memory)" in rows["copy/1MiB"]["reason"]
    assert any(n.startswith("1 case not compared (a ceiling sentinel") for n in doc["notes"])
    assert any(n.startswith("1 case not compared (no bytes_per_s in run") for n in doc["notes"]), doc["notes"]


def _slope_case(short: tuple[float, ...], long: tuple[float, ...], *, weight: float | None = 1e9 / 3000,
                ns: float | None = None) -> CaseResult:
    """A latency case as the suite stores it: ns per load from two chains' medians (1,000 and
    4,000 loads), declared as their weighted sum (not declared: as stored before schema 6)."""
    ns = ns or (sorted(long)[len(long) // 2] - sorted(short)[len(short) // 2]) * 1e9 / 3000
    metrics = {"ns_per_load": ns, "headline_metric": "ns_per_load", "short_loads": 1000, "long_loads": 4000}
    if weight is not None:
        metrics["headline_medians"] = {"short": -weight, "long": weight}
    return CaseResult(suite="latency", key="size/base/16384", params={"curve": "size", "working_set_bytes": 16384},
                      check={"passed": True}, metrics=metrics,
                      samples={"short": Samples(values_s=short, method="host-clock"),
                               "long": Samples(values_s=long, method="host-clock")})


def _step_case(dense: tuple[float, ...], head: tuple[float, ...]) -> CaseResult:
    """An offline decode case as stored before schema 6: 2 of 4 dense layers and the head timed,
    batch 4 on one card: step = 4/2 x median(dense) + median(head), tokens/s per card = 4 / step."""
    step = 2 * sorted(dense)[len(dense) // 2] + sorted(head)[len(head) // 2]
    return CaseResult(suite="decode", key="batch=4", params={"config": "tiny", "batch": 4, "cards": 1},
                      check={"passed": True},
                      samples={"dense": Samples(values_s=dense, method="host-clock"),
                               "head": Samples(values_s=head, method="host-clock")},
                      metrics={"step_s": step, "tpot_s": step, "cards": 1, "tokens_per_s_per_card": 4 / step,
                               "headline_metric": "tokens_per_s_per_card",
                               "kinds": {"dense": {"layers_run": 2, "layers_total": 4},
                                         "head": {"layers_run": 1, "layers_total": 1}}})


def test_a_headline_made_of_several_sets_medians_gets_a_within_run_ci(tmp_path: Path, caplog) -> None:
    """One latency run a side: the slope (10 ns a load in A: (40 - 10) us / 3,000; 5 ns in B)
    is resampled from both chains' samples, so B's 2x comes with a within-run CI that holds it.
    A declaration whose weights do not give back the stored slope is logged and not resampled."""
    a_short, a_long = (9e-6, 10e-6, 11e-6, 10.5e-6, 9.5e-6), (39e-6, 40e-6, 41e-6, 40.5e-6, 39.5e-6)
    b_short, b_long = (4.5e-6, 5e-6, 5.5e-6, 5.2e-6, 4.8e-6), (19.5e-6, 20e-6, 20.5e-6, 20.2e-6, 19.8e-6)
    with Store.open(tmp_path / "r.sqlite") as store:
        a = _run_of(store, [_slope_case(a_short, a_long)])
        b = _run_of(store, [_slope_case(b_short, b_long)])
        wrong = _run_of(store, [_slope_case(b_short, b_long, weight=1e9 / 2000)])
        row = compare_runs(store, [a, b]).to_dict()["cases"][0]
        with caplog.at_level("WARNING"):
            unresampled = compare_runs(store, [a, wrong]).to_dict()["cases"][0]
    assert row["ratio"] == pytest.approx(2.0) and row["ci_kind"] == "within-run only"
    low, high = row["ratio_ci95"]
    assert low < 2.0 < high and row["verdict"] == "faster"
    assert unresampled["ratio_ci95"] is None and "no within-run CI" in caplog.text


def test_a_version_5_store_names_the_sample_sets_of_its_slopes_and_steps(tmp_path: Path) -> None:
    """Latency slopes and decode steps stored before schema 6 named no sample sets, so a
    1-against-1 comparison gave them no CI; opening the store declares them where the case's
    samples give its headline back (a case whose stored slope they do not give is left alone),
    and the comparison then has a within-run CI for both."""
    a_short, a_long = (9e-6, 10e-6, 11e-6), (39e-6, 40e-6, 41e-6)
    b_short, b_long = (4.5e-6, 5e-6, 5.5e-6), (19.5e-6, 20e-6, 20.5e-6)
    path = tmp_path / "v5.sqlite"
    with Store.open(path) as store:
        a = _run_of(store, [_slope_case(a_short, a_long, weight=None), _step_case((1e-3, 1.1e-3, 0.9e-3),
                                                                                  (2e-4, 2.2e-4, 1.8e-4))])
        b = _run_of(store, [_slope_case(b_short, b_long, weight=None), _step_case((0.5e-3, 0.55e-3, 0.45e-3),
                                                                                  (1e-4, 1.1e-4, 0.9e-4))])
        odd = _run_of(store, [_slope_case(b_short, b_long, weight=None, ns=7.0)])
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 5")
    conn.commit()
    conn.close()
    with Store.open(path) as store:
        declared = {c.suite: c.metrics.get("headline_medians") for c in store.cases(a)}
        assert declared["latency"] == {"short": pytest.approx(-1e9 / 3000), "long": pytest.approx(1e9 / 3000)}
        # per kind total/run / (batch x accepted / cards): dense 4/2/4, head 1/1/4
        assert declared["decode"] == {"dense": pytest.approx(0.5), "head": pytest.approx(0.25)}
        assert "headline_medians" not in store.cases(odd)[0].metrics
        rows = {c["suite"]: c for c in compare_runs(store, [a, b]).to_dict()["cases"]}
        exported = orjson.loads(store.export(a, "json", tmp_path / "a.json").read_bytes())
    for case in exported["cases"]:  # an export made before schema 6 is declared on import too
        del case["metrics"]["headline_medians"]
    (tmp_path / "old.json").write_bytes(orjson.dumps(exported))
    with Store.open(tmp_path / "new.sqlite") as store:
        import_run(store, tmp_path / "old.json")
        assert {c.suite: c.metrics.get("headline_medians") for c in store.cases(a)} == declared
    for suite in ("latency", "decode"):
        assert rows[suite]["ratio"] == pytest.approx(2.0) and rows[suite]["ci_kind"] == "within-run only"
        assert rows[suite]["ratio_ci95"] is not None and rows[suite]["ratio_ci95"][0] < 2.0 < rows[suite]["ratio_ci95"][1]


def test_a_version_4_store_declares_its_decode_cases_headline(tmp_path: Path) -> None:
    """Decode cases stored before schema 5 declared no headline, so compare gave them no
    ratio; opening the store declares it (tokens/s per card) and leaves other cases alone."""
    path = tmp_path / "v4.sqlite"
    with Store.open(path) as store:
        a = _run_of(store, [_decode_case(800.0, declared=False)])
        b = _run_of(store, [_decode_case(1000.0, declared=False)])
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 4")
    conn.commit()
    conn.close()
    with Store.open(path) as store:
        assert store.cases(a)[0].metrics["headline_metric"] == "tokens_per_s_per_card"
        doc = compare_runs(store, [a, b]).to_dict()
    assert doc["cases"][0]["ratio"] == pytest.approx(1.25)


def _copy_case(seconds: float, *, key: str, findings: tuple = ()) -> CaseResult:
    return CaseResult(suite="membw", key=key, check={"passed": True}, params={"op": "copy"}, findings=findings,
                      samples={"main": Samples(values_s=(seconds,) * 5, method="host-clock")},
                      metrics={"median_s": seconds, "bytes_per_s": 1e-3 / seconds * 2e9})


def test_a_case_a_side_could_not_vouch_for_is_named_in_its_row_its_summary_and_its_claim(tmp_path: Path) -> None:
    """Three copy cases, B twice as fast; A's first case was timed while others used the
    machine (``contended``), B's last one holds a figure that cannot be true (``invalid``): each
    row names its side and reason, as the run's DOUBTFUL verdict counts them (a high-variance
    finding is not one of them), and the suite's median and its claim say how many of their
    cases each side could not vouch for."""
    from parity.model.findings import Finding, Severity
    from parity.report.comparison import case_cells

    contended = Finding(code="contended", severity=Severity.WARNING, message="load 3.1 on 2 CPUs")
    invalid = Finding(code="invalid", severity=Severity.INVALID, message="over the ceiling")
    noisy = Finding(code="high-variance", severity=Severity.WARNING, message="cv 30%")
    with Store.open(tmp_path / "r.sqlite") as store:
        a = _run_of(store, [_copy_case(2e-3, key="c1", findings=(contended,)), _copy_case(2e-3, key="c2"),
                            _copy_case(2e-3, key="c3", findings=(noisy,))])
        b = _run_of(store, [_copy_case(1e-3, key="c1"), _copy_case(1e-3, key="c2"),
                            _copy_case(1e-3, key="c3", findings=(invalid, noisy))])
        doc = compare_runs(store, [a, b]).to_dict()
    rows = {c["key"]: c for c in doc["cases"]}
    assert [rows[k]["doubts"] for k in ("c1", "c2", "c3")] == [[["contended"], []], [[], []], [[], ["invalid"]]]
    assert rows["c1"]["ratio"] == pytest.approx(2.0)  # the ratio stays; its row says what it rests on
    header, cells, _ = case_cells(doc)
    marks = {row[1]: row[header.index("marked")] for row in cells}
    assert marks == {"c1": "contended in A", "c2": "", "c3": "invalid in B"}
    from parity.report.comparison_page import comparison_page
    from parity.report.html.compare_charts import ratio_rows

    drawn = {r["case"]: r for r in ratio_rows(comparison_page(doc))}  # the chart's label says it too
    assert drawn["c1"]["text"] == "2x (contended in A)" and drawn["c2"]["text"] == "2x" and drawn["c2"]["doubt"] == ""
    median = next(f for f in doc["summary"] if f["name"] == "compare.membw.median_ratio")
    clause = ("A could not vouch for 1 of these 3 cases (contended); B could not vouch for 1 of these 3 cases "
              "(invalid): figures that cannot be trusted")
    assert clause in median["note"]
    assert [c for c in doc["claims"] if c.startswith("on these 3 membw cases")][0].endswith(clause)


def test_a_comparison_of_trusted_cases_says_nothing_of_doubts(tmp_path: Path) -> None:
    with Store.open(tmp_path / "r.sqlite") as store:
        a = _run_of(store, [_copy_case(2e-3, key="c1"), _copy_case(2e-3, key="c2")])
        b = _run_of(store, [_copy_case(1e-3, key="c1"), _copy_case(1e-3, key="c2")])
        doc = compare_runs(store, [a, b]).to_dict()
    assert all(c["doubts"] == [[], []] for c in doc["cases"])
    assert not any("vouch" in c for c in doc["claims"]) and not any("vouch" in (f["note"] or "") for f in doc["summary"])


def test_a_case_one_run_declares_not_compared_is_not_compared_whichever_side_it_is_on(tmp_path: Path) -> None:
    """A GEMM sweep's ceiling search stored before its case said it is not compared (headline
    ``ceiling_flops``) against one that says so: no ratio either way round, with the reason."""
    reason = "the ceiling search's P: the run's P ... is compared as the figure gemm.ceiling"
    old = CaseResult(suite="gemm", key="ceiling/bf16", params={"kind": "ceiling", "dtype": "bf16"},
                     check={"passed": True}, metrics={"ceiling_flops": 1e12, "headline_metric": "ceiling_flops"})
    new = CaseResult(suite="gemm", key="ceiling/bf16", params={"kind": "ceiling", "dtype": "bf16"},
                     check={"passed": True}, metrics={"ceiling_flops": 2e12, "not_compared": reason})
    with Store.open(tmp_path / "r.sqlite") as store:
        a, b = _run_of(store, [old]), _run_of(store, [new])
        for pair in ([a, b], [b, a]):
            row = compare_runs(store, pair).to_dict()["cases"][0]
            assert row["ratio"] is None and not row["comparable"] and row["reason"] == reason


def test_cases_measured_on_one_rank_say_so_in_their_rows_and_claims(tmp_path: Path) -> None:
    """A one-rank finding is no doubt (the figure is what it says) but changes what it is of:
    the rows name it with their sides and the claim over the cases counts them per side."""
    from parity.model.findings import Finding, Severity
    from parity.report.comparison import case_cells

    one = (Finding(code="one-rank", severity=Severity.WARNING, message="one rank: no data crosses a link"),)
    with Store.open(tmp_path / "r.sqlite") as store:
        a = _run_of(store, [_copy_case(2e-3, key="c1", findings=one), _copy_case(2e-3, key="c2", findings=one)])
        b = _run_of(store, [_copy_case(1e-3, key="c1", findings=one), _copy_case(1e-3, key="c2")])
        doc = compare_runs(store, [a, b]).to_dict()
    rows = {c["key"]: c for c in doc["cases"]}
    assert rows["c1"]["caveats"] == [["one-rank"], ["one-rank"]] and rows["c2"]["caveats"] == [["one-rank"], []]
    assert rows["c1"]["doubts"] == [[], []]
    header, cells, _ = case_cells(doc)
    assert {row[1]: row[header.index("marked")] for row in cells} == {"c1": "one-rank in A and B", "c2": "one-rank in A"}
    claim = next(c for c in doc["claims"] if c.startswith("on these 2 membw cases"))
    assert claim.endswith("A measured 2 of these 2 cases on one rank, where no data crosses a link; B measured 1 of "
                          "these 2 cases on one rank, where no data crosses a link")
