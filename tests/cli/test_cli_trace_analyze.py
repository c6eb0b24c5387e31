"""``parity trace analyze`` end to end on real traces: JSON keys, CSV, Chrome trace, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from parity.cli.main import main

KINETO = "kineto/hta/negative_queue_length_values_check/rank0.json.gz"
ASCEND = "ascend/msinsight/text/level1"


def run(argv: list[str], capsys: pytest.CaptureFixture) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(argv)
    out = capsys.readouterr()
    return int(info.value.code or 0), out.out, out.err


def test_done_when_command(traces_dir: Path, tmp_path: Path, capsys) -> None:
    out_json = tmp_path / "out.json"
    code, out, _ = run(["trace", "analyze", str(traces_dir / KINETO), "--json", str(out_json)], capsys)
    assert code == 0
    assert "window" in out and "steps 551-554" in out and "warm-up" in out
    data = json.loads(out_json.read_text())
    assert data["schema_version"] and data["kind"] == "trace-analysis"
    payload = data.get("payload", data)
    window = payload["window"]
    assert window["source"] == "steps" and window["end_us"] > window["start_us"]
    for stream in payload["streams"]:
        assert {"stream", "busy_us", "busy_fraction", "share_of_summed"} <= set(stream)
    assert sum(s["share_of_summed"] for s in payload["streams"]) == pytest.approx(1.0)
    device = payload["device"]
    assert device["busy_us"] + device["idle_us"] == pytest.approx(window["end_us"] - window["start_us"], abs=1e-3)
    assert device["mean_concurrency"] > 0
    assert "communication" in {c["category"] for c in payload["categories"]}


def test_window_restricts_the_analysis(traces_dir: Path, tmp_path: Path, capsys) -> None:
    first = tmp_path / "a.json"
    run(["trace", "analyze", str(traces_dir / KINETO), "--json", str(first)], capsys)
    w = json.loads(first.read_text()).get("payload", {}) or json.loads(first.read_text())
    w = w["window"]
    mid = (w["start_us"] + w["end_us"]) / 2
    second = tmp_path / "b.json"
    code, out, _ = run(["trace", "analyze", str(traces_dir / KINETO), "--window", f"{w['start_us']}:{mid}",
                        "--json", str(second)], capsys)
    assert code == 0 and "user-window" in out
    data = json.loads(second.read_text())
    payload = data.get("payload", data)
    assert payload["window"]["source"] == "user-window"
    # epoch microseconds as JSON doubles carry about 0.25 us of rounding
    assert payload["window"]["end_us"] == pytest.approx(mid, abs=0.5)
    assert payload["device"]["busy_us"] + payload["device"]["idle_us"] == pytest.approx(mid - w["start_us"], abs=0.5)


def test_ascend_steps_csv_and_chrome_trace(traces_dir: Path, tmp_path: Path, capsys) -> None:
    out_json = tmp_path / "asc.json"
    code, out, _ = run(["trace", "analyze", str(traces_dir / ASCEND), "--json", str(out_json),
                        "--csv", str(tmp_path / "csv"), "--chrome-trace", str(tmp_path / "t.json")], capsys)
    assert code == 0 and "Ascend steps" in out
    data = json.loads(out_json.read_text())
    payload = data.get("payload", data)
    for row in payload["ascend_steps"]:
        assert {"step", "computing_us", "communication_us", "communication_not_overlapped_us", "free_us"} <= set(row)
        assert row["max_deviation_us"] < 2.0
    assert (tmp_path / "csv" / "ascend_steps.csv").is_file() and (tmp_path / "csv" / "streams.csv").is_file()
    trace = json.loads((tmp_path / "t.json").read_text())
    assert any(e.get("name", "").startswith("window (") for e in trace["traceEvents"])


@pytest.mark.parametrize(
    ("extra", "message"),
    [(["--steps", "9-3"], "bad --steps"), (["--window", "5"], "bad --window"),
     (["--steps", "900-901"], "steps 900-901 are not in the trace")],
)
def test_bad_options_give_one_line(traces_dir: Path, capsys, extra: list[str], message: str) -> None:
    code, _, err = run(["trace", "analyze", str(traces_dir / KINETO), *extra], capsys)
    assert code == 2 and err.strip().splitlines()[-1].startswith("parity: ") and message in err


def test_bad_rules_file(traces_dir: Path, tmp_path: Path, capsys) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rules]]\ncategory = "matrix"\npatterns = ["("]\n')
    code, _, err = run(["trace", "analyze", str(traces_dir / KINETO), "--rules", str(rules)], capsys)
    assert code == 2 and "bad pattern" in err


def test_a_kernel_name_that_looks_like_console_markup_is_printed_as_written(tmp_path: Path, capsys) -> None:
    name = "reduce_kernel[bold]<float>[anon]"
    events = [{"ph": "X", "cat": "kernel", "name": name if i % 2 else "gemm_kernel", "pid": 0, "tid": 7,
               "ts": 10.0 * i, "dur": 5.0, "args": {"device": 0, "stream": 7, "correlation": i}} for i in range(8)]
    path = tmp_path / "rank0.json"
    path.write_text(json.dumps({"traceEvents": events}))
    code, out, _ = run(["trace", "analyze", str(path), "--window", "span"], capsys)
    assert code == 0
    assert name in out
