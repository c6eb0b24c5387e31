"""Gzip traces read the same through zlib as through ISA-L (the optional ``fast`` extra)."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest

from parity.model.errors import ParityError
from parity.trace.load import load_trace
from parity.trace.readers import gzipfile

SMALL = "kineto/hta/trace_filter/sampled_rank-0.json.gz"


class CountingZlib:
    """zlib, counting the decompressors made (so the test knows the fallback ran)."""

    error = zlib.error

    def __init__(self) -> None:
        self.made = 0

    def decompressobj(self, *args, **kwargs):
        self.made += 1
        return zlib.decompressobj(*args, **kwargs)


def test_zlib_fallback_reads_the_same_table(traces_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = load_trace(traces_dir / SMALL)
    counting = CountingZlib()
    monkeypatch.setattr(gzipfile, "_inflate_lib", counting)
    monkeypatch.setattr(gzipfile, "GZIP_ERRORS", (zlib.error,))
    plain = load_trace(traces_dir / SMALL)
    assert counting.made >= 1
    assert len(plain) == len(fast) > 0
    for column in ("start_ns", "end_ns", "stream", "kind", "correlation"):
        np.testing.assert_array_equal(getattr(plain, column), getattr(fast, column))
    assert [plain.name_of(i) for i in range(len(plain))] == [fast.name_of(i) for i in range(len(fast))]


def test_zlib_fallback_names_a_truncated_gzip(
    traces_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gzipfile, "_inflate_lib", zlib)
    monkeypatch.setattr(gzipfile, "GZIP_ERRORS", (zlib.error,))
    data = (traces_dir / SMALL).read_bytes()
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ParityError, match="cut.json.gz") as info:
        load_trace(cut)
    assert "\n" not in str(info.value)
