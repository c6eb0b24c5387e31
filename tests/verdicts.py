"""A passing run's verdict as a shared machine may print it.

parity marks a figure ``contended`` when others used the machine while it was measured, and a
run with such a figure ends DOUBTFUL instead of OK (exit status 0 either way: its checks
passed). A test that runs a real or fake suite and checks its output cannot choose the load of
the machine it runs on, so it accepts that verdict, and only that one: a failed check, an
``invalid`` figure or an incomplete run is never taken for OK.
"""

from __future__ import annotations

import re

CONTENDED_ONLY = re.compile(r"DOUBTFUL: (\d+) figures? cannot be trusted: contended \1\b")


def ok_or_contended(text: str) -> bool:
    """Whether ``text`` (a verdict, or a line ending with one) is OK, or DOUBTFUL with
    contention as its only reason."""
    verdict = text.rstrip().rsplit(" - ", 1)[-1] if " - " in text else text.strip()
    if verdict == "OK" or verdict.startswith("OK ("):
        return True
    return CONTENDED_ONLY.fullmatch(verdict.split(" (", 1)[0]) is not None



def verdict_line(output: str, counts: str) -> str:
    """The line of ``output`` that holds ``counts`` (``(4 cases, 0 not ok)``, ``3 cases, 0
    failed``): the run's verdict line; empty when there is none."""
    return next((line.strip() for line in output.splitlines() if counts in line), "")
