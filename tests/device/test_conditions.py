"""The readers of the settings that decide results (clock policy, ECC, partitioning, power caps,
NVML's clocks, MIG and links) on hand-made sysfs trees and a fake pynvml, what this machine
reads (never raising, "not readable" where a file is absent, cheap), and the communication
variables recorded by the run and by each rank."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from parity.compare.audit_environment import COMM_LIBRARIES
from parity.device import get_device
from parity.device.conditions import (
    cgroup_partition,
    cpu_clock_policy,
    edac_ecc,
    rapl_power_caps,
    setup_conditions,
)
from parity.device.nvml_conditions import read_conditions
from parity.device.provenance import COMM_ENV_PREFIXES, ENV_PREFIXES, relevant_environment
from parity.ranks.provenance import rank_provenance


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    return root


def _cpufreq(cpu: int, governor: str, low: int, high: int, hw_high: int = 3_500_000) -> dict[str, str]:
    base = f"cpu{cpu}/cpufreq/"
    return {base + "scaling_governor": governor, base + "scaling_min_freq": str(low),
            base + "scaling_max_freq": str(high), base + "cpuinfo_min_freq": "800000",
            base + "cpuinfo_max_freq": str(hw_high)}


def test_clock_policy_lock_cap_boost_and_governors(tmp_path: Path) -> None:
    locked = _write(tmp_path / "a", {**_cpufreq(0, "performance", 2_400_000, 2_400_000),
                                     **_cpufreq(1, "performance", 2_400_000, 2_400_000), "cpufreq/boost": "0"})
    assert cpu_clock_policy([0, 1], root=locked) == {"governor": "performance", "lock": "locked at 2400 MHz",
                                                     "boost": "off"}
    capped = _write(tmp_path / "b", {**_cpufreq(0, "powersave", 800_000, 2_000_000),
                                     "intel_pstate/no_turbo": "0"})
    assert cpu_clock_policy([0], root=capped) == {"governor": "powersave", "boost": "on",
                                                  "lock": "capped at 2000 MHz (hardware 3500 MHz)"}
    free = _write(tmp_path / "c", {**_cpufreq(0, "performance", 800_000, 3_500_000),
                                   **_cpufreq(1, "powersave", 800_000, 3_500_000)})
    policy = cpu_clock_policy([0, 1], root=free)
    assert policy["governor"] == "performance x1, powersave x1"
    assert policy["lock"] == "not locked (800-3500 MHz)"
    assert policy["boost"].startswith("not readable: ")
    mixed = _write(tmp_path / "d", {**_cpufreq(0, "performance", 2_400_000, 2_400_000),
                                    **_cpufreq(1, "performance", 800_000, 3_500_000)})
    assert cpu_clock_policy([0, 1], root=mixed)["lock"].startswith("differs between CPUs: ")
    hidden = cpu_clock_policy([0], root=tmp_path / "none")
    assert all(v.startswith("not readable: ") for v in hidden.values())


def test_edac_counts_and_not_readable(tmp_path: Path) -> None:
    root = _write(tmp_path / "mc", {"mc0/ce_count": "3", "mc0/ue_count": "0", "mc1/ce_count": "1",
                                    "mc1/ue_count": "2"})
    assert edac_ecc(root=root) == {"source": "edac", "controllers": 2, "corrected": 4, "uncorrected": 2}
    assert edac_ecc(root=tmp_path / "absent").startswith("not readable: no EDAC")


def test_cgroup_quota_v2_v1_and_unlimited(tmp_path: Path) -> None:
    v2 = _write(tmp_path / "v2", {"job/cpu.max": "250000 100000", "job/memory.max": str(16 * 2**30)})
    proc = _write(tmp_path / "p2", {"cgroup": "0::/job"}) / "cgroup"
    assert cgroup_partition(root=v2, proc_cgroup=proc) == {"source": "cgroup v2", "cpu_quota": 2.5,
                                                           "memory_limit_bytes": 16 * 2**30}
    free = _write(tmp_path / "v2free", {"cpu.max": "max 100000", "memory.max": "max"})
    proc_root = _write(tmp_path / "p2r", {"cgroup": "0::/"}) / "cgroup"
    assert cgroup_partition(root=free, proc_cgroup=proc_root) == {"source": "cgroup v2", "cpu_quota": None,
                                                                  "memory_limit_bytes": None}
    # cgroup v1 as on this machine: no quota (-1), "no limit" written as 2**63 rounded to a page.
    v1 = _write(tmp_path / "v1", {"cpu/cpu.cfs_quota_us": "-1", "cpu/cpu.cfs_period_us": "100000",
                                  "memory/box/memory.limit_in_bytes": "9223372036854771712"})
    proc1 = _write(tmp_path / "p1", {"cgroup": "4:memory:/box\n1:cpu,cpuacct:/\n0::/"}) / "cgroup"
    assert cgroup_partition(root=v1, proc_cgroup=proc1) == {"source": "cgroup v1", "cpu_quota": None,
                                                            "memory_limit_bytes": None}
    quota = _write(tmp_path / "v1q", {"cpu/cpu.cfs_quota_us": "50000", "cpu/cpu.cfs_period_us": "100000"})
    assert cgroup_partition(root=quota, proc_cgroup=proc1)["cpu_quota"] == 0.5
    assert cgroup_partition(root=tmp_path, proc_cgroup=tmp_path / "missing").startswith("not readable: ")


def test_rapl_caps_in_watts(tmp_path: Path) -> None:
    root = _write(tmp_path / "powercap", {
        "intel-rapl:0/name": "package-0", "intel-rapl:0/constraint_0_name": "long_term",
        "intel-rapl:0/constraint_0_power_limit_uw": "125000000", "intel-rapl:0/constraint_1_name": "short_term",
        "intel-rapl:0/constraint_1_power_limit_uw": "160000000"})
    assert rapl_power_caps(root=root) == {"package-0": {"long_term": 125.0, "short_term": 160.0}}
    assert rapl_power_caps(root=tmp_path / "none").startswith("not readable: ")


class _NotSupported(Exception):
    def __str__(self) -> str:
        return "Not Supported"


def _fake_nvml(*, links: int, app: tuple[int, int], default: tuple[int, int], mig: tuple[int, int] | None) -> object:
    def app_clock(handle: object, clock: int) -> int:
        return app[clock]

    def default_clock(handle: object, clock: int) -> int:
        return default[clock]

    def nvlink(handle: object, link: int) -> int:
        if link >= links:
            raise _NotSupported()
        return 0 if link == links - 1 else 1

    def mig_mode(handle: object) -> tuple[int, int]:
        if mig is None:
            raise _NotSupported()
        return mig

    def boost(handle: object) -> tuple[int, int]:
        raise _NotSupported()

    return SimpleNamespace(
        NVML_CLOCK_SM=0, NVML_CLOCK_MEM=1, NVML_NVLINK_MAX_LINKS=18,
        nvmlDeviceGetApplicationsClock=app_clock, nvmlDeviceGetDefaultApplicationsClock=default_clock,
        nvmlDeviceGetAutoBoostedClocksEnabled=boost, nvmlDeviceGetEccMode=lambda h: (1, 0),
        nvmlDeviceGetMigMode=mig_mode, nvmlDeviceGetPowerManagementLimit=lambda h: 500_000,
        nvmlDeviceGetPowerManagementDefaultLimit=lambda h: 700_000, nvmlDeviceGetEnforcedPowerLimit=lambda h: 500_000,
        nvmlDeviceGetNvLinkState=nvlink, nvmlDeviceGetCurrPcieLinkGeneration=lambda h: 5,
        nvmlDeviceGetCurrPcieLinkWidth=lambda h: 16, nvmlDeviceGetMaxPcieLinkGeneration=lambda h: 5,
        nvmlDeviceGetMaxPcieLinkWidth=lambda h: 16)


def test_nvml_conditions_on_a_fake_nvml() -> None:
    nvml = _fake_nvml(links=18, app=(1410, 2619), default=(1980, 2619), mig=(0, 0))
    got = read_conditions(nvml, "h")
    assert got["ecc"] == "on (off after reset)"
    assert got["partition"] == "MIG off"
    assert got["power_cap"] == {"limit_w": 500.0, "default_w": 700.0, "enforced_w": 500.0}
    assert got["interconnect"] == {"nvlink_links": 18, "nvlink_active": 17,
                                   "pcie": {"generation": 5, "width": 16, "max_generation": 5, "max_width": 16}}
    clocks = got["clocks"]
    assert clocks["lock"] == "applications clocks SM 1410 / memory 2619 MHz (default 1980 / 2619 MHz)"
    assert clocks["auto_boost"] == "not readable: NVML Not Supported"
    assert clocks["locked_clocks"].startswith("not readable: ")
    pcie_only = read_conditions(_fake_nvml(links=0, app=(1980, 2619), default=(1980, 2619), mig=None), "h",
                                uuid="MIG-1234")
    assert pcie_only["clocks"]["lock"] == "default applications clocks"
    assert pcie_only["interconnect"]["nvlink_links"] == 0 and pcie_only["partition"] == "MIG instance MIG-1234"
    assert read_conditions(_fake_nvml(links=0, app=(1, 1), default=(1, 1), mig=None), "h")["partition"] == \
        "not readable: NVML Not Supported"


def test_this_machine_reads_its_setup_cheaply_and_says_what_it_cannot() -> None:
    start = time.perf_counter()
    setup = setup_conditions(get_device("cpu"))
    elapsed = time.perf_counter() - start
    assert elapsed < 0.5, f"setup took {elapsed:.3f} s; it is read on every run"
    assert setup["device"] == "the host's"
    assert set(setup["host"]) == {"clocks", "ecc", "partition", "power_cap"}
    for value in (setup["host"]["ecc"], setup["host"]["power_cap"], *setup["host"]["clocks"].values()):
        assert isinstance(value, (dict, str)) and (isinstance(value, dict) or value), value
    assert setup_conditions(None)["device"].startswith("not readable: ")


def test_communication_variables_are_recorded_by_the_run_and_by_each_rank() -> None:
    env = {"NCCL_ALGO": "Tree", "NVSHMEM_IB_ENABLE_IBGDA": "1", "GLOO_SOCKET_IFNAME": "lo", "UCX_TLS": "rc",
           "HCCL_BUFFSIZE": "200", "PATH": "/bin", "NCCL_IB_KEY": "secret"}
    assert relevant_environment(env)["NCCL_ALGO"] == "Tree"
    assert relevant_environment(env)["NCCL_IB_KEY"] == "<redacted>"
    record = rank_provenance(device=get_device("cpu"), environ=env)
    assert record["setup"]["device"] == "the host's" and "clocks" in record["setup"]["host"]
    ranked = record["communication_env"]
    assert set(ranked) == {"NCCL_ALGO", "NVSHMEM_IB_ENABLE_IBGDA", "GLOO_SOCKET_IFNAME", "UCX_TLS", "HCCL_BUFFSIZE",
                           "NCCL_IB_KEY"}
    # every prefix the audit judges is one the run records
    for _, prefixes, _ in COMM_LIBRARIES:
        assert all(p.startswith(ENV_PREFIXES) and p.startswith(COMM_ENV_PREFIXES) for p in prefixes)


@pytest.mark.accelerator
@pytest.mark.cuda
@pytest.mark.torch
def test_a_real_nvidia_gpu_reports_its_setup_through_nvml() -> None:
    gpu = get_device("cuda:0")
    if getattr(gpu, "is_rocm", False):
        pytest.skip("ROCm GPU: no NVML reader")
    start = time.perf_counter()
    setup = setup_conditions(gpu)
    assert time.perf_counter() - start < 2.0
    device = setup["device"]
    assert isinstance(device, dict), device  # NVML opened
    assert device["ecc"] in ("on", "off") or "after reset" in device["ecc"] or device["ecc"].startswith("not readable")
    assert device["partition"].startswith(("MIG", "not readable"))
    assert isinstance(device["power_cap"]["enforced_w"], float) and device["power_cap"]["enforced_w"] > 0
    links = device["interconnect"]
    assert 0 <= links["nvlink_active"] <= links["nvlink_links"]
    assert isinstance(links["pcie"]["max_generation"], int)
