"""The shape catalog: exactly 1,055 distinct shapes, pinned to its version; quick; user CSV."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from parity.families.gemm.catalog import (
    CATALOG_SIZE,
    CATALOG_VERSION,
    QUICK_MAX_FLOP,
    catalog,
    catalog_digest,
    load_user_shapes,
    quick_selection,
)
from parity.families.gemm.catalog.quick import QUICK_COMPUTE_COUNT, compute_tier
from parity.families.gemm.catalog.shapes import Shape
from parity.families.gemm.dtypes import DTYPES
from parity.metrics.roofline import MIN_SHAPES_FOR_CI, gemm_intensity, ridge_point
from parity.metrics.specs import load_specs
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
    tier = compute_tier(shapes)
    assert len(tier) == QUICK_COMPUTE_COUNT and set(tier) <= set(quick)
    rest = [s for s in quick if s not in tier]
    small = [s for s in rest if s.flops <= QUICK_MAX_FLOP]
    assert len(small) >= len(rest) - 4  # families with nothing small give their smallest shape
    assert sum(s.flops for s in rest) < 3e9
    assert sum(s.flops for s in tier) < 1.2e11  # about 0.1 s of a 1 TFLOP/s CPU
    order = [shapes.index(s) for s in quick]
    assert order == sorted(order)


def test_quick_selection_has_enough_compute_bound_shapes_for_a_ci_on_every_datasheet() -> None:
    # Every device class in the spec table, every dtype it publishes: at the datasheet ridge
    # R = peak / bandwidth, the quick selection holds at least MIN_SHAPES_FOR_CI shapes with AI >= R.
    quick = quick_selection(catalog())
    for spec in load_specs().values():
        if not spec.memory_bandwidth_bps:
            continue
        for name, peak in spec.peak_flops_by_dtype.items():
            if name not in DTYPES:
                continue
            dtype = DTYPES[name]
            ridge = ridge_point(peak, spec.memory_bandwidth_bps)
            bound = [s for s in quick
                     if gemm_intensity(s.m, s.n, s.k, in_bytes=dtype.in_bytes, out_bytes=dtype.out_bytes) >= ridge]
            assert len(bound) >= MIN_SHAPES_FOR_CI, (spec.key, name, ridge, len(bound))


def test_compute_tier_hand_case() -> None:
    # 1024^3 in bf16: AI = 2*1024^3 / (2*3*1024^2) = 341.3 FLOP/B; 2048^3: 682.7.
    small = Shape(m=1024, n=1024, k=1024, name="a", family="square", origin="test")
    large = Shape(m=2048, n=2048, k=2048, name="b", family="square", origin="test")
    assert compute_tier([large, small], count=2, min_ai=500.0) == [large]
    assert compute_tier([large, small], count=2, min_ai=300.0) == [small, large]


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
