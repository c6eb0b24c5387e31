"""The Kineto read in several processes (readers/parallel.py) gives the one-process table."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from parity.trace.readers import parallel
from parity.trace.readers.kineto import read_kineto
from parity.trace.table import ActivityTable


def _same(a: ActivityTable, b: ActivityTable) -> None:
    for column in ActivityTable.COLUMNS:
        assert np.array_equal(getattr(a, column), getattr(b, column)), column
    assert a.names == b.names
    assert a.extra.keys() == b.extra.keys()
    for key in a.extra:
        assert a.extra[key].tolist() == b.extra[key].tolist(), key
    assert a.meta == b.meta


def _read(path: Path, monkeypatch: pytest.MonkeyPatch, outcomes: list[bool], *, split: int) -> tuple[ActivityTable, int]:
    """The table, and how many reads in several processes succeeded."""
    before = sum(outcomes)
    return read_kineto(path, workers=split or 1), sum(outcomes) - before


@pytest.mark.parametrize("name", [
    "kineto/hta/negative_queue_length_values_check/rank0.json.gz",  # whole-us timestamps
    "kineto/hta/nccl_parser_config/nccl_data.json.gz",  # exact (ns) timestamps
    "kineto/hta/mtia_inference_trace/mtia_inference_rank_0.json.gz",  # metadata events
])  # fmt: skip
@pytest.mark.parametrize("workers", [2, 3])
def test_several_processes_give_the_one_process_table(traces_dir: Path, monkeypatch, shares_outcomes, name: str,
                                                      workers: int):  # fmt: skip
    path = traces_dir / name
    one, _ = _read(path, monkeypatch, shares_outcomes, split=1)
    two, used = _read(path, monkeypatch, shares_outcomes, split=workers)
    assert used == 1
    _same(one, two)


def _trace(tmp_path: Path, events: list[dict], *, compress: bool = True) -> Path:
    text = json.dumps({"traceEvents": events, "distributedInfo": {"rank": 3}}).encode()
    path = tmp_path / ("rank0.json.gz" if compress else "rank0.json")
    path.write_bytes(gzip.compress(text) if compress else text)
    return path


def _kernel(i: int, name: str) -> dict:
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": 10.0 * i, "dur": 5.0,
            "args": {"device": 0, "stream": 7, "correlation": i}}


def test_a_cut_inside_a_string_falls_back_to_one_process(tmp_path: Path, monkeypatch, shares_outcomes):
    # the middle of the file is inside one long name made of the text the splitter looks for
    names = ["a"] * 20 + ['}, {"x": 1' * 20_000] + ["b"] * 20
    path = _trace(tmp_path, [_kernel(i, name) for i, name in enumerate(names)])
    one, _ = _read(path, monkeypatch, shares_outcomes, split=1)
    two, used = _read(path, monkeypatch, shares_outcomes, split=2)
    assert used == 0
    _same(one, two)
    assert len(two) == 41 and two.meta["ranks"] == [3]


@pytest.mark.parametrize("compress", [True, False])  # the second half inflated and dropped, or sought
def test_keys_after_the_event_array_reach_the_header(tmp_path: Path, monkeypatch, shares_outcomes, compress: bool):
    path = _trace(tmp_path, [_kernel(i, f"k{i % 7}") for i in range(500)], compress=compress)
    two, used = _read(path, monkeypatch, shares_outcomes, split=2)
    assert used == 1
    assert two.meta["ranks"] == [3] and two.meta["rank_source"] == "distributedInfo"
    assert two.names == tuple(f"k{i}" for i in range(7))
    assert two.start_ns.tolist() == [10_000 * i for i in range(500)]


def test_inflated_size_comes_from_the_gzip_trailer(tmp_path: Path):
    text = b'{"traceEvents": [' + b'{"ph": "X"}, ' * 10_000 + b"{}]}"  # 17 + 13 * 10,000 + 4 bytes; compresses >100x
    plain, one, two = tmp_path / "t.json", tmp_path / "t.json.gz", tmp_path / "two.json.gz"
    plain.write_bytes(text)
    one.write_bytes(gzip.compress(text))
    two.write_bytes(gzip.compress(text) + gzip.compress(b"{}"))  # the last member says 2 bytes
    assert parallel.inflated_bytes_estimate(plain) == len(text) == 130_021
    assert parallel.inflated_bytes_estimate(one) == 130_021
    assert parallel.inflated_bytes_estimate(two) == 8 * two.stat().st_size  # the floor
    assert parallel.inflated_bytes_estimate(tmp_path / "missing.json") is None


def test_the_size_alone_picks_the_default_workers():
    sizes = [None, parallel.TWO_PROCESS_BYTES - 1, parallel.TWO_PROCESS_BYTES, parallel.FOUR_PROCESS_BYTES - 1,
             parallel.FOUR_PROCESS_BYTES]
    assert [parallel.default_workers(s) for s in sizes] == [1, 1, 2, 2, 4]


@pytest.mark.parametrize("workers", [2, 4])
def test_no_process_outlives_a_read(traces_dir: Path, shares_outcomes, workers: int) -> None:
    import multiprocessing

    read_kineto(traces_dir / "kineto/hta/trace_filter/sampled_rank-0.json.gz", workers=workers)
    assert shares_outcomes == [True] and multiprocessing.active_children() == []


def test_workers_must_be_positive(traces_dir: Path) -> None:
    from parity.model.errors import ParityError

    with pytest.raises(ParityError, match="workers=0"):
        read_kineto(traces_dir / "kineto/hta/trace_filter/sampled_rank-0.json.gz", workers=0)


@pytest.mark.parametrize("workers", [2, 3, 4, 5])
def test_an_event_larger_than_a_share_is_read_once(tmp_path: Path, monkeypatch, shares_outcomes, workers: int):
    """Offsets that all fall inside one large event: the shares between them hold no boundary and
    are empty, so every event is read once, in order."""
    names = ["a"] * 3 + ["b" * 1_000_000] + ["c"] * 3
    path = _trace(tmp_path, [_kernel(i, name) for i, name in enumerate(names)], compress=False)
    one, _ = _read(path, monkeypatch, shares_outcomes, split=1)
    many, used = _read(path, monkeypatch, shares_outcomes, split=workers)
    assert used == 1
    _same(one, many)
    assert [many.name_of(i)[0] for i in range(len(many))] == ["a", "a", "a", "b", "c", "c", "c"]
