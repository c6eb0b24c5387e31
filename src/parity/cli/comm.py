"""``parity comm collectives|moe|overlap``: the communication suites on a group of ranks.

Thin over ``parity run --ranks N``: each command measures one suite through the same runner
path (``parity.cli.run_ranks.measure_on_ranks``: N local ranks, or ``--join`` under the user's
torchrun/srun), rank 0 stores every case, then the command prints the suite's table from the
stored run and writes ``--json``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from parity.cli.output import json_option, write_json
from parity.cli.runs import db_option
from parity.cli.suite_command import parse_bytes
from parity.model.errors import ParityError
from parity.store import Store


def _group_options(function: Callable[..., Any]) -> Callable[..., Any]:
    """``--nproc``, ``--join``, ``--backend``, ``--device``, ``--rank-timeout``, ``--quick``,
    ``--db`` and ``--json``, shared by every comm command."""
    for decorator in reversed((
        click.option("--nproc", type=click.IntRange(1), default=1, show_default=True, metavar="N",
                     help="Start N local ranks (one device each; gloo ranks on the CPU)."),
        click.option("--join", is_flag=True, help="Be one rank of the user's torchrun/srun group (multi-node)."),
        click.option("--backend", default=None, metavar="NAME",
                     help="torch.distributed backend (gloo, nccl, hccl, mpi, xccl). Default: the device's."),
        click.option("--device", "device_name", default=None, metavar="DEV",
                     help="Device type per rank (cuda, npu, cpu; rank r takes index r). Default: the best one."),
        click.option("--rank-timeout", "step_timeout_s", type=click.FloatRange(1.0), default=300.0,
                     show_default=True, metavar="SECONDS",
                     help="How long a rank waits for the others before naming the one that died or hangs."),
        click.option("--quick", is_flag=True, help="Fewer, smaller cases: a smoke run, not a figure to quote."),
        db_option,
        json_option,
    )):
        function = decorator(function)
    return function


def _measure(suite: str, options: dict[str, Any], *, nproc: int, join: bool, backend: str | None,
             device_name: str | None, step_timeout_s: float, quick: bool, db_path: str | None,
             json_path: str | None, render: Callable[[dict[str, Any]], str]) -> int:
    """Measure ``suite`` on the ranks, print its table, write JSON; the exit status."""
    from parity.cli.run_ranks import measure_on_ranks

    if join and nproc != 1:
        raise ParityError("--join takes the ranks its launcher started; drop --nproc")
    with Store.open(db_path) as store:
        db = str(store.path)
    run_id = measure_on_ranks(ranks=nproc, join=join, db=db, suites=[suite], quick=quick,
                              options={suite: options}, device_name=device_name, resume_id=None,
                              step_timeout_s=step_timeout_s, backend=backend)
    if run_id is None:
        return 0  # a joined rank other than 0: rank 0 reports
    with Store.open(db) as store:
        run = store.get_run(run_id)
        cases = store.cases(run_id)
    outcome = run.summary.get("suites", {}).get(suite, {})
    if outcome.get("summary_error"):
        raise ParityError(f"summarising {suite} failed: {outcome['summary_error']}")
    summary = dict(outcome.get("summary", {}))
    ok = bool(outcome.get("ok")) and bool(summary.get("ok"))
    to_stderr = json_path == "-"
    click.echo(f"{suite} (run {run_id}, store {db})", err=to_stderr)
    click.echo(render(summary), err=to_stderr)
    write_json(json_path, f"comm.{suite}", {"run_id": run_id, "ok": ok, **summary,
                                            "figures": outcome.get("figures", []),
                                            "cases": [c.to_dict() for c in cases],
                                            "provenance": run.provenance})
    return 0 if ok else 1


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


@comm.command()
@click.option("--ops", default=None, metavar="LIST",
              help="Collectives, comma-separated: all_reduce, all_gather, reduce_scatter, all_to_all, "
                   "broadcast, reduce, sendrecv. Default: all.")
@click.option("--min-bytes", default=None, metavar="SIZE", help="Smallest size S (nccl-tests -b; default 1KiB).")
@click.option("--max-bytes", default=None, metavar="SIZE",
              help="Largest size S (nccl-tests -e; default 64MiB, 1MiB with --quick).")
@click.option("--factor", type=click.FloatRange(1.0, min_open=True), default=None,
              help="Size multiplier (nccl-tests -f; default 4).")
@click.option("--dtypes", default=None, metavar="LIST", help="Element types: fp32, fp64, bf16, fp16, int32 (default fp32).")
@click.option("--placement", type=click.Choice(["both", "in-place", "out-of-place"]), default=None,
              help="In place, out of place, or both where torch offers both (default both).")
@click.option("--iters", type=click.IntRange(1), default=None, help="Timed iterations per size (nccl-tests -n; default 20).")
@click.option("--warmup-s", type=click.FloatRange(0.0), default=None, help="Untimed warm-up per size, s (default 0.02).")
@_group_options
def collectives(ops: str | None, min_bytes: str | None, max_bytes: str | None, factor: float | None,
                dtypes: str | None, placement: str | None, iters: int | None, warmup_s: float | None,
                **group: Any) -> int:
    """Collective bandwidth in nccl-tests' table: per size, the time as the maximum over ranks
    per iteration (median, p99, the fastest rank beside it), algbw = S/t and busbw = algbw·f
    with nccl-tests' factors, and #wrong from a data check of every size; the average bus
    bandwidth and OK or FAILED at the end.

    \b
    Example:
      parity comm collectives --nproc 4 --backend gloo --json out.json
      parity comm collectives --nproc 8 --device cuda --ops all_reduce --min-bytes 8 --max-bytes 8GiB --factor 2
    """
    from parity.families.collectives.views import render_collectives

    options: dict[str, Any] = {}
    for key, value in (("ops", _split(ops)), ("dtypes", _split(dtypes)), ("placement", placement),
                       ("min_bytes", parse_bytes(min_bytes, option="--min-bytes")),
                       ("max_bytes", parse_bytes(max_bytes, option="--max-bytes")), ("factor", factor),
                       ("iterations", iters), ("warmup_s", warmup_s)):
        if value is not None:
            options[key] = value
    return _measure("collectives", options, render=render_collectives, **group)


def _split(text: str | None) -> list[str] | None:
    return None if text is None else [part.strip() for part in text.split(",") if part.strip()]


@comm.command()
@click.option("--preset", type=click.Choice(["low-latency", "normal", "ascend", "custom"]), default=None,
              help="low-latency: 128 tokens, hidden 7168, top-8 of 288; normal: 4096 tokens, top-8 of 256; "
                   "ascend: top-6 of 256 (DeepEP's Ascend port); custom: give all four sizes. Default low-latency.")
@click.option("--tokens", type=click.IntRange(1), default=None, help="Tokens per rank (overrides the preset).")
@click.option("--hidden", type=click.IntRange(1), default=None, help="Hidden size (overrides the preset).")
@click.option("--top-k", type=click.IntRange(1), default=None, help="Experts per token (overrides the preset).")
@click.option("--experts", type=click.IntRange(1), default=None, help="Experts in all (overrides the preset).")
@click.option("--dispatch-dtypes", default=None, metavar="LIST", help="fp8, bf16 or both (default both).")
@click.option("--skew", type=click.FloatRange(0.0), default=None,
              help="Zipf exponent of expert popularity (default 0: uniform routing).")
@click.option("--routing-file", default=None, metavar="PATH", help=".npy expert ids [world, tokens, top_k].")
@click.option("--seed", type=int, default=None, help="Seed of routing, weights and token values (default 0).")
@click.option("--iters", type=click.IntRange(1), default=None, help="Timed iterations per case (default 20).")
@_group_options
def moe(preset: str | None, tokens: int | None, hidden: int | None, top_k: int | None, experts: int | None,
        dispatch_dtypes: str | None, skew: float | None, routing_file: str | None, seed: int | None,
        iters: int | None, **group: Any) -> int:
    """MoE dispatch and combine over all_to_all_single with uneven splits: time as the maximum
    over ranks per iteration (p50, p99, the fastest rank), and GB/s in four labelled
    conventions: DeepEP's algorithm bytes, logical (rank-deduplicated) bytes, cross-rank bytes,
    and the nccl-tests-style bus figure. Every rank checks the routing's digest before the
    first exchange; dispatch is checked byte for byte, combine(dispatch(x)) against the
    weighted sum.

    \b
    Example:
      parity comm moe --nproc 4 --backend gloo --preset low-latency --json out.json
      parity comm moe --nproc 8 --device cuda --preset normal --skew 1.2
    """
    from parity.families.moe.views import render_moe

    options: dict[str, Any] = {}
    for key, value in (("preset", preset), ("tokens", tokens), ("hidden", hidden), ("top_k", top_k),
                       ("experts", experts), ("dispatch_dtypes", _split(dispatch_dtypes)), ("skew", skew),
                       ("routing_file", routing_file), ("seed", seed), ("iterations", iters)):
        if value is not None:
            options[key] = value
    return _measure("moe", options, render=render_moe, **group)


@comm.command()
@click.option("--kernels", default=None, metavar="LIST", help="gemm, copy or both (default both).")
@click.option("--tokens", type=click.IntRange(1), default=None, help="Tokens per rank of the exchange (default 128).")
@click.option("--hidden", type=click.IntRange(1), default=None, help="Hidden size of the exchange (default 2048).")
@click.option("--gemm-n", type=click.IntRange(1), default=None, help="GEMM size n (default 512).")
@click.option("--copy-bytes", default=None, metavar="SIZE", help="Bytes the copy reads (default 32MiB).")
@click.option("--iters", type=click.IntRange(1), default=None, help="Timed iterations of each run (default 10).")
@_group_options
def overlap(kernels: str | None, tokens: int | None, hidden: int | None, gemm_n: int | None,
            copy_bytes: str | None, iters: int | None, **group: Any) -> int:
    """A MoE exchange run alone, a compute kernel (a GEMM; a memory-bound copy) alone, and both
    at once on the same device: each one's time alone and together, its slowdown, and the
    overlap achieved, (a + b - both)/min(a, b), all as maxima over ranks per iteration.

    \b
    Example:
      parity comm overlap --nproc 2 --backend gloo --json o.json
      parity comm overlap --nproc 8 --device cuda --gemm-n 8192 --copy-bytes 1GiB
    """
    from parity.families.overlap.views import render_overlap

    options: dict[str, Any] = {}
    for key, value in (("kernels", _split(kernels)), ("tokens", tokens), ("hidden", hidden), ("gemm_n", gemm_n),
                       ("copy_bytes", parse_bytes(copy_bytes, option="--copy-bytes")), ("iterations", iters)):
        if value is not None:
            options[key] = value
    return _measure("overlap", options, render=render_overlap, **group)
