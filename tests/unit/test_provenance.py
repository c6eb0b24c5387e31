"""Provenance: every key parity.device.provenance lists, true for this machine, and collectable without torch."""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import pytest

from parity.device.provenance import collect_provenance, relevant_environment

BLOCK_TORCH = (
    "import sys\n"
    "class Block:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name == 'torch' or name.startswith('torch.'):\n"
    "            raise ImportError('torch is blocked in this test')\n"
    "sys.meta_path.insert(0, Block())\n"
)


@pytest.fixture(scope="module")
def provenance() -> dict:
    from parity.device import get_device

    return collect_provenance(get_device("cpu"), argv=["parity", "doctor"])


@pytest.mark.torch
def test_top_level_keys(provenance: dict) -> None:
    assert set(provenance) >= {
        "time_utc",
        "host",
        "os",
        "python",
        "torch",
        "drivers",
        "device",
        "parity",
        "command_line",
        "environment",
    }
    assert provenance["command_line"] == ["parity", "doctor"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", provenance["time_utc"])
    json.dumps(provenance)  # JSON-ready as it is


@pytest.mark.torch
def test_host_is_this_machine(provenance: dict) -> None:
    hostinfo = provenance["host"]
    machine = platform.machine().lower()
    expected_arch = {"x86_64": "x86-64", "amd64": "x86-64", "aarch64": "arm64", "arm64": "arm64"}
    assert hostinfo["architecture"] == expected_arch.get(machine, machine)
    assert hostinfo["logical_cpus"] == os.cpu_count()
    allowed = os.sched_getaffinity(0)
    assert hostinfo["affinity_count"] == len(allowed)
    assert isinstance(hostinfo["pinned"], bool)
    assert hostinfo["cpu_model"] and hostinfo["cpu_model"] != "unknown"


@pytest.mark.torch
@pytest.mark.skipif(not Path("/proc/cpuinfo").exists(), reason="needs /proc/cpuinfo")
def test_cpu_flags_match_proc_cpuinfo(provenance: dict) -> None:
    text = Path("/proc/cpuinfo").read_text()
    match = re.search(r"^(?:flags|Features)\s*:\s*(.*)$", text, flags=re.MULTILINE)
    assert match
    flags = set(match.group(1).split())
    reported = provenance["host"]["flags_of_interest"]
    assert reported  # x86 reports amx/avx flags, Arm reports asimd/sve
    for flag, present in reported.items():
        assert present == (flag in flags), flag
    if provenance["host"]["architecture"] == "x86-64":
        assert {"amx_bf16", "amx_tile", "avx512f", "avx2"} <= set(reported)


@pytest.mark.torch
def test_software_versions(provenance: dict) -> None:
    import torch

    assert provenance["torch"]["installed"] is True
    assert provenance["torch"]["version"] == str(torch.__version__)
    assert provenance["torch"]["cuda"] == torch.version.cuda
    assert provenance["python"]["version"] == platform.python_version()
    assert provenance["os"]["system"] == platform.system()


@pytest.mark.torch
def test_device_section(provenance: dict) -> None:
    device = provenance["device"]
    assert device["selected"] == "cpu" and device["count"] == 1
    assert device["properties"]["type"] == "cpu"
    properties = device["properties"]
    # the host section reports the cache the system names; the device the one its runs are sized
    # by: the same, unless PARITY_CPU_LLC_BYTES gave another (the suite gives 32 MiB), then recorded
    reported = properties["extra"].get("llc_reported_bytes", properties["llc_bytes"])
    assert reported == provenance["host"]["llc_bytes"]
    if "llc_source" in properties["extra"]:
        assert properties["extra"]["llc_source"] == "PARITY_CPU_LLC_BYTES"
        assert properties["llc_bytes"] == int(os.environ["PARITY_CPU_LLC_BYTES"])


def test_parity_version_and_git_revision() -> None:
    from parity import __version__

    info = collect_provenance(None, argv=[])["parity"]
    assert info["version"] == __version__
    repo = Path(__file__).resolve().parents[2]
    if (repo / ".git").exists():
        head = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        assert info["git_revision"] == head
        assert isinstance(info["git_dirty"], bool)
    else:
        assert info["git_revision"] is None and info["git_reason"]


def test_environment_keeps_relevant_variables_and_redacts_secrets() -> None:
    env = {
        "NCCL_DEBUG": "INFO",
        "HCCL_BUFFSIZE": "200",
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
        "CUDA_VISIBLE_DEVICES": "0,1",
        "OMP_NUM_THREADS": "8",
        "HOME": "/root",
        "PATH": "/bin",
        "VLLM_API_KEY": "hunter2",
        "ASCEND_RT_VISIBLE_DEVICES": "3",
        "TASK_QUEUE_ENABLE": "2",  # torch_npu's launch queue
        "ZE_FLAT_DEVICE_HIERARCHY": "COMPOSITE",  # an Intel GPU's tiles as one device or several
        "MIOPEN_FIND_MODE": "3",
        "CCL_ATL_TRANSPORT": "ofi",  # oneCCL, torch's xccl backend
        "TASKSET": "no",
    }
    kept = relevant_environment(env)
    assert kept == {
        "ASCEND_RT_VISIBLE_DEVICES": "3",
        "CCL_ATL_TRANSPORT": "ofi",
        "MIOPEN_FIND_MODE": "3",
        "TASK_QUEUE_ENABLE": "2",
        "ZE_FLAT_DEVICE_HIERARCHY": "COMPOSITE",
        "CUDA_VISIBLE_DEVICES": "0,1",
        "HCCL_BUFFSIZE": "200",
        "NCCL_DEBUG": "INFO",
        "OMP_NUM_THREADS": "8",
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
        "VLLM_API_KEY": "<redacted>",
    }


def test_collects_without_torch() -> None:
    code = BLOCK_TORCH + (
        "import json\n"
        "from parity.device.provenance import collect_provenance\n"
        "p = collect_provenance(argv=['x'])\n"
        "assert 'torch' not in sys.modules\n"
        "print(json.dumps(p))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["torch"]["installed"] is False
    assert "not installed" in data["torch"]["reason"]
    assert data["host"]["architecture"] and data["device"] == {"selected": None}
