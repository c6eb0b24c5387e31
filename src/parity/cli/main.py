"""The ``parity`` command."""

from __future__ import annotations

import gc
import logging
import os
import sys

import click

from parity import __version__
from parity.cli.lazy import LazyGroup
from parity.cli.numpy_load import own_process
from parity.model.errors import ParityError

COMMANDS = {  # name -> (where it lives, the start of its short help: parity --help imports none)
    "run": ("parity.cli.run:run", "Measure the registered benchmarks on one device, store every case as it is measured"),
    "runs": ("parity.cli.runs:runs", "List, show and export the runs in the results store."),
    "doctor": ("parity.cli.doctor:doctor", "Report this machine (CPU, architecture, cores, flags, affinity, OS, torch"),
    "gemm": ("parity.cli.gemm:gemm", "Time matmul over the shape catalog: TFLOP/s per shape, the measured compute"),
    "kernels": ("parity.cli.kernels:kernels", "Block-scaled fp8 GEMM (A per 1x128 group, B per 128x128 block, e4m3)"),
    "membw": ("parity.cli.membw:membw", "Memory bandwidth against transfer size: copy, read (a reduction), write"),
    "latency": ("parity.cli.latency:latency", "Pointer-chase latency: ns per dependent load through a random"),
    "trace": ("parity.cli.trace:trace", "Analyse real profiler traces: streams, overlap, idle and what-if predictions."),
    "comm": ("parity.cli.comm:comm", "Communication over torch.distributed: collectives by nccl-tests' conventions"),
    "export": ("parity.cli.export:export", "Measured inputs for simulators, from stored runs, with their provenance"),
    "decode": ("parity.cli.decode:decode", "LLM decode: tokens/s per card at a time-per-output-token target"),
    "report": ("parity.cli.report:report", "Write one self-contained HTML report (opens offline, no network request"),
    "compare": ("parity.cli.compare:compare", "Compare runs, stored trace analyses, trace files or fleet analyses"),
}


@click.group(
    cls=LazyGroup,
    lazy_commands=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="parity")
@click.option("-v", "--verbose", count=True, help="More diagnostics on stderr (-vv for debug).")
def cli(verbose: int) -> None:
    """Measure AI accelerators fairly: the same tests on any PyTorch device, every condition
    recorded, every figure with its method and scope.

    \b
    Example:
      parity run --quick            # benchmark the best local device, store and summarise
      parity trace analyze rank0.json.gz --json out.json
    """
    level = logging.WARNING - 10 * verbose
    logging.basicConfig(level=max(level, logging.DEBUG), format="%(levelname)s %(name)s: %(message)s")


def main(argv: list[str] | None = None) -> None:
    """Entry point: library errors become one line on stderr and exit status 2.

    Set ``PARITY_DEBUG=1`` to see the traceback of an unexpected error.
    """
    if argv is None:  # the process's own command line: the process ends with the command
        own_process()
    try:
        status = cli.main(args=argv, prog_name="parity", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("parity: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        click.echo(f"parity: {usage_line(exc)}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except ParityError as exc:
        click.echo(f"parity: {exc}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        click.echo("parity: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as exc:  # noqa: BLE001 - the CLI never shows a traceback by default
        if os.environ.get("PARITY_DEBUG"):
            raise
        message = str(exc).splitlines()[0] if str(exc) else ""
        click.echo(
            f"parity: internal error: {type(exc).__name__}: {message} "
            "(set PARITY_DEBUG=1 for the traceback and report it)",
            err=True,
        )
        sys.exit(1)
    # Commands return None for success or an int exit status (1: the run FAILED its checks).
    if argv is None:  # the process's own command line: the process ends here
        _spare_shutdown_collection()
    sys.exit(status if isinstance(status, int) else 0)


def usage_line(exc: click.ClickException) -> str:
    """A parser error as one line, as every other error: click's message, its first letter
    lowercased, and for a usage error where to read the command's help (click prints three
    lines: usage, a hint, the error)."""
    message = " ".join(exc.format_message().split()).rstrip(".")
    message = message[:1].lower() + message[1:]
    context = getattr(exc, "ctx", None)
    if isinstance(exc, click.UsageError) and context is not None:
        message += f"; see {context.command_path} --help"
    return message


def _spare_shutdown_collection() -> None:
    """Move every live object to the collector's permanent generation before the process exits.

    The command is done and its objects go with the process; without this the interpreter's
    shutdown collections traverse every object of every imported module (numpy, rich, the
    trace readers), some 30 to 80 ms of a short ``parity trace analyze``. Nothing is skipped
    that Python promises at exit: ``atexit`` handlers still run (logging flushes there), files
    were closed by the commands, and ``__del__`` of objects alive at exit is never guaranteed.
    Only for the entry point (``argv`` None): a caller that passes ``argv`` (a test, a script)
    keeps its process and its collector as they were.
    """
    gc.freeze()
