"""``parity gemm`` and ``parity gemm shapes`` end to end on the CPU."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from parity.cli.main import cli, main
from parity.report.views import view_for


def test_shapes_count_and_csv() -> None:
    runner = CliRunner()
    count = runner.invoke(cli, ["gemm", "shapes", "--count"])
    assert count.exit_code == 0 and count.output.strip() == "1055"
    table = runner.invoke(cli, ["gemm", "shapes", "--csv"])
    lines = table.output.strip().splitlines()
    assert lines[0] == "m,n,k,name,family,origin" and len(lines) == 1056
    quick = runner.invoke(cli, ["gemm", "shapes", "--quick", "--family", "square", "--count"])
    assert quick.exit_code == 0 and 1 <= int(quick.output) <= 5


def test_shapes_json_carries_version_and_digest(tmp_path: Path) -> None:
    out = tmp_path / "shapes.json"
    result = CliRunner().invoke(cli, ["gemm", "shapes", "--count", "--json", str(out)])
    assert result.exit_code == 0
    data = orjson.loads(out.read_bytes())
    assert data["kind"] == "gemm-shapes" and data["count"] == 1055 and data["catalog_version"] == 1
    assert len(data["digest"]) == 64 and data["shapes"][0]["family"] == "llm"


def test_help_shows_an_example() -> None:
    result = CliRunner().invoke(cli, ["gemm", "--help"])
    assert result.exit_code == 0 and "Example:" in result.output and "parity gemm --quick" in result.output


@pytest.mark.torch
@pytest.mark.slow
def test_tiny_real_sweep_writes_rows_and_summary_then_resumes(tmp_path: Path, db_path: Path) -> None:
    shapes = tmp_path / "shapes.csv"
    shapes.write_text("m,n,k,name\n32,32,32,tiny\n1,64,48,decode\n")
    out = tmp_path / "gemm.json"
    args = ["gemm", "--quick", "--device", "cpu", "--shapes", str(shapes), "--ceiling-budget", "1",
            "--backend", "matmul", "--backend", "linear", "--json", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    data = orjson.loads(out.read_bytes())
    assert data["kind"] == "gemm" and data["schema_version"] >= 1
    summary = data["summary"]
    data["rows"] = summary["rows"]
    for key in ("ceiling_flops", "best_fraction_of_ceiling", "efficiency_compute_bound"):
        assert key in summary
    assert summary["ceiling_flops"] > 0 and summary["bandwidth_bps"] > 0
    assert 0 < summary["best_fraction_of_ceiling"]
    assert [r["name"] for r in data["rows"]] == ["tiny", "decode"]
    assert set(data["rows"][0]["backends"]) == {"matmul", "linear"}
    assert data["rows"][0]["best_backend"] in ("matmul", "linear")
    assert all(r["backends"]["matmul"]["relative_error"] < 0.05 for r in data["rows"])
    raw = [c for c in data["cases"] if c["key"] == "bf16/matmul/32x32x32"][0]
    assert len(raw["samples"]["main"]["values_s"]) >= 5  # raw samples kept
    # A real sweep of two tiny shapes with a 1 s search may time a figure beyond P's CI: the
    # verdict is then DOUBTFUL (invalid), never FAILED, and the run stays ok either way.
    last = result.output.rstrip().splitlines()[-1]
    assert last.startswith(f"run {data['run_id']}: ") and (last.endswith("- OK") or "- DOUBTFUL: " in last)
    assert data["ok"] is True
    if view_for("gemm") is not None:  # the family's own text once it registers its view
        assert "measured compute ceiling" in result.output and "tiny" in result.output
    # P from the sentinels timed through the sweep; the ceiling's own shape timed as a sweep shape
    # beside each of their rounds, with its fraction's CI.
    own = summary["ceiling_own_shape"]
    searched = (summary.get("ceiling_raised") or {}).get("from_shape") or summary["ceiling_shape"]  # P's search
    assert own["shape"] == searched and own["ci95"][0] <= own["fraction"] <= own["ci95"][1]
    rounds = summary["ceiling_rounds"]
    assert own["source"] == "sentinels through the sweep" and len(own["own_flops"]) == 7
    raised = summary.get("ceiling_raised")
    if raised is None:  # P is the sentinels' median
        assert rounds["rounds_flops"] == rounds["sentinel_flops"] and len(rounds["confirm_flops"]) >= 3
        assert summary["ceiling_flops"] == rounds["median_flops"]
    else:  # a sweep shape beat the search's P beyond both CIs and held: P is the raised rate
        assert summary["ceiling_flops"] == raised["flops"] > raised["from_flops"]
    if view_for("gemm") is not None:
        assert "P's own shape, timed as a sweep shape" in result.output and "sentinel rounds" in result.output
    again = CliRunner().invoke(cli, ["gemm", "--resume", data["run_id"], "--json", str(out)])
    assert again.exit_code == 0, again.output
    assert f"run {data['run_id']} is complete: nothing to resume" in again.output


def test_bad_shapes_file_exits_2_naming_file_and_line(tmp_path: Path, db_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("m,n,k\n64,64,-3\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["gemm", "--device", "cpu", "--shapes", str(bad)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("parity: ") and "bad.csv:2: k = -3 is out of range" in err


def test_resume_refuses_changed_settings(db_path: Path) -> None:
    result = CliRunner().invoke(cli, ["gemm", "--resume", "20260101-000000-abcd", "--dtype", "fp16"])
    assert result.exit_code != 0
    assert "drop --dtype" in str(result.exception)


@pytest.mark.torch
@pytest.mark.slow
def test_ceiling_from_shares_one_p_between_sweeps(tmp_path: Path, db_path: Path) -> None:
    shapes = tmp_path / "shapes.csv"
    shapes.write_text("m,n,k,name\n32,32,32,tiny\n")
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    base = ["gemm", "--quick", "--device", "cpu", "--shapes", str(shapes), "--dtype", "fp32"]
    result = CliRunner().invoke(cli, base + ["--ceiling-budget", "1", "--json", str(first)])
    assert result.exit_code == 0, result.output
    one = orjson.loads(first.read_bytes())
    result = CliRunner().invoke(cli, base + ["--ceiling-from", "latest", "--json", str(second)])
    assert result.exit_code == 0, result.output
    two = orjson.loads(second.read_bytes())
    assert two["summary"]["ceiling_flops"] == one["summary"]["ceiling_flops"]
    assert two["summary"]["ceiling_from"] == one["run_id"]
    assert two["summary"]["ceiling_rounds"] == one["summary"]["ceiling_rounds"]
    if view_for("gemm") is not None:
        assert f"run {one['run_id']}" in result.output  # the headline says where P came from
    missing = CliRunner().invoke(cli, ["gemm", "--quick", "--device", "cpu", "--shapes", str(shapes),
                                       "--dtype", "bf16", "--ceiling-from", one["run_id"]])
    assert missing.exit_code != 0 and "ceiling/bf16" in str(missing.exception)
