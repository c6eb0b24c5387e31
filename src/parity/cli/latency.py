"""``parity latency``: pointer-chase latency against working-set size and concurrent blocks."""

from __future__ import annotations

from typing import Any

from parity.cli.suite_command import FamilyCommand, family_command


def _pages_both(options: dict[str, Any]) -> dict[str, Any]:
    """``--pages both`` (the old spelling of the default) is ``base,thp``."""
    pages = options.get("pages")
    if pages is not None and "both" in pages:
        options = {**options, "pages": tuple(dict.fromkeys(p for name in pages
                                                            for p in (("base", "thp") if name == "both" else (name,))))}
    return options


SPEC = FamilyCommand(
    suite="latency", translate=_pages_both,
    quick_help="Working sets to 4x the last-level cache (8x without --quick), within a quarter of free memory; "
               "short chains.")

latency = family_command(SPEC, help="""Pointer-chase latency: ns per dependent load through a random
single-cycle ring, from the slope between two chain lengths.

Curve one, latency against working-set size, shows the cache levels as plateaus, named and
compared with the sizes the device reports. Curve two, latency against concurrent blocks each
chasing its own 16 KiB, shows knees where a shared resource saturates (blocks are threads on
the CPU, Triton programs on GPUs). Every figure names its page size.

\b
Example:
  parity latency --quick --json latency.json
  parity latency --pages thp --max-bytes 256MiB
""")
