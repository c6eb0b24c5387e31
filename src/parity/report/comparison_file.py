"""What a comparison file (``parity compare --json``) must hold for the report to draw it: the
fields the pages read, with their types. A file is checked against these types as it is read
(:func:`check_comparison`), so a field of the wrong type is one line naming the field's path
(``$.cases[3].ratio``) rather than an error in the middle of drawing. The pages read every
field with a default where it is absent, so only the three lists are required; fields the
pages do not read are not checked (a newer writer may add some).
"""

from __future__ import annotations

from typing import Any, Optional, Union

import msgspec

from parity.model.errors import ParityError

Number = Optional[float]  # msgspec reads a JSON integer as a float too
Interval = Optional[tuple[Number, Number]]  # a CI: [low, high], either bound null where unknown


class _Window(msgspec.Struct):
    length_us: float = 0.0
    source: Optional[str] = None


class _Run(msgspec.Struct):
    label: Optional[str] = None
    id: Optional[str] = None
    source: Optional[str] = None
    device: Any = None
    user_label: Optional[str] = None
    config: Any = None
    window: Optional[_Window] = None
    mode: Optional[str] = None
    ids: list[Any] = []
    spec: Any = None
    group: Any = None


class _Case(msgspec.Struct):
    suite: Optional[str] = None
    key: Optional[str] = None
    values: list[Number] = []
    params: dict[str, Any] = {}
    unit: Optional[str] = None
    ratio: Number = None
    ratio_ci95: Interval = None
    ratios: Optional[list[Number]] = None
    ratios_ci95: Optional[list[Interval]] = None
    shares: Optional[list[Number]] = None
    marked: bool = False
    comparable: bool = True
    reason: Optional[str] = None
    ci_kind: Optional[str] = None


class _Figure(msgspec.Struct):
    name: Optional[str] = None
    unit: Optional[str] = None
    value: Number = None
    ci95: Interval = None
    method: Optional[str] = None
    note: Optional[str] = None
    scope: dict[str, Any] = {}
    comparable: bool = True
    reason: Optional[str] = None
    ci_kind: Optional[str] = None


class _Audit(msgspec.Struct):
    condition: Optional[str] = None
    values: list[Any] = []
    matters: Union[str, bool, None] = None
    refused: bool = False


class _NotComparable(msgspec.Struct):
    name: Optional[str] = None
    suite: Optional[str] = None
    key: Optional[str] = None
    comparable: bool = False
    reason: Optional[str] = None


class _Comparison(msgspec.Struct):
    runs: list[_Run]
    cases: list[_Case]
    audit: list[_Audit]
    kind: str = "runs"
    summary: list[_Figure] = []
    not_comparable: list[_NotComparable] = []
    claims: list[str] = []
    notes: list[str] = []
    forced: bool = False
    ci_kind: Optional[str] = None


def check_comparison(data: Any, *, source: str) -> None:
    """A ParityError naming ``source``, the field and what it holds when ``data`` does not hold
    what the report reads (:class:`_Comparison`), or holds a ratio that no comparison writes:
    one at or below 0 (a speed ratio is a quotient of positive times; the chart's axis is
    logarithmic) or a CI whose low end is above its high end."""
    try:
        doc = msgspec.convert(data, _Comparison)
    except msgspec.ValidationError as exc:
        raise ParityError(f"--comparison {source}: {exc}; give a parity compare --json file") from None
    for index, case in enumerate(doc.cases):
        ratios = [("ratio", case.ratio), *((f"ratios[{i}]", r) for i, r in enumerate(case.ratios or []))]
        intervals = [("ratio_ci95", case.ratio_ci95), *((f"ratios_ci95[{i}]", c) for i, c in enumerate(case.ratios_ci95 or []))]
        bounds = [(f"{name}[{end}]", ci[end]) for name, ci in intervals if ci for end in (0, 1)]
        for name, value in ratios + bounds:
            if value is not None and not value > 0:
                raise ParityError(f"--comparison {source}: $.cases[{index}].{name} is {value}, not a ratio (a ratio "
                                  "is above 0); give a parity compare --json file")  # fmt: skip
        for name, ci in intervals:
            if ci and ci[0] is not None and ci[1] is not None and ci[0] > ci[1]:
                raise ParityError(f"--comparison {source}: $.cases[{index}].{name} runs from {ci[0]} down to {ci[1]}; "
                                  "give a parity compare --json file")  # fmt: skip
