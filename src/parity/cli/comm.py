"""``parity comm collectives|moe|overlap``: the communication suites on a group of ranks.

Each command is made from its suite's options (``parity.cli.suite_command``) and measures that
suite through the same path as ``parity run --ranks N`` (``parity.cli.run_ranks``: N local
ranks, or ``--join`` under the user's torchrun/srun); rank 0 stores every case, then the
command prints the suite's view from the stored run and writes ``--json``.

``parity comm preflight`` times every pair of ranks (``parity.families.preflight``); each comm
run afterwards records the newest preflight of the same ranks (or the one ``--preflight RUN``
names) in its provenance (``parity.families.preflight.record``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

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
      parity comm preflight --nproc 4 --backend gloo --budget 10
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

comm.add_command(family_command(FamilyCommand(suite="preflight", ranks=True, quick_help=QUICK),
                                help="""Point-to-point bandwidth and latency between every pair of ranks, so every
pair of nodes and every pair of ranks within a node: a ping-pong of --latency-bytes and one of
--size-bytes per pair, one-way time = round trip / 2 (the max over ranks per iteration, median),
within --budget timed seconds in all. Links (pairs of nodes) below --slow-fraction of the median
link's bandwidth are named slow. Comm runs that follow record the newest preflight of the same
ranks in their provenance (or the one --preflight RUN names).

\b
Example:
  parity comm preflight --nproc 4 --backend gloo --budget 10
  torchrun --nnodes 2 --nproc-per-node 2 ... -m parity comm preflight --join --backend gloo
"""))


def _run_ids(db: str | None) -> set[str]:
    from parity.store import Store

    with Store.open(db) as store:
        return {r.run_id for r in store.list_runs()}


def _writes_store() -> bool:
    """Whether this process writes the store: rank 0 of a joined group, or a local launch."""
    return os.environ.get("RANK", "0") == "0"


def _add_to_json(path: str | None, entry: dict[str, Any]) -> None:
    """The preflight entry also in the ``--json`` the command wrote before it was recorded."""
    import json

    if not path or not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as source:
        payload = json.load(source)
    if isinstance(payload.get("provenance"), dict):
        payload["provenance"]["preflight"] = entry
        with open(path, "w", encoding="utf-8") as out:
            json.dump(payload, out, indent=2, default=str)


def with_preflight(command: click.Command, suite: str) -> click.Command:
    """``command`` with ``--preflight RUN``: after its run is stored, the chosen (else the newest
    matching) preflight is recorded in that run's provenance."""
    command.params.append(click.Option(
        ["--preflight", "preflight_id"], default=None, metavar="RUN",
        help="Record this preflight run in the run's provenance. Default: the newest preflight of the same "
             "ranks in the store."))
    inner: Callable[..., Any] = command.callback  # type: ignore[assignment]

    def callback(**values: Any) -> Any:
        from parity.families.preflight.record import attach_preflight
        from parity.store import Store

        preflight_id = values.pop("preflight_id", None)
        db = values.get("db_path")
        before = _run_ids(db) if _writes_store() else set()
        status = inner(**values)
        if not _writes_store():
            return status
        with Store.open(db) as store:
            for run in store.list_runs():
                if run.run_id not in before and list(run.config.get("suites", [])) == [suite]:
                    entry = attach_preflight(store, run.run_id, preflight_id=preflight_id)
                    if entry is not None:
                        _add_to_json(values.get("json_path"), entry)
                        click.echo(f"parity: run {run.run_id} records preflight {entry['run_id']} "
                                   f"(slow links: {', '.join(entry['slow']) or 'none'})", err=True)
        return status

    command.callback = callback
    return command


for _name in ("collectives", "moe", "overlap"):
    with_preflight(comm.commands[_name], _name)
