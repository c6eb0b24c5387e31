"""``parity comm collectives|moe|overlap``: the communication suites on a group of ranks.

Each command is made from its suite's options (``parity.cli.suite_command``) and measures that
suite through the same path as ``parity run --ranks N`` (``parity.cli.run_ranks``: N local
ranks, or ``--join`` under the user's torchrun/srun); rank 0 stores every case, then the
command prints the suite's view from the stored run and writes ``--json``.
"""

from __future__ import annotations

import click

from parity.cli.suite_command import FamilyCommand, family_command

QUICK = "Fewer, smaller cases: a smoke run, not a figure to quote."


@click.group()
def comm() -> None:
    """Communication over torch.distributed: collectives by nccl-tests' conventions, MoE
    dispatch/combine in labelled byte conventions, and their interference with compute.

    \b
    Example:
      parity comm collectives --nproc 4 --backend gloo --json out.json
      parity comm moe --nproc 4 --backend gloo --preset low-latency --json out.json
      parity comm overlap --nproc 2 --backend gloo --json o.json
    """


comm.add_command(family_command(FamilyCommand(suite="collectives", ranks=True, quick_help=QUICK),
                                help="""Collective bandwidth in nccl-tests' table: per size, the time as the
maximum over ranks per iteration (median, p99, the fastest rank beside it), algbw = S/t and
busbw = algbw·f with nccl-tests' factors, and #wrong from a data check of every size; the
average bus bandwidth and OK or FAILED at the end.

\b
Example:
  parity comm collectives --nproc 4 --backend gloo --json out.json
  parity comm collectives --nproc 8 --device cuda --ops all_reduce --min-bytes 8 --max-bytes 8GiB --factor 2
"""))

comm.add_command(family_command(FamilyCommand(suite="moe", ranks=True, quick_help=QUICK),
                                help="""MoE dispatch and combine over all_to_all_single with uneven splits: time
as the maximum over ranks per iteration (p50, p99, the fastest rank), and GB/s in four labelled
conventions: DeepEP's algorithm bytes, logical (rank-deduplicated) bytes, cross-rank bytes, and
the nccl-tests-style bus figure. Every rank checks the routing's digest before the first
exchange; dispatch is checked byte for byte, combine(dispatch(x)) against the weighted sum.
Presets: low-latency (128 tokens, hidden 7168, top-8 of 288), normal (4096 tokens, top-8 of
256), ascend (top-6 of 256, DeepEP's Ascend port), custom (give all four sizes).

\b
Example:
  parity comm moe --nproc 4 --backend gloo --preset low-latency --json out.json
  parity comm moe --nproc 8 --device cuda --preset normal --skew 1.2
"""))

comm.add_command(family_command(FamilyCommand(suite="overlap", ranks=True, quick_help=QUICK),
                                help="""A MoE exchange run alone, a compute kernel (a GEMM; a memory-bound copy)
alone, and both at once on the same device: each one's time alone and together, its slowdown,
and the overlap achieved, (a + b - both)/min(a, b), all as maxima over ranks per iteration.

\b
Example:
  parity comm overlap --nproc 2 --backend gloo --json o.json
  parity comm overlap --nproc 8 --device cuda --gemm-n 8192 --copy-bytes 1GiB
"""))
