"""Commands that only read (``runs list``, ``runs show``, ``compare``, ``report``) open the store
read-only and create nothing: no folder for a missing ``PARITY_DB``, no empty store, no folder
for ``--json``; a store on a read-only mount can be listed and shown."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import orjson
import pytest

from parity.cli.main import main
from parity.model.errors import ParityError
from parity.store import Store


def parity(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_read_only_commands_on_a_missing_store_create_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "not" / "there" / "r.sqlite"
    monkeypatch.setenv("PARITY_DB", str(missing))
    status, out, err = parity(capsys, "runs", "list")
    assert status == 0 and f"no runs in {missing} yet" in out, err
    status, out, _ = parity(capsys, "runs", "list", "--json", "-")
    assert status == 0 and orjson.loads(out)["runs"] == []
    for command, expected in ((["runs", "show", "latest"], f"no runs in {missing} yet"),
                              (["compare", "latest~1", "latest"], f"{missing} holds 0 run(s); there is no latest~1"),
                              (["compare", "latest"], "at least two runs"),
                              (["report", "-o", str(tmp_path / "r.html")], f"no runs in {missing} yet"),
                              (["runs", "export", "latest", "-o", str(tmp_path / "e.json")], f"no runs in {missing} yet")):
        status, _, err = parity(capsys, *command)
        assert status == 2 and err.count("\n") == 1 and expected in err, (command, err)
    assert _tree(tmp_path) == []


def test_json_into_a_missing_folder_is_refused_and_creates_it_not(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                  db_path: Path) -> None:
    target = tmp_path / "new" / "folder" / "runs.json"
    for command in (["runs", "list"], ["runs", "show", "latest"], ["compare", "latest~1", "latest"],
                    ["report", "-o", str(tmp_path / "r.html")]):
        status, out, err = parity(capsys, *command, "--json", str(target))
        assert status == 2 and out == "" and err.count("\n") == 1, err  # refused before the command runs
        assert f"invalid value for '--json': folder {target.parent} does not exist" in err
    assert _tree(tmp_path) == []


def test_the_read_only_open_writes_nothing_and_refuses_writes(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    with Store.open(path) as store:
        run = store.create_run(config={"device": "cpu", "suites": []}, provenance={})
    before = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    with Store.open(path, read_only=True) as store:
        assert [r.run_id for r in store.list_runs()] == [run.run_id]
        with pytest.raises(ParityError, match="busy or read-only"):
            store.create_run(config={}, provenance={})
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()} == before
    with Store.open(tmp_path / "absent.sqlite", read_only=True) as absent:
        assert absent.list_runs() == [] and absent.path == tmp_path / "absent.sqlite"
    assert not (tmp_path / "absent.sqlite").exists()
    (tmp_path / "junk.sqlite").write_bytes(b"not a database, not at all" * 100)
    with pytest.raises(ParityError, match="not a usable results store"):
        Store.open(tmp_path / "junk.sqlite", read_only=True)


def _mount_tmpfs(folder: Path) -> str | None:
    """Mount a small tmpfs on ``folder``; the reason when this process may not."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return "mounting a tmpfs needs root and mount(8)"
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(folder)], capture_output=True, text=True)
    return None if done.returncode == 0 else f"mount not permitted here: {done.stderr.strip()}"


def test_runs_list_and_show_work_on_a_store_on_a_read_only_mount(capsys: pytest.CaptureFixture[str]) -> None:
    folder = Path(tempfile.mkdtemp(prefix="parity-ro-"))
    reason = _mount_tmpfs(folder)
    if reason:
        folder.rmdir()
        pytest.skip(reason)
    try:
        db = folder / "r.sqlite"
        with Store.open(db) as store:
            run = store.create_run(config={"device": "cpu", "suites": ["demo"]}, provenance={})
            store.finish_run(run.run_id, status="complete", summary={"ok": True})
        remounted = subprocess.run(["mount", "-o", "remount,ro", str(folder)], capture_output=True, text=True)
        if remounted.returncode != 0:
            pytest.skip(f"remount read-only not permitted: {remounted.stderr.strip()}")
        assert not os.access(folder, os.W_OK)
        status, out, err = parity(capsys, "runs", "list", "--db", str(db), "--json", "-")
        assert status == 0 and [r["run_id"] for r in orjson.loads(out)["runs"]] == [run.run_id], err
        status, out, err = parity(capsys, "runs", "show", "latest", "--db", str(db))
        assert status == 0 and run.run_id in out, err
        status, _, err = parity(capsys, "runs", "import", str(folder / "x.json"), "--db", str(db))
        assert status == 2 and err.count("\n") == 1  # a write command says why, in one line
        assert _tree(folder) == ["r.sqlite"]
    finally:
        subprocess.run(["umount", str(folder)], capture_output=True)
        folder.rmdir()


def test_a_read_only_open_sees_the_commits_of_a_writer_that_holds_the_store(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    with Store.open(path) as writer:
        run = writer.create_run(config={"device": "cpu", "suites": []}, provenance={})  # in the -wal file
        assert (tmp_path / "r.sqlite-wal").exists()
        with Store.open(path, read_only=True) as reader:
            assert [r.run_id for r in reader.list_runs()] == [run.run_id]
        later = writer.create_run(config={"device": "cpu", "suites": []}, provenance={})
    with Store.open(path, read_only=True) as reader:
        assert {r.run_id for r in reader.list_runs()} == {run.run_id, later.run_id}
    assert _tree(tmp_path) == ["r.sqlite"]
