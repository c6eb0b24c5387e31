"""``parity decode import``: vllm bench serve and InferenceX results stored with their method
labels, beside a parity online run in ``parity runs list``; bad files are one-line errors and
write nothing (fuzzed)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parity.families.decode.serving.imported import import_results
from parity.cli.main import cli
from parity.model.errors import ParityError

VLLM = {
    "date": "20261201-120000", "endpoint_type": "openai", "backend": "openai", "label": None,
    "model_id": "scripted-model", "tokenizer_id": "scripted-model", "num_prompts": 64, "request_rate": "inf",
    "burstiness": 1.0, "max_concurrency": 32, "duration": 2.0, "completed": 64, "failed": 0,
    "total_input_tokens": 8192, "total_output_tokens": 2048, "request_throughput": 32.0, "request_goodput": None,
    "output_throughput": 1024.0, "total_token_throughput": 5120.0, "mean_ttft_ms": 101.0, "median_ttft_ms": 100.5,
    "std_ttft_ms": 1.0, "p99_ttft_ms": 104.0, "mean_tpot_ms": 10.0, "median_tpot_ms": 8.0, "std_tpot_ms": 0.1,
    "p99_tpot_ms": 10.3, "mean_itl_ms": 10.0, "median_itl_ms": 10.0, "std_itl_ms": 0.2, "p99_itl_ms": 11.0,
    "mean_e2el_ms": 411.0, "median_e2el_ms": 410.0, "std_e2el_ms": 1.0, "p99_e2el_ms": 414.0,
    "ttfts": [0.1, 0.101], "latencies": [0.41, 0.42], "itls": [[0.01, 0.01], [0.011]],
}
INFERENCEX = {
    "hw": "h200", "conc": 64, "image": "vllm/vllm-openai:v0", "model": "deepseek-ai/DeepSeek-R1",
    "framework": "vllm", "precision": "fp8", "spec_decoding": "none", "disagg": False, "isl": 1024, "osl": 1024,
    "is_multinode": False, "tp": 8, "ep": 1, "dp_attention": "false", "tput_per_gpu": 900.0,
    "output_tput_per_gpu": 450.0, "input_tput_per_gpu": 450.0, "median_ttft": 0.5, "p99_ttft": 1.5,
    "median_tpot": 0.02, "p99_tpot": 0.03, "median_intvty": 50.0, "p99_intvty": 33.3, "median_itl": 0.019,
    "median_e2el": 21.0,
}


def _write(path: Path, data: object) -> Path:
    path.write_bytes(orjson.dumps(data))
    return path


def test_a_vllm_result_keeps_its_fields_labels_and_raw_samples(tmp_path: Path) -> None:
    run = import_results(_write(tmp_path / "v.json", VLLM), fmt="vllm", cards=4)
    (case,) = run.cases
    assert case.key == "concurrency/32" and case.ok
    assert case.metrics["median_tpot_s"] == pytest.approx(0.008) and case.metrics["p99_tpot_ms"] == 10.3
    assert case.metrics["output_throughput_per_card"] == 256.0
    assert case.metrics["interactivity_per_user"] == pytest.approx(125.0)  # 1000 / 8 ms
    assert case.metrics["output_throughput_per_concurrency"] == pytest.approx(32.0)  # 1024 / 32
    assert case.samples["itl"].values_s == (0.01, 0.01, 0.011) and len(case.samples["ttft"]) == 2
    labels = run.config["labels"]
    assert labels["source"] == "vllm bench serve" and labels["mode"] == "online" and labels["backend"] == "openai"
    assert labels["tpot_excludes_first_token"] is True and "InferenceX" in labels["interactivity"]["interactivity_per_user"]


def test_appended_vllm_results_are_levels_and_inferencex_keeps_per_gpu_figures(tmp_path: Path) -> None:
    lines = b"\n".join(orjson.dumps({**VLLM, "max_concurrency": c}) for c in (1, 8))
    (tmp_path / "a.json").write_bytes(lines)
    assert [c.key for c in import_results(tmp_path / "a.json", fmt="vllm").cases] == ["concurrency/1", "concurrency/8"]
    run = import_results(_write(tmp_path / "x.json", [INFERENCEX, {**INFERENCEX, "conc": 4}]), fmt="inferencex")
    first = run.cases[0]
    assert first.metrics["median_tpot_ms"] == pytest.approx(20.0) and first.metrics["p99_ttft_ms"] == pytest.approx(1500.0)
    assert first.metrics["output_throughput_per_card"] == 450.0 and first.metrics["output_throughput"] == 3600.0
    assert first.metrics["interactivity_per_user"] == 50.0 and first.metrics["cards"] == 8
    assert run.config["labels"]["source"] == "InferenceX" and run.config["labels"]["hw"] == "h200"


def test_imported_and_online_runs_are_listed_side_by_side_with_their_labels(tmp_path: Path) -> None:
    from serving_script import scripted_server

    db = str(tmp_path / "r.sqlite")
    runner = CliRunner()
    with scripted_server("--ttft-ms", "5", "--gap-ms", "1") as (url, _):
        online = runner.invoke(cli, ["decode", "online", "--url", url, "--num-requests", "2", "--output-tokens", "4",
                                     "--db", db], catch_exceptions=False)
    assert online.exit_code == 0, online.output
    imported = runner.invoke(cli, ["decode", "import", str(_write(tmp_path / "v.json", VLLM)), "--format", "vllm",
                                   "--db", db], catch_exceptions=False)
    assert imported.exit_code == 0, imported.output
    listed = runner.invoke(cli, ["runs", "list", "--db", db, "--json", str(tmp_path / "l.json")])
    assert listed.exit_code == 0, listed.output
    runs = orjson.loads((tmp_path / "l.json").read_bytes())["runs"]
    assert [r["mode"] for r in runs] == ["online", "online"]
    assert [r["options"]["source"] for r in runs] == ["vllm bench serve", "parity decode online"]
    assert {r["options"]["tokens"] for r in runs} == {"tokenizer", "usage"}
    assert "source=vllm" in listed.output and "source=pari" in listed.output and listed.output.count("online") >= 2
    assert all("scripted-model" in r["config"]["device"] for r in runs)


@pytest.mark.parametrize(("data", "fmt", "message"), [
    (b"not json", "vllm", "is not JSON"),
    (b"", "vllm", "is empty"),
    (orjson.dumps(INFERENCEX), "vllm", "pass --format inferencex"),
    (orjson.dumps(VLLM), "inferencex", "pass --format vllm"),
    (orjson.dumps([VLLM, VLLM]), "vllm", "not a vllm bench serve result"),
])
def test_bad_files_are_one_line_errors(tmp_path: Path, data: bytes, fmt: str, message: str) -> None:
    (tmp_path / "bad.json").write_bytes(data)
    with pytest.raises(ParityError, match=message):
        import_results(tmp_path / "bad.json", fmt=fmt)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 10**6) | st.floats(allow_nan=False, width=32) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(sorted(VLLM) + sorted(INFERENCEX)), children, max_size=6),
    max_leaves=20,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=JSON, fmt=st.sampled_from(["vllm", "inferencex"]), mutate=st.booleans())
def test_fuzzed_files_import_or_fail_in_one_line_and_write_nothing(tmp_path: Path, doc: object, fmt: str,
                                                                   mutate: bool) -> None:
    if mutate and isinstance(doc, dict):
        doc = {**(VLLM if fmt == "vllm" else INFERENCEX), **doc}
    path = _write(tmp_path / "f.json", doc)
    db = tmp_path / "fuzz.sqlite"
    before = _count(db)
    result = CliRunner().invoke(cli, ["decode", "import", str(path), "--format", fmt, "--db", str(db)])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        assert isinstance(result.exception, ParityError), repr(result.exception)
        assert "\n" not in str(result.exception)
        assert _count(db) == before
    else:
        assert result.exit_code == 0, result.output
        assert _count(db) == before + 1


def _count(db: Path) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT count(*) FROM runs").fetchone()[0]


def test_compare_refuses_an_offline_decode_run_beside_an_imported_online_result(tmp_path: Path) -> None:
    """Engine-step figures exclude scheduling: compare names offline vs online and asks for --force."""
    from parity.compare import compare_runs
    from parity.store import Store

    db = tmp_path / "r.sqlite"
    runner = CliRunner()
    offline = runner.invoke(cli, ["decode", "offline", "--config", "tiny", "--batch", "1", "--context", "64",
                                  "--budget-s", "0.01", "--device", "cpu", "--db", str(db)])
    assert offline.exit_code == 0, offline.output
    imported = runner.invoke(cli, ["decode", "import", str(_write(tmp_path / "v.json", VLLM)), "--format", "vllm",
                                   "--db", str(db)])
    assert imported.exit_code == 0, imported.output
    with Store.open(db) as store:
        ids = [run.run_id for run in sorted(store.list_runs(), key=lambda r: r.created_at)]
        with pytest.raises(ParityError, match="offline vs online"):
            compare_runs(store, ids)
        audit = compare_runs(store, ids, force=True).to_dict()["audit"]
    assert any(e["condition"] == "offline vs online" and e["refused"] for e in audit)


def test_label_and_availability_of_served_runs_reach_the_audit(tmp_path: Path) -> None:
    """A served model's run carries the user's --label and --availability (decode online and
    decode import alike); compare names the runs by label and audits the two categories."""
    from serving_script import scripted_server

    from parity.compare import compare_runs
    from parity.store import Store

    db = str(tmp_path / "r.sqlite")
    runner = CliRunner()
    with scripted_server("--ttft-ms", "5", "--gap-ms", "1") as (url, _):
        online = runner.invoke(cli, ["decode", "online", "--url", url, "--num-requests", "2", "--output-tokens", "4",
                                     "--label", "eager build", "--availability", "rd", "--db", db],
                               catch_exceptions=False)  # fmt: skip
    assert online.exit_code == 0, online.output
    imported = runner.invoke(cli, ["decode", "import", str(_write(tmp_path / "v.json", VLLM)), "--format", "vllm",
                                   "--label", "released build", "--availability", "available", "--db", db])
    assert imported.exit_code == 0, imported.output
    with Store.open(db) as store:
        runs = sorted(store.list_runs(), key=lambda r: r.created_at)
        assert [(r.config.get("label"), r.config.get("availability")) for r in runs] == [
            ("eager build", "rd"), ("released build", "available")]
        doc = compare_runs(store, [r.run_id for r in runs], force=True).to_dict()
    (entry,) = [e for e in doc["audit"] if e["condition"] == "availability"]
    assert entry["values"] == ["RDI (declared)", "Available (declared)"] and entry["applies"], entry
    assert {"eager build", "released build"} <= {r.get("user_label") or r["label"] for r in doc["runs"]}
    refused = runner.invoke(cli, ["decode", "online", "--resume", runs[0].run_id, "--label", "other", "--db", db])
    assert refused.exit_code != 0 and "drop --label" in str(refused.exception)
    empty = runner.invoke(cli, ["decode", "import", str(tmp_path / "v.json"), "--format", "vllm", "--label", " ",
                                "--db", db])
    assert empty.exit_code != 0 and "--label is empty" in str(empty.exception)
