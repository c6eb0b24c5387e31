"""``parity membw``: memory bandwidth across transfer sizes, with the t = a + V/b fit."""

from __future__ import annotations

from parity.cli.suite_command import FamilyCommand, family_command

SPEC = FamilyCommand(suite="membw",
                     quick_help="Sizes up to 64 MiB, one per octave: about a minute on 2 CPU cores.")

membw = family_command(SPEC, help="""Memory bandwidth against transfer size: copy, read (a reduction), write (a
fill), triad, and host<->device copies with pinned and pageable memory on accelerators.

Each point gives the median time with its IQR, GB/s under the STREAM convention (bytes read
plus written; nvbandwidth's n/t beside it), and utilization against the measured ceiling (a
dedicated copy of several times the last-level cache, whatever --max-bytes says; a point over
it is a finding) and the datasheet peak. Sizes up to 1 MiB are measured cold (cache flushed)
and warm (repeated, no flush). Each curve is fitted with t = a + V/b: the fixed cost a, the
asymptotic bandwidth b and n½ = a·b; the quoted fixed cost and n½ are the warm ones.

\b
Example:
  parity membw --quick --json membw.json
  parity membw --device cuda:0 --ops copy,h2d-pinned --max-bytes 1GiB
""")
