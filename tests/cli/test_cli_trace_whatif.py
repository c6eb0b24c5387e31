"""``parity trace whatif`` end to end on a real trace."""

from __future__ import annotations

import json
import subprocess
import sys

from click.testing import CliRunner

from parity.cli.main import cli

MULTI_STREAM = "kineto/hta/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz"


def test_whatif_prints_every_method_and_writes_json(traces_dir, tmp_path) -> None:
    out = tmp_path / "out.json"
    result = CliRunner().invoke(cli, [
        "trace", "whatif", str(traces_dir / MULTI_STREAM), "--scale", "matrix=2",
        "--scale", "mem=1.5", "--json", str(out),
    ])
    assert result.exit_code == 0, result.output
    for text in ("first order", "bound (low)", "bound (high)", "replay", "assumptions:",
                 "sensitivity", "k=inf"):
        assert text in result.output
    data = json.loads(out.read_text())
    assert data["kind"] == "trace-whatif" and "schema_version" in data
    assert {"low", "high"} <= set(data["bounds"])
    assert data["replay"]["reproduction_error"] < 0.01
    assert data["assumptions"] and data["sensitivity"]["categories"]
    assert [s["selector"] for s in data["scales"]] == ["matrix", "memory"]


def test_whatif_first_order_only(traces_dir) -> None:
    result = CliRunner().invoke(cli, [
        "trace", "whatif", str(traces_dir / MULTI_STREAM), "--scale", "name:sgemm=inf",
        "--method", "first-order", "--no-sensitivity", "--json", "-",
    ])
    assert result.exit_code == 0, result.output
    payload = result.output[result.output.index("{"):]
    data = json.loads(payload[: payload.rindex("}") + 1])
    assert data["replay"] == {"error": "not requested (method first-order)"}
    assert data["sensitivity"] is None


def test_whatif_help_has_an_example() -> None:
    result = CliRunner().invoke(cli, ["trace", "whatif", "--help"])
    assert result.exit_code == 0 and "Example:" in result.output


def test_bad_scale_is_one_line_and_status_two(traces_dir) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "parity", "trace", "whatif", str(traces_dir / MULTI_STREAM),
         "--scale", "matrix=fast"], check=False, capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("parity: speed factor")


def small_kineto(tmp_path) -> str:
    """One step [0, 100 us] on the host; on stream 7 a GEMM at [10, 40] and a ReLU at [40, 50]."""
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
        {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 10, "dur": 30,
         "args": {"stream": 7, "device": 0}},
        {"ph": "X", "cat": "kernel", "name": "relu_kernel", "pid": 0, "tid": 7, "ts": 40, "dur": 10,
         "args": {"stream": 7, "device": 0}},
    ]
    path = tmp_path / "small.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return str(path)


def test_a_scale_that_selects_nothing_is_an_error_naming_the_categories(tmp_path) -> None:
    trace = small_kineto(tmp_path)
    for scale in ("MATRIX=2", "nosuch=2", "name:nomatch=2"):
        proc = subprocess.run([sys.executable, "-m", "parity", "trace", "whatif", trace, "--scale", scale],
                              check=False, capture_output=True, text=True)
        assert proc.returncode == 2, (scale, proc.stdout)
        line = proc.stderr.strip()
        assert "\n" not in line and "selects no activity" in line and "matrix, vector" in line, line
    result = CliRunner().invoke(cli, ["trace", "whatif", trace, "--scale", "matrix=2", "--method", "first-order",
                                      "--no-sensitivity"])
    # the window is the device time of the step, [10, 50 us]: 40 / (40 - 15) = 1.6
    assert result.exit_code == 0 and "first order 1.600x" in result.output
