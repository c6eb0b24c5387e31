"""``parity trace compare`` on real traces: two ranks of one job (streams matched by role, the
rank audited), unrelated workloads (warned), and a Kineto trace against an Ascend profile
(categories only, with the caveat)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from parity.cli.main import main


def _compare(capsys: pytest.CaptureFixture[str], tmp_path: Path, *sources: Path | str) -> tuple[dict, str]:
    out = tmp_path / "cmp.json"
    with pytest.raises(SystemExit) as info:
        main(["trace", "compare", *map(str, sources), "--json", str(out)])
    text, err = capsys.readouterr()
    assert int(info.value.code or 0) == 0, err
    return orjson.loads(out.read_bytes()), text


def test_two_ranks_of_one_job(capsys, tmp_path: Path, traces_dir: Path) -> None:
    folder = traces_dir / "kineto/hta/trace_filter"
    doc, text = _compare(capsys, tmp_path, folder / "sampled_rank-0.json.gz", folder / "sampled_rank-1.json.gz")
    assert doc["kind"] == "traces" and doc["ratio_convention"] == "speed"
    assert [a["values"] for a in doc["audit"] if a["condition"] == "rank"] == [[0, 1]]
    roles = {c["role"]: c for c in doc["cases"] if c["suite"] == "stream"}
    assert roles["compute"]["streams"] == [{"device": 0, "stream": 7}, {"device": 1, "stream": 7}]
    assert "communication 1" in roles and roles["compute"]["key"] == "compute (d0 s7 | d1 s7)"
    assert "compute (d0" in text
    assert doc["workload"]["kernel_overlap"][1] > doc["workload"]["threshold"]
    for case in doc["cases"]:
        a, b = case["values"]
        assert case["ratio"] == (pytest.approx(a / b) if a and b else None)


def test_unrelated_workloads_are_warned(capsys, tmp_path: Path, traces_dir: Path) -> None:
    hta = traces_dir / "kineto/hta"
    doc, _ = _compare(capsys, tmp_path, hta / "trace_compare/base/base.json.gz",
                      hta / "trace_filter/sampled_rank-1.json.gz")
    assert [a for a in doc["audit"] if a["condition"] == "workload (kernel-name overlap)"]


def test_kineto_against_ascend_by_category_only(capsys, tmp_path: Path, traces_dir: Path) -> None:
    doc, text = _compare(capsys, tmp_path, traces_dir / "kineto/hta/trace_compare/base/base.json.gz",
                         traces_dir / "ascend/msinsight/text/level1/rank0_ascend_pt")
    assert {c["suite"] for c in doc["cases"]} == {"category"}
    assert doc["caveats"] and "category only" in text


def test_one_source_is_refused_before_anything_is_read(capsys, tmp_path: Path, traces_dir: Path) -> None:
    trace = traces_dir / "kineto/hta/trace_filter/sampled_rank-0.json.gz"
    with pytest.raises(SystemExit) as info:
        main(["trace", "compare", str(trace)])
    _, err = capsys.readouterr()
    assert info.value.code == 2
    assert err.strip().splitlines() == [  # one line, no progress: the trace was not read
        f"parity: trace compare needs at least two traces or stored trace analyses (got 1: {trace}); "
        "name a second one"]


def test_a_trace_against_itself_or_its_copy_is_refused(capsys, tmp_path: Path, traces_dir: Path) -> None:
    """The same bytes analysed the same way are 1x by construction: refused in one line, under
    the same name or another; the same trace over two windows is a comparison."""
    trace = traces_dir / "kineto/hta/trace_filter/sampled_rank-0.json.gz"
    copy = tmp_path / "copy.json.gz"
    copy.write_bytes(trace.read_bytes())
    for second in (trace, copy):
        with pytest.raises(SystemExit) as info:
            main(["trace", "compare", str(trace), str(second), "--window", "span"])
        _, err = capsys.readouterr()
        lines = [line for line in err.splitlines() if line.startswith("parity:")]
        assert info.value.code == 2 and len(lines) == 1, err
        assert (f"{trace.name} and {second.name} are the same trace analysed the same way" in lines[0]
                and "1x by construction" in lines[0])
