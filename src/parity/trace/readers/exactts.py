"""Whether a block of Chrome-trace JSON needs exact timestamps, and the text rewrite for them.

Kineto's nanosecond-resolution traces write microsecond timestamps such as
``1712195495519689.047``, which a float64 holds only to a quarter of a microsecond. A block
whose timestamps are like that is decoded with ``ts`` kept as JSON text (converted exactly
by :mod:`.rawtimes`); when its values do not fit that decoder, each ``"ts": I.F`` is
rewritten to ``"ts": I, "ts_frac": 0.F`` first (:func:`split_ts`), so the integer part stays
exact and the fraction keeps its digits. :func:`needs_exact_ts` decides, per block.
"""

from __future__ import annotations

import re

FLOAT_EXACT_US = 2**42  # below this a float64 of microseconds still resolves 1 ns
EXACT_PROBE_BYTES = 128 << 10  # of each block: ~500 events
_BIG_FRACTIONAL_TS = re.compile(rb'"ts"\s*:\s*(\d{13,})\.\d*[1-9]')
_POINTS_BY_FIND = 32  # decimal points looked at one by one before a regex search takes over
_TS_SPLIT = re.compile(rb'"ts":(\s*)(\d+)\.(\d+)(?![\deE])')


def needs_exact_ts(text: bytes) -> bool:
    """Whether ``text`` has a fractional microsecond timestamp too large for a float64.

    Checked per block on its first :data:`EXACT_PROBE_BYTES` (a profiler formats every
    timestamp of a file alike), so a file whose first events are whole microseconds is still
    read exactly later on; ``.0`` fractions are exact in a float and do not count. The regex
    runs only where :func:`_may_need_exact` finds a point it could match at.
    """
    probe = bytes(text[:EXACT_PROBE_BYTES])
    if not _may_need_exact(probe):
        return False
    return any(int(m.group(1)) >= FLOAT_EXACT_US for m in _BIG_FRACTIONAL_TS.finditer(probe))


def _may_need_exact(probe: bytes) -> bool:
    """Whether some ``.`` in ``probe`` follows a run of digits worth at least
    :data:`FLOAT_EXACT_US`, which every match of ``_BIG_FRACTIONAL_TS`` has: where none
    does, the regex cannot match and is not run.

    The regex engine spends a step on every byte looking for ``"ts"`` (about 0.3 ms per
    128 kB); ``bytes.find`` jumps from point to point with ``memchr``, and most traces have a
    few dozen points in a probe (names, float ``args``). Past :data:`_POINTS_BY_FIND` of them
    a search for a point that ends such a run finishes the scan.
    """
    at = probe.find(b".")
    for _ in range(_POINTS_BY_FIND):
        if at < 0:
            return False
        if _BIG_POINT.match(probe, at):
            return True
        at = probe.find(b".", at + 1)
    return at >= 0 and _BIG_POINT.search(probe, at) is not None


def _at_least(number: bytes) -> bytes:
    """A regex of the digit strings as long as ``number`` and not below it: ``number`` itself,
    or its first ``k`` digits, a larger digit, then any digits."""
    larger = [
        re.escape(number[:k]) + b"[%c-9]" % (number[k] + 1) + rb"\d" * (len(number) - k - 1)
        for k in range(len(number))
        if number[k] < ord("9")
    ]
    return b"|".join([re.escape(number), *larger])


# A "." after 14 digits or more, or after 13 that are FLOAT_EXACT_US or more (both looked
# behind at, so the search stops only at points): what every match of _BIG_FRACTIONAL_TS has.
_BIG_POINT = re.compile(
    rb"\.(?:(?<=\d{14}\.)|(?<=(?:" + _at_least(b"%d" % FLOAT_EXACT_US) + rb")\.))"
)


def split_ts(text) -> bytes:
    """``text`` with each ``"ts": I.F`` written as ``"ts": I, "ts_frac": 0.F`` (see the module
    docstring); ``text`` may be a memoryview, as ``re.sub`` takes none."""
    return _TS_SPLIT.sub(rb'"ts":\1\2,"ts_frac":0.\3', bytes(text))
