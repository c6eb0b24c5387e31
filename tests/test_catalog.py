"""The shape catalog: exactly 1,055 distinct shapes, pinned to its version; quick; user CSV."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from parity.bench.catalog import (
    CATALOG_SIZE,
    CATALOG_VERSION,
    QUICK_MAX_FLOP,
    catalog,
    catalog_digest,
    load_user_shapes,
    quick_selection,
)
from parity.model.errors import ParityError

# Changing a rule changes this digest: bump CATALOG_VERSION and record the new digest here.
GOLDEN = {1: "10b6510429259e4e0c0d0fd15e8f66c01a5c9c93e04245e24b3a5ec567e323d5"}


def test_exactly_1055_distinct_shapes_with_unique_names() -> None:
    shapes = catalog()
    assert len(shapes) == CATALOG_SIZE == 1055
    assert len({s.dims for s in shapes}) == 1055
    assert len({s.name for s in shapes}) == 1055
    assert all(min(s.dims) >= 1 and s.origin for s in shapes)


def test_catalog_is_pinned_to_its_version() -> None:
    assert catalog_digest() == GOLDEN[CATALOG_VERSION]
    assert catalog_digest() == catalog_digest(catalog())


def test_families_and_llm_coverage() -> None:
    shapes = catalog()
    families = Counter(s.family for s in shapes)
    assert set(families) == {"llm", "square", "m-sweep", "n-sweep", "k-sweep", "aspect", "unaligned"}
    llm = [s for s in shapes if s.family == "llm"]
    assert {s.m for s in llm} == {2**i for i in range(15)}  # 1 .. 16,384 tokens
    names = {s.name for s in llm}
    # Llama-3 70B at tp=8: fused QKV N = (64 + 16) * 128 / 8 = 1280, K = 8192.
    assert "llama3-70b.tp8.qkv_proj.t1024" in names
    assert any(s.dims == (1024, 1280, 8192) for s in llm)
    # DeepSeek-V3 MLA: kv_b_proj N = 128 * 256 = 32768, K = 512; MoE expert down K = 2048.
    assert any(s.dims == (16, 32768, 512) for s in llm)
    assert any(s.dims == (16, 7168, 2048) for s in llm)
    unaligned = [s for s in shapes if s.family == "unaligned"]
    assert any(s.dims == (8191, 8191, 8191) for s in unaligned)
    assert any(s.dims == (4097, 4097, 4097) for s in unaligned)
    assert max(s.k for s in shapes if s.family == "k-sweep") == 262144


def test_quick_selection_keeps_every_family_small_and_is_stable() -> None:
    shapes = catalog()
    quick = quick_selection(shapes)
    assert quick == quick_selection(catalog())
    assert {s.family for s in quick} == {s.family for s in shapes}
    assert 20 <= len(quick) <= 60
    small = [s for s in quick if s.flops <= QUICK_MAX_FLOP]
    assert len(small) >= len(quick) - 4  # families with nothing small give their smallest shape
    assert sum(s.flops for s in quick) < 3e9
    order = [shapes.index(s) for s in quick]
    assert order == sorted(order)


def test_user_csv_with_and_without_header(tmp_path: Path) -> None:
    path = tmp_path / "shapes.csv"
    path.write_text("# my shapes\nm,n,k,name\n64,128,256,first\n\n3,5,7,\n")
    shapes = load_user_shapes(path)
    assert [s.dims for s in shapes] == [(64, 128, 256), (3, 5, 7)]
    assert shapes[0].name == "first" and shapes[1].name == "user.3x5x7"
    assert shapes[1].family == "user" and "line 5" in shapes[1].origin
    bare = tmp_path / "bare.csv"
    bare.write_text("16,16,16\n32, 32, 32, square32\n")
    assert [s.name for s in load_user_shapes(bare)] == ["user.16x16x16", "square32"]


@pytest.mark.parametrize(("text", "message"), [
    ("m,n,k\n64,64,x\n", r"bad.csv:2: k = 'x' is not an integer"),
    ("64,64,0\n", r"bad.csv:1: k = 0 is out of range"),
    ("64,64\n", r"bad.csv:1: '64,64' has 2 column"),
    ("a,b,c\n1,2,3\n", r"bad.csv:1: header 'a,b,c' lacks column 'm'"),
    ("8,8,8\n8,8,8\n", r"bad.csv:2: shape 8x8x8 repeats line 1"),
    ("# nothing\n", r"has no shapes"),
    ("m,n,k\n", r"has a header but no shapes"),
])
def test_user_csv_errors_name_file_line_and_value(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(ParityError, match=message):
        load_user_shapes(path)


def test_missing_file_is_a_parity_error(tmp_path: Path) -> None:
    with pytest.raises(ParityError, match="cannot read shapes file"):
        load_user_shapes(tmp_path / "absent.csv")
