"""``parity run --repeat/--label`` and ``parity compare`` with several runs per side, end to end on
tiny real CPU runs: groups and comma lists of runs, the CI kind said in every output, the
Markdown claims, and a bf16 GEMM run against an fp32 one whose ceilings are listed as not
comparable (a ratio only with --force, then marked)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from parity.cli.main import main
from parity.store import Store

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MEMBW = ("--suite", "membw", "--set", 'membw.ops=["copy"]', "--set", "membw.min_bytes=4096",
         "--set", "membw.max_bytes=8192", "--set", "membw.budget_s=0.004", "--set", "membw.warmup_s=0.001",
         "--no-report")


def parity(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def _group(capsys, tmp_path: Path, label: str) -> dict:
    out = tmp_path / f"{label}.json"
    status, _, err = parity(capsys, "run", "--quick", "--device", "cpu", *MEMBW, "--repeat", "2", "--label", label,
                            "--json", str(out))
    assert status in (0, 1), err
    assert "compare with: parity compare group:" in err
    return orjson.loads(out.read_bytes())


def test_repeat_groups_carry_label_group_and_index_and_compare_between_runs(capsys, tmp_path: Path,
                                                                           db_path: Path) -> None:
    first, second = _group(capsys, tmp_path, "before"), _group(capsys, tmp_path, "after")
    with Store.open(db_path, read_only=True) as store:
        runs = [store.get_run(r["run_id"]) for r in first["runs"] + second["runs"]]
    assert [r.config["label"] for r in runs] == ["before", "before", "after", "after"]
    assert [r.config["repeat"] for r in runs] == [{"index": 0, "of": 2}, {"index": 1, "of": 2}] * 2
    assert runs[0].config["group"] == first["group"] != second["group"] == runs[2].config["group"]
    js, md = tmp_path / "cmp.json", tmp_path / "cmp.md"
    status, out, err = parity(capsys, "compare", f"group:{first['group']}", "group:latest", "--json", str(js),
                              "--markdown", str(md))
    assert status == 0, err
    doc = orjson.loads(js.read_bytes())
    assert [r["label"] for r in doc["runs"]] == ["A: before", "B: after"]
    assert [r["ids"] for r in doc["runs"]] == [[r["run_id"] for r in first["runs"]], [r["run_id"] for r in second["runs"]]]
    assert doc["ci_kind"] == "between-run" and "between-run" in out
    cases = [r for r in doc["ratios"] if r["level"] == "case" and r["ratio"] is not None]
    assert cases and all(r["ci_kind"] == "between-run" and r["runs"] == [2, 2] and r["ci95"] for r in cases)
    for r in cases:
        held = r["ci95"][0] <= 1 <= r["ci95"][1]
        assert (r["verdict"] == "no difference measured") == held
    text = md.read_text()
    assert text.startswith("## Claims") and "over 2 runs per side (between-run CI)" in text
    # the terminal and the Markdown name every run of a side, and the group a side was given as
    for side, group in zip(doc["runs"], (first["group"], second["group"])):
        named = f"group {group}, 2 runs: {', '.join(side['ids'])}"
        assert named in " ".join(out.split()) and named in text
    # the same sides written as comma lists give the same document
    ids = [",".join(r["ids"]) for r in doc["runs"]]
    status, lists_out, err = parity(capsys, "compare", *ids, "--json", str(tmp_path / "lists.json"))
    assert status == 0, err
    again = orjson.loads((tmp_path / "lists.json").read_bytes())
    assert again["cases"] == doc["cases"] and again["summary"] == doc["summary"]
    assert f"a list, 2 runs: {ids[0].replace(',', ', ')}" in " ".join(lists_out.split())  # not a group
    # one run per side: the output says the CI is within-run only
    status, out, err = parity(capsys, "compare", doc["runs"][0]["ids"][0], doc["runs"][1]["ids"][0], "--json",
                              str(tmp_path / "one.json"))
    one = orjson.loads((tmp_path / "one.json").read_bytes())
    assert status == 0 and one["ci_kind"] == "within-run only" and "within-run only" in out
    assert all("within-run CI only" in c or "(no CI)" in c for c in one["claims"])


def test_bad_sides_are_one_line_errors(capsys, tmp_path: Path, db_path: Path) -> None:
    status, _, err = parity(capsys, "run", "--quick", "--device", "cpu", *MEMBW, "--label", "solo")
    assert status in (0, 1), err
    for args, expected in ((["compare", "group:nope", "latest"], "no repeat group"),
                           (["compare", "group:latest", "latest"], "no stored run belongs to a repeat group"),
                           (["compare", "latest,latest", "latest"], "names one run twice"),
                           (["compare", "latest", "latest"], "is on side A (latest) and on side B (latest): a run "
                                                             "compared with itself is 1x by construction"),
                           (["compare", "latest,", "latest"], "empty run id"),
                           (["run", "--repeat", "2", "--resume", "latest"], "--repeat makes new runs"),
                           (["run", "--label", " ", "--suite", "membw"], "--label is empty")):
        status, _, err = parity(capsys, *args)
        assert status == 2 and expected in err and err.count("\n") == 1, (args, err)


def _gemm(capsys, tmp_path: Path, dtype: str) -> None:
    shapes = tmp_path / "shapes.csv"
    shapes.write_text("32,32,32\n64,64,64\n")
    status, _, err = parity(capsys, "gemm", "--quick", "--device", "cpu", "--shapes", str(shapes), "--dtype", dtype,
                            "--ceiling-budget-s", "0.2", "--budget-s", "0.01", "--warmup-s", "0.002",
                            "--label", dtype)
    assert status in (0, 1), err


def test_bf16_against_fp32_prints_no_ceiling_ratio_except_as_not_comparable(capsys, tmp_path: Path,
                                                                            db_path: Path) -> None:
    _gemm(capsys, tmp_path, "bf16")
    _gemm(capsys, tmp_path, "fp32")
    js = tmp_path / "cmp.json"
    status, out, err = parity(capsys, "compare", "latest~1", "latest", "--json", str(js), "--markdown",
                              str(tmp_path / "cmp.md"))
    assert status == 0, err
    doc = orjson.loads(js.read_bytes())
    assert [r["label"] for r in doc["runs"]] == ["A: bf16", "B: fp32"]
    ceiling = next(f for f in doc["summary"] if f["name"] == "gemm.ceiling.ratio")
    assert ceiling["value"] is None and ceiling["note"].startswith("not comparable: scope differs: dtype: bf16 vs fp32")
    record = next(r for r in doc["not_comparable"] if r["name"] == "gemm.ceiling")
    assert record["comparable"] is False and record["ratio"] is None and "dtype: bf16 vs fp32" in record["reason"]
    assert all(f["value"] is None for f in doc["summary"] if f["name"].startswith("gemm."))
    line = next(x for x in out.splitlines() if "gemm.ceiling.ratio" in x)
    assert "n/a" in line and "not comparable" in out
    status, out, err = parity(capsys, "compare", "latest~1", "latest", "--force", "--json", str(js))
    forced = next(f for f in orjson.loads(js.read_bytes())["summary"] if f["name"] == "gemm.ceiling.ratio")
    assert status == 0 and forced["value"] > 0 and forced["note"].startswith("forced: not comparable")
