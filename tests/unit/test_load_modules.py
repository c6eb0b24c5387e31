"""How a trace command loads its modules (``parity.cli.numpy_load.load_modules``): in a
``parity`` process of its own the cyclic collector is paused while the modules load and what
they built is frozen; a caller that passes its own argv (a test, a script) keeps its collector
as it was. Each case runs in a fresh interpreter: the collector's state is the process's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import parity

_PROBE = """
import gc, json, sys
sys.path.insert(0, sys.argv[1])
from parity.cli import numpy_load
if sys.argv[2] == "own":
    numpy_load.own_process()
frozen_before = gc.get_freeze_count()
numpy_load.load_modules("probe_module")
import probe_module
print(json.dumps({"enabled_while_loading": probe_module.ENABLED, "enabled_after": gc.isenabled(),
                  "frozen_before": frozen_before, "frozen_after": gc.get_freeze_count(),
                  "numpy": "numpy" in sys.modules}))
"""

_ENTRY = """
import sys
from parity.cli import numpy_load
from parity.cli.main import main
entry = sys.argv[1] == "entry"
sys.argv = ["parity", "--version"]
try:
    main(None if entry else ["--version"])
except SystemExit:
    pass
print("OWN", numpy_load._OWN_PROCESS[0])
"""


def _run(code: str, *args: str, cwd: Path) -> str:
    env_path = str(Path(parity.__file__).resolve().parents[1])
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=cwd, timeout=120,
                          env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"}, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def _probe(tmp_path: Path, mode: str) -> dict:
    (tmp_path / "probe_module.py").write_text("import gc\nENABLED = gc.isenabled()\n")
    return json.loads(_run(_PROBE, str(tmp_path), mode, cwd=tmp_path))


def test_in_its_own_process_the_collector_pauses_while_modules_load_then_what_they_built_is_frozen(
        tmp_path: Path) -> None:
    report = _probe(tmp_path, "own")
    assert report["enabled_while_loading"] is False
    assert report["enabled_after"] is True  # the command's own garbage is collected as usual
    assert report["frozen_after"] > report["frozen_before"]  # numpy's and the modules' objects
    assert report["numpy"] is True  # numpy first, whatever the names


def test_a_caller_with_its_own_process_keeps_its_collector_as_it_was(tmp_path: Path) -> None:
    report = _probe(tmp_path, "caller")
    assert report["enabled_while_loading"] is True
    assert report["enabled_after"] is True
    assert report["frozen_after"] == report["frozen_before"] == 0
    assert report["numpy"] is True


def test_only_the_entry_point_on_the_process_command_line_marks_the_process_its_own(tmp_path: Path) -> None:
    assert _run(_ENTRY, "entry", cwd=tmp_path) == "OWN True"  # sys.argv: `parity` as a user runs it
    assert _run(_ENTRY, "argv", cwd=tmp_path) == "OWN False"  # main(argv): a test or a script
