"""Gzip traces read the same through the standard library as through ISA-L (the ``fast`` extra)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from parity.model.errors import ParityError
from parity.trace.load import load_trace
from parity.trace.readers import jsonstream

SMALL = "kineto/hta/trace_filter/sampled_rank-0.json.gz"


class CountingGzip(gzip.GzipFile):
    """The standard library's reader, counting the files opened (so the test knows it ran)."""

    made = 0

    def __init__(self, *args, **kwargs) -> None:
        type(self).made += 1
        super().__init__(*args, **kwargs)


def test_stdlib_gzip_reads_the_same_table(traces_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = load_trace(traces_dir / SMALL)
    monkeypatch.setattr(jsonstream, "GZIP_FILE", CountingGzip)
    plain = load_trace(traces_dir / SMALL)
    assert CountingGzip.made >= 1
    assert len(plain) == len(fast) > 0
    for column in ("start_ns", "end_ns", "stream", "kind", "correlation"):
        np.testing.assert_array_equal(getattr(plain, column), getattr(fast, column))
    assert [plain.name_of(i) for i in range(len(plain))] == [fast.name_of(i) for i in range(len(fast))]


def test_stdlib_gzip_names_a_truncated_gzip(
    traces_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonstream, "GZIP_FILE", gzip.GzipFile)
    data = (traces_dir / SMALL).read_bytes()
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ParityError, match="cut.json.gz") as info:
        load_trace(cut)
    assert "\n" not in str(info.value)
