"""The extended audit on real runs: three tiny CPU bandwidth runs through the CLI, one with
``NCCL_ALGO`` set in its environment and one measured while another parity run held the device
(its advisory lock), compared with ``parity compare``; and ``--availability`` stored in the
config and compared."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from parity.cli.main import main
from parity.device.lock import DeviceLock
from parity.store import Store

TINY = ["membw", "--quick", "--device", "cpu", "--ops", "copy", "--min-bytes", "4KiB", "--max-bytes", "8KiB",
        "--budget-s", "0.005", "--warmup-s", "0", "--min-samples", "3"]


def _measure(db: Path, *extra: str) -> str:
    with pytest.raises(SystemExit) as info:
        main([*TINY, "--db", str(db), *extra])
    assert info.value.code in (0, None), f"membw exited {info.value.code}"
    with Store.open(db) as store:
        return store.list_runs(limit=1)[0].run_id


def _audit(db: Path, a: str, b: str, capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, dict], str]:
    capsys.readouterr()
    out = db.parent / f"{a}-{b}.json"
    with pytest.raises(SystemExit) as info:
        main(["compare", a, b, "--db", str(db), "--json", str(out)])
    assert info.value.code in (0, None)
    text = capsys.readouterr().out
    doc = json.loads(out.read_text())
    return {e["condition"]: e for e in doc["audit"]}, text


def test_nccl_algo_contention_and_availability_show_in_compare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "runs.sqlite"
    for name in ("NCCL_ALGO", "NCCL_PROTO"):
        monkeypatch.delenv(name, raising=False)
    plain = _measure(db)
    monkeypatch.setenv("NCCL_ALGO", "Tree")
    tree = _measure(db, "--availability", "preview")
    monkeypatch.delenv("NCCL_ALGO")
    with DeviceLock(device_name="cpu", run_id="elsewhere") as other:  # another run holds the device
        assert other.problem is None
        beside = _measure(db)

    audit, text = _audit(db, plain, tree, capsys)
    entry = audit["environment NCCL_ALGO"]
    assert entry["values"] == ["unset", "Tree"]
    assert entry["applies"] is False and "more than one rank" in entry["matters"]
    assert audit["availability"]["values"] == ["not declared", "Preview (declared)"]
    assert "NCCL_ALGO" in text and "availability" in text
    with Store.open(db) as store:
        assert store.get_run(tree).config["availability"] == "preview"
        assert store.get_run(tree).provenance["environment"]["NCCL_ALGO"] == "Tree"
        assert "setup" in store.get_run(plain).provenance

    audit, text = _audit(db, plain, beside, capsys)
    assert "environment NCCL_ALGO" not in audit and "availability" not in audit
    contention = audit["contention"]
    cases = contention["values"][1].split(" of ")[1].split(" ")[0]
    assert contention["values"][1].startswith(f"{cases} of {cases} case(s) contended (100%), {cases} beside")
    assert "load average" in contention["values"][1] and "contention" in text


def test_nccl_algo_on_two_gloo_ranks_is_listed_as_read_by_no_library_they_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "ranks.sqlite"
    tiny = ["comm", "collectives", "--nproc", "2", "--device", "cpu", "--ops", "all_reduce", "--min-bytes", "1KiB",
            "--max-bytes", "1KiB", "--iterations", "5", "--warmup-s", "0", "--placement", "out-of-place", "--quick",
            "--db", str(db)]
    ids = []
    for algo in (None, "Ring"):
        if algo is None:
            monkeypatch.delenv("NCCL_ALGO", raising=False)
        else:
            monkeypatch.setenv("NCCL_ALGO", algo)
        with pytest.raises(SystemExit) as info:
            main(tiny)
        assert info.value.code in (0, None)
        with Store.open(db) as store:
            ids.append(store.list_runs(limit=1)[0].run_id)
    with Store.open(db) as store:
        ranks = store.get_run(ids[1]).provenance["target"]["provenance"]
    assert [r["communication_env"].get("NCCL_ALGO") for r in ranks] == ["Ring", "Ring"]  # every rank recorded it
    audit, _ = _audit(db, ids[0], ids[1], capsys)
    entry = audit["environment NCCL_ALGO"]
    assert entry["values"] == ["unset", "Ring"] and entry["applies"] is False
    assert "communicated over gloo, which does not read it" in entry["matters"]
