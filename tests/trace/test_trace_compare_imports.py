"""``parity trace compare`` loads what a trace comparison needs and nothing more.

Each case runs the command in a fresh interpreter and lists the modules it imported: comparing
a Kineto trace with an Ascend one loads the two readers, numpy and rich (the table is drawn),
but never torch, the run side of ``parity.compare`` (runs, bootstrap, join, the run audit,
fleets), the store or SQLite, the families or the harness, ``numpy.ma`` or ``multiprocessing``
(a small file is read in this process). ``--help`` loads no numpy. These are behaviours (which
code a command reaches), not timings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import parity

KINETO = "kineto/hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"  # one process reads it
ASCEND = "ascend/msinsight/text/level0/rank0_ascend_pt"
# never needed to compare trace files
NOT_FOR_TRACES = (
    "torch", "pandas", "sqlite3", "numpy.ma", "multiprocessing", "rich.progress", "rich._emoji_codes",
    "parity.store", "parity.harness", "parity.families", "parity.ceilings", "parity.device", "parity.ranks",
    "parity.compare.runs", "parity.compare.bootstrap", "parity.compare.join", "parity.compare.audit",
    "parity.compare.fleets", "parity.model.result", "parity.model.samples", "parity.trace.export",
    "parity.trace.whatif", "parity.trace.fleet",
)  # fmt: skip
_PROBE = """
import json, os, sys
from parity.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit as exit:
    status = exit.code or 0
threads = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else None
sys.stderr.write("MODULES " + json.dumps({"status": status, "modules": sorted(sys.modules), "threads": threads,
                                          "openblas": os.environ.get("OPENBLAS_NUM_THREADS")}) + "\\n")
"""


def probe(argv: list[str], tmp_path: Path, **env: str) -> dict:
    """What a fresh ``parity`` process holds when ``argv`` is done (it must succeed): its
    modules, its threads, and ``OPENBLAS_NUM_THREADS`` as it left it."""
    environment = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    environment.update(env, PYTHONPATH=str(Path(parity.__file__).resolve().parents[1]))
    done = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, env=environment,
                          cwd=tmp_path, timeout=120, check=False)  # fmt: skip
    line = next(row for row in done.stderr.splitlines() if row.startswith("MODULES "))
    report = json.loads(line.removeprefix("MODULES "))
    assert report["status"] == 0, done.stderr
    return report


def _openblas() -> bool:
    """Whether this numpy is built on OpenBLAS (whose thread pool the variable sizes)."""
    import numpy as np

    return "openblas" in str(np.show_config(mode="dicts")["Build Dependencies"]["blas"].get("name", "")).lower()


def _loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


def test_a_trace_comparison_loads_no_run_side_no_store_and_no_torch(traces_dir: Path, tmp_path: Path) -> None:
    report = probe(["trace", "compare", str(traces_dir / KINETO), str(traces_dir / ASCEND), "--window", "span",
                    "--json", str(tmp_path / "c.json")], tmp_path)  # fmt: skip
    modules = set(report["modules"])
    assert {"parity.compare.traces", "parity.trace.readers.kineto", "parity.trace.readers.ascend_text",
            "numpy", "rich.table"} <= modules  # fmt: skip
    assert _loaded(modules, NOT_FOR_TRACES) == []
    assert json.loads((tmp_path / "c.json").read_text())["kind"]


@pytest.mark.parametrize("command", ["compare", "analyze"])
def test_numpy_loads_with_one_blas_thread_and_the_environment_is_left_as_it_was(traces_dir: Path, tmp_path: Path,
                                                                                 command: str) -> None:
    argv = ["trace", command, str(traces_dir / KINETO), *([str(traces_dir / ASCEND)] if command == "compare" else []),
            "--window", "span"]  # fmt: skip
    report = probe(argv, tmp_path)
    assert report["openblas"] is None  # set only while numpy loaded
    if report["threads"] is not None and _openblas():
        assert report["threads"] == 1  # no OpenBLAS pool spinning beside the command
    chosen = probe(argv, tmp_path, OPENBLAS_NUM_THREADS="2")
    assert chosen["openblas"] == "2"  # the user's choice is kept


def test_compare_help_loads_no_numpy(tmp_path: Path) -> None:
    modules = set(probe(["trace", "compare", "--help"], tmp_path)["modules"])
    assert "parity.cli.trace_compare" in modules
    assert _loaded(modules, ("numpy", "rich", "parity.trace", "parity.compare")) == []


def test_the_compare_package_still_gives_every_name_it_lists() -> None:
    import parity.compare as package

    for name in package.__all__:
        assert getattr(package, name) is not None
    from parity.compare import AuditEntry
    from parity.compare.audit import AuditEntry as from_audit

    assert AuditEntry is from_audit
