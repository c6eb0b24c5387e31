"""Impossible option ranges are refused where options are parsed (``--set``, family flags, the
Python API): ``min_X`` above ``max_X`` and a size of zero bytes (``--set membw.max_bytes=0``)."""

from __future__ import annotations

import pytest

from parity.families.latency.options import LatencyOptions
from parity.families.membw.options import MembwOptions
from parity.harness.options import parse_options
from parity.model.errors import ParityError


@pytest.mark.parametrize(("raw", "expected"), [
    ({"max_bytes": 0}, "option membw.max_bytes=0 is a size of no bytes"),
    ({"max_bytes": "0"}, "option membw.max_bytes=0 is a size of no bytes"),
    ({"min_bytes": 8192, "max_bytes": 4096}, "option membw.min_bytes=8192 is above membw.max_bytes=4096"),
    ({"min_samples": 10, "max_samples": 5}, "option membw.min_samples=10 is above membw.max_samples=5"),
    ({"max_samples": 3}, "option membw.min_samples=5 is above membw.max_samples=3"),  # against the default 5
])
def test_impossible_membw_ranges_are_one_line_errors(raw: dict, expected: str) -> None:
    with pytest.raises(ParityError) as info:
        parse_options(MembwOptions, raw, suite="membw")
    assert expected in str(info.value) and "\n" not in str(info.value)


def test_a_typed_instance_is_checked_as_well() -> None:
    with pytest.raises(ParityError, match="a size of no bytes"):
        parse_options(MembwOptions, MembwOptions(max_bytes=0), suite="membw")


def test_possible_ranges_pass() -> None:
    assert parse_options(MembwOptions, {"min_bytes": 4096, "max_bytes": 4096}, suite="membw").max_bytes == 4096
    assert parse_options(MembwOptions, {"min_samples": 5, "max_samples": 5}, suite="membw").max_samples == 5
    assert parse_options(LatencyOptions, {"max_bytes": 8192}, suite="latency").max_bytes == 8192
