"""``parity trace analyze`` loads what its analysis needs and nothing more.

Each case runs the command in a fresh interpreter and lists the modules it imported: a Kineto
file loads neither the Ascend readers (CSV, SQLite) nor the export writers nor ``numpy.ma``; an
Ascend folder or an Nsight SQLite file loads its own reader; ``--help`` loads no numpy. These
are behaviours (which code a command reaches), not timings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import parity
from parity.trace.table import distinct_sorted as _distinct

KINETO = "kineto/hta/negative_queue_length_values_check/rank0.json.gz"
ASCEND = "ascend/msinsight/text/level0/rank0_ascend_pt"
NSYS = "nsys/extrap/con_kernel.sqlite"
# never needed to analyse a Kineto file
NOT_FOR_KINETO = (
    "torch", "pandas", "pyarrow", "dask", "sqlite3", "csv", "numpy.ma", "rich.progress", "yaml",
    "parity.store", "parity.harness", "parity.families", "parity.ceilings", "parity.device", "parity.model.result", "parity.model.samples", "parity.trace.export", "parity.trace.whatif",
    "parity.trace.readers.ascend_text", "parity.trace.readers.ascend_db", "parity.trace.readers.nsys",
)  # fmt: skip
_PROBE = """
import json, sys
from parity.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit as exit:
    status = exit.code or 0
sys.stderr.write("MODULES " + json.dumps({"status": status, "modules": sorted(sys.modules)}) + "\\n")
"""


def imported_by(argv: list[str], tmp_path: Path) -> set[str]:
    """The modules a fresh ``parity`` process has imported when ``argv`` is done (it must succeed)."""
    env = dict(os.environ, PYTHONPATH=str(Path(parity.__file__).resolve().parents[1]))
    done = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120, check=False)  # fmt: skip
    line = next(row for row in done.stderr.splitlines() if row.startswith("MODULES "))
    report = json.loads(line.removeprefix("MODULES "))
    assert report["status"] == 0, done.stderr
    return set(report["modules"])


def test_a_kineto_analysis_loads_no_other_reader_and_no_writer(traces_dir: Path, tmp_path: Path) -> None:
    modules = imported_by(["trace", "analyze", str(traces_dir / KINETO), "--json", str(tmp_path / "o.json")],
                          tmp_path)  # fmt: skip
    assert "parity.trace.readers.kineto" in modules and "msgspec" in modules
    assert sorted(set(NOT_FOR_KINETO) & modules) == []


def test_ascend_and_nsight_load_their_own_reader(traces_dir: Path, tmp_path: Path) -> None:
    ascend = imported_by(["trace", "analyze", str(traces_dir / ASCEND)], tmp_path)
    assert {"parity.trace.readers.ascend_text", "csv"} <= ascend
    assert "parity.trace.readers.kineto" not in ascend
    nsys = imported_by(["trace", "analyze", str(traces_dir / NSYS)], tmp_path)
    assert {"parity.trace.readers.nsys", "sqlite3"} <= nsys


def test_export_writers_load_when_asked_for(traces_dir: Path, tmp_path: Path) -> None:
    modules = imported_by(["trace", "analyze", str(traces_dir / KINETO), "--csv", str(tmp_path / "tables")],
                          tmp_path)  # fmt: skip
    assert "parity.trace.export" in modules and (tmp_path / "tables").is_dir()


def test_help_loads_no_numpy(tmp_path: Path) -> None:
    modules = imported_by(["trace", "analyze", "--help"], tmp_path)
    assert "parity.cli.trace_analyze" in modules
    assert not {m for m in modules if m == "numpy" or m.startswith(("numpy.", "parity.trace"))}


@pytest.mark.parametrize(("values", "expected"), [
    ([], []), ([7], [7]), ([3, 1, 3, 2, 1, 3], [1, 2, 3]), ([-1, 5, -1], [-1, 5]),
])  # fmt: skip
def test_distinct_is_what_np_unique_gives(values: list[int], expected: list[int]) -> None:
    column = np.array(values, dtype=np.int32)
    got = _distinct(column)
    assert got.tolist() == expected == np.unique(column).tolist()
    assert got.dtype == np.int32
