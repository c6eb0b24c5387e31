"""Each condition of the extended audit on hand-made run records: availability, topology,
interconnect, power cap and energy method, ECC, partitioning, clock locks, a served engine's mode
and flags, the communication libraries' variables and contention, each listed when it differs
and saying whether it can change the figures compared."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from parity.compare.audit import AuditEntry, audit_runs
from parity.compare.audit_environment import comm_environment, library_of
from parity.compare.audit_setup import availability, prerelease_components
from parity.model.findings import Finding, Severity
from parity.model.result import CaseResult, RunRecord

NVML_SETUP: dict[str, Any] = {
    "host": {"clocks": {"governor": "performance", "lock": "not locked (800-3500 MHz)", "boost": "on"}},
    "device": {"clocks": {"lock": "default applications clocks", "auto_boost": "on"}, "ecc": "on",
               "partition": "MIG off", "power_cap": {"limit_w": 700.0, "default_w": 700.0, "enforced_w": 700.0},
               "interconnect": {"nvlink_links": 18, "nvlink_active": 18,
                                "pcie": {"generation": 5, "width": 16}}},
}
CPU_SETUP: dict[str, Any] = {
    "host": {"clocks": {"governor": "performance", "lock": "not locked (800-3500 MHz)", "boost": "on"},
             "ecc": "not readable: no EDAC memory controller in /sys/devices/system/edac/mc",
             "partition": {"source": "cgroup v2", "cpu_quota": None, "memory_limit_bytes": None},
             "power_cap": "not readable: no RAPL power limit readable in /sys/class/powercap"},
    "device": "the host's",
}


def _run(run_id: str, *, setup: dict[str, Any] | None = None, config: dict[str, Any] | None = None,
         ranks: list[dict[str, Any]] | None = None, backend: str = "nccl", **provenance: Any) -> RunRecord:
    prov: dict[str, Any] = {"setup": copy.deepcopy(setup if setup is not None else NVML_SETUP), **provenance}
    if ranks is not None:
        prov["target"] = {"kind": "ranks", "identity": {"world_size": len(ranks), "backend": backend, "hosts": 1},
                          "provenance": ranks}
    else:
        prov.setdefault("target", {"kind": "local", "identity": {"device": "cuda:0"}})
    return RunRecord(run_id=run_id, created_at="2026-12-01", config=config or {}, provenance=prov)


def _case(key: str = "c", *codes: str, **metrics: Any) -> CaseResult:
    return CaseResult(suite="s", key=key, check={"passed": True}, metrics=metrics,
                      findings=tuple(Finding(code=c, severity=Severity.WARNING, message="m") for c in codes),
                      telemetry={"contention": {"contended": bool(codes)}})


def _audit(a: RunRecord, b: RunRecord, cases: tuple[list[CaseResult], list[CaseResult]] | None = None
           ) -> dict[str, AuditEntry]:
    per_run = list(cases) if cases else [[_case()], [_case()]]
    entries, _ = audit_runs([a, b], per_run, [], [[], []])
    return {e.condition: e for e in entries}


def _with(run: RunRecord, path: tuple[str, ...], value: Any) -> RunRecord:
    prov = copy.deepcopy(run.provenance)
    node = prov
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return RunRecord(run_id=run.run_id + "'", created_at=run.created_at, config=run.config, provenance=prov)


def test_identical_settings_list_nothing_new_and_a_run_against_itself_nothing() -> None:
    a, b = _run("a"), _run("b")
    assert _audit(a, b) == {}
    assert _audit(a, a) == {}


def test_availability_declared_and_read_from_the_stack() -> None:
    got = _audit(_run("a", config={"availability": "available"}), _run("b", config={"availability": "rd"}))
    entry = got["availability"]
    assert entry.values == ("Available (declared)", "RDI (declared)") and entry.applies
    assert "MLPerf" in entry.matters and "Preview" in entry.matters
    nightly = _run("n", torch={"version": "2.6.0.dev20241112+cu124"})
    assert prerelease_components(nightly) == ["torch 2.6.0.dev20241112+cu124"]
    assert availability(nightly) == "not declared; pre-release: torch 2.6.0.dev20241112+cu124"
    assert prerelease_components(_run("r", torch={"version": "2.5.1+cu124", "cann": "8.0.RC3",
                                                  "torch_npu": "2.5.1.post1+g1a2b3c"})) == []
    assert prerelease_components(_run("c", torch={"version": "2.5.0rc1", "cann": "8.1.RC1.alpha002"})) == \
        ["torch 2.5.0rc1", "CANN 8.1.RC1.alpha002"]
    assert "availability" in _audit(_run("a"), nightly)


def test_topology_and_interconnect_matter_only_where_ranks_communicate() -> None:
    ranks = [{"rank": r, "communication_env": {}} for r in range(8)]
    a = _run("a", ranks=ranks, topology={"nodes": 2, "ranks_per_node": 4, "source": "launcher"})
    b = _run("b", ranks=ranks, topology={"nodes": 1, "ranks_per_node": 8, "source": "launcher"})
    topo = _audit(a, b)["topology"]
    assert topo.values == ("2 node(s) x 4 rank(s) (launcher)", "1 node(s) x 8 rank(s) (launcher)") and topo.applies
    uneven = _run("u", ranks=ranks, topology={"nodes": 2, "ranks_per_node": None, "source": "declared",
                                              "rank_nodes": [0, 0, 0, 0, 0, 0, 1, 1]})
    assert _audit(a, uneven)["topology"].values[1] == "2 node(s) x (6, 2) rank(s) (declared)"
    measured = _run("m", ranks=ranks, preflight={"run_id": "pf1", "links": [{}, {}, {}], "slow": [{}]})
    assert _audit(_run("x", ranks=ranks), measured)["interconnect"].values[1] == \
        "NVLink 18 of 18 links active; PCIe gen 5 x16; preflight pf1: 3 link(s) measured, 1 slow"
    pcie = _with(_run("p"), ("setup", "device", "interconnect", "nvlink_active"), 0)
    single = _audit(_run("a"), pcie)["interconnect"]
    assert single.values == ("NVLink 18 of 18 links active; PCIe gen 5 x16", "NVLink 0 of 18 links active; PCIe gen 5 x16")
    assert not single.applies and "more than one rank" in single.matters
    multi = _audit(a, _with(a, ("setup", "device", "interconnect", "nvlink_active"), 0))["interconnect"]
    assert multi.applies
    cpu = _audit(_run("a", setup=CPU_SETUP), _run("b"))["interconnect"]
    assert cpu.values[0].startswith("none: the CPU is the device")


def test_power_cap_and_energy_method() -> None:
    capped = _with(_run("b"), ("setup", "device", "power_cap", "limit_w"), 500.0)
    entry = _audit(_run("a"), capped)["power cap"]
    assert entry.values == ("700 W (default 700 W)", "500 W (default 700 W)") and entry.applies
    rapl = dict(CPU_SETUP, host={**CPU_SETUP["host"], "power_cap": {"package-0": {"long_term": 125.0}}})
    assert _audit(_run("a", setup=CPU_SETUP), _run("b", setup=rapl))["power cap"].values[1] == \
        "package-0: long_term 125 W"
    nvml = _run("a", device={"power": "power read from nvml (power)"})
    none = _run("b", device={"power": "no power sensor readable: no /sys/class/powercap"})
    unread = _audit(nvml, none)["energy method"]
    assert not unread.applies and "energy reading" in unread.matters
    energy = CaseResult(suite="s", key="c", check={"passed": True},
                        telemetry={"energy": {"joules_per_call": 0.3, "coverage": 1.0}})
    assert _audit(nvml, none, ([energy], [_case()]))["energy method"].applies


def test_ecc_partitioning_and_clock_locks() -> None:
    got = _audit(_run("a"), _with(_run("b"), ("setup", "device", "ecc"), "off (on after reset)"))
    assert got["ECC"].values == ("on", "off (on after reset)") and got["ECC"].applies
    mig = _audit(_run("a"), _with(_run("b"), ("setup", "device", "partition"), "MIG instance MIG-1c2d"))["partitioning"]
    assert mig.values == ("MIG off", "MIG instance MIG-1c2d") and mig.applies
    quota = dict(CPU_SETUP, host={**CPU_SETUP["host"], "partition": {"source": "cgroup v2", "cpu_quota": 2.0,
                                                                     "memory_limit_bytes": 8 * 2**30}})
    assert _audit(_run("a", setup=CPU_SETUP), _run("b", setup=quota))["partitioning"].values == \
        ("cgroup v2: no CPU quota, no memory limit", "cgroup v2: CPU quota 2 CPUs, memory limit 8.0 GiB")
    app = _with(_run("b"), ("setup", "device", "clocks", "lock"), "applications clocks SM 1410 / memory 2619 MHz "
                "(default 1980 / 2619 MHz)")
    clocks = _audit(_run("a"), app)["clock locks"]
    assert clocks.values[0] == "default applications clocks; auto boost on" and clocks.applies
    locked = dict(CPU_SETUP, host={**CPU_SETUP["host"], "clocks": {"governor": "powersave",
                                                                   "lock": "locked at 2400 MHz", "boost": "off"}})
    assert _audit(_run("a", setup=CPU_SETUP), _run("b", setup=locked))["clock locks"].values == \
        ("governor performance; not locked (800-3500 MHz); boost on", "governor powersave; locked at 2400 MHz; boost off")
    unreadable = _audit(_run("a"), _run("b", setup={"host": {}, "device": "not readable: NVML unavailable"}))
    assert unreadable["ECC"].values == ("on", "not readable: NVML unavailable")


def _endpoint(run_id: str, server: dict[str, Any], flags: str | None = None) -> RunRecord:
    config: dict[str, Any] = {"mode": "online", "endpoint": {"url": "http://127.0.0.1:8000", "model": "m"}}
    if flags:
        config["endpoint"]["flags"] = flags
    target = {"kind": "remote", "identity": {"url": "http://127.0.0.1:8000"},
              "provenance": [{"url": "http://127.0.0.1:8000", "model": "m", "server": server}]}
    return _run(run_id, config=config, target=target)


def test_engine_mode_and_flags_of_a_served_model_and_an_offline_step() -> None:
    a = _endpoint("a", {"header": "uvicorn", "version": "0.7.3"}, flags="--enforce-eager")
    b = _endpoint("b", {"header": "uvicorn", "version": "0.8.0.dev12+g1a2b"})
    got = _audit(a, b)
    assert got["engine mode"].values == ("online: server uvicorn; version 0.7.3; flags --enforce-eager",
                                         "online: server uvicorn; version 0.8.0.dev12+g1a2b; flags not given")
    assert got["availability"].values[1] == "not declared; pre-release: server 0.8.0.dev12+g1a2b"
    offline = {"modes": {"s": "offline"}}
    graph = _audit(_run("a", config=offline), _run("b", config=offline),
                   ([_case("c", graph=True)], [_case("c", "graph-failed", graph=False)]))["engine mode"]
    assert graph.values == ("offline: graph replay", "offline: eager, graph capture failed on 1 case(s)")
    assert "engine mode" not in _audit(_run("a"), _run("b"))  # no engine in either run


def test_communication_variables_by_backend_and_by_rank() -> None:
    assert library_of("TORCH_NCCL_BLOCKING_WAIT") == ("NCCL", frozenset({"nccl"}))
    assert library_of("NVSHMEM_IB_ENABLE_IBGDA")[0] == "NVSHMEM" and library_of("PATH") is None
    two = [{"rank": 0, "communication_env": {}}, {"rank": 1, "communication_env": {}}]
    tree = [{"rank": r, "communication_env": {"NCCL_ALGO": "Tree"}} for r in range(2)]
    gloo = _audit(_run("a", ranks=two, backend="gloo"), _run("b", ranks=tree, backend="gloo"))
    entry = gloo["environment NCCL_ALGO"]
    assert entry.values == ("unset", "Tree") and not entry.applies
    assert "communicated over gloo, which does not read it" in entry.matters
    nccl = _audit(_run("a", ranks=two), _run("b", ranks=tree))["environment NCCL_ALGO"]
    assert nccl.applies and nccl.to_dict()["applies"] is True
    nv = _audit(_run("a", ranks=two), _run("b", ranks=[{"rank": r, "communication_env": {
        "NVSHMEM_IB_ENABLE_IBGDA": "1"}} for r in range(2)]))["environment NVSHMEM_IB_ENABLE_IBGDA"]
    assert nv.applies and "DeepEP" in nv.matters
    ifname = _audit(_run("a", ranks=two, backend="gloo"), _run("b", ranks=[
        {"rank": r, "communication_env": {"GLOO_SOCKET_IFNAME": "eth0"}} for r in range(2)], backend="gloo"))
    assert ifname["environment GLOO_SOCKET_IFNAME"].applies
    split = _run("s", ranks=[{"rank": 0, "communication_env": {"NCCL_ALGO": "Ring"}},
                             {"rank": 1, "communication_env": {"NCCL_ALGO": "Tree"}},
                             {"rank": 2, "communication_env": {}}])
    assert comm_environment(split) == {"NCCL_ALGO": "Ring on rank 0; Tree on rank 1; unset on rank 2"}
    assert library_of("CCL_ATL_TRANSPORT") == ("oneCCL", frozenset({"xccl", "ccl"}))
    ofi = [{"rank": r, "communication_env": {"CCL_ATL_TRANSPORT": "ofi", "FI_PROVIDER": "cxi"}} for r in range(2)]
    xccl = _audit(_run("a", ranks=two, backend="xccl"), _run("b", ranks=ofi, backend="xccl"))
    assert xccl["environment CCL_ATL_TRANSPORT"].applies and xccl["environment FI_PROVIDER"].applies
    assert not _audit(_run("a", ranks=two), _run("b", ranks=ofi))["environment CCL_ATL_TRANSPORT"].applies
    single = _audit(_run("a", environment={"NCCL_ALGO": "Ring", "PATH": "/x"}), _run("b"))["environment NCCL_ALGO"]
    assert single.values == ("Ring", "unset") and not single.applies
    assert "more than one rank" in single.matters


def test_contention_names_the_cases_and_the_load_record() -> None:
    load = {"start": {"loadavg": [6.5, 3.0, 1.0], "cpus_usable": 2}, "end": {"loadavg": [7.25, 3.0, 1.0]}}
    quiet = {"start": {"loadavg": [0.1, 0.1, 0.1], "cpus_usable": 2}, "end": {"loadavg": [0.2, 0.1, 0.1]}}
    busy = [_case("x", "contended"), _case("y", "concurrent-run"), _case("z")]
    entry = _audit(_run("a", load=quiet), _run("b", load=load),
                   ([_case("x"), _case("y"), _case("z")], busy))["contention"]
    assert entry.values == (
        "0 of 3 case(s) contended (0%); load average 0.1 at start, 0.2 at end on 2 CPUs",
        "2 of 3 case(s) contended (67%), 1 beside another parity run; load average 6.5 at start, 7.25 at end on 2 CPUs")
    assert entry.applies


@pytest.mark.parametrize("condition", ["availability", "ecc", "contention"])
def test_entries_serialise_whether_they_apply(condition: str) -> None:
    entry = AuditEntry.make(condition, ("a", "b"), "why", not_here="because")
    assert entry.to_dict() == {"condition": condition, "values": ["a", "b"], "matters": "why; not for these figures: "
                               "because", "refused": False, "applies": False}


def test_a_node_set_up_otherwise_is_named_by_its_ranks() -> None:
    capped = copy.deepcopy(NVML_SETUP)
    capped["device"]["power_cap"]["limit_w"] = 450.0
    capped["device"]["ecc"] = "off"
    same = [{"rank": r, "setup": copy.deepcopy(NVML_SETUP)} for r in range(4)]
    split = same[:2] + [{"rank": r, "setup": copy.deepcopy(capped)} for r in (2, 3)]
    got = _audit(_run("a", ranks=same), _run("b", ranks=split))
    assert got["power cap"].values == ("700 W (default 700 W)",
                                       "700 W (default 700 W) on ranks 0-1; 450 W (default 700 W) on ranks 2-3")
    assert got["ECC"].values == ("on", "on on ranks 0-1; off on ranks 2-3")
    assert "clock locks" not in got and "interconnect" not in got  # the same on every rank


def test_case_parameters_count_only_for_cases_that_give_a_ratio() -> None:
    """A GEMM ceiling's sentinel rounds carry the shape each run's search found and no
    headline: they are compared on nothing, so their shapes are no differing setting; a timed
    case measured with another budget is one."""
    from parity.compare.join import join_cases

    def case(key: str, run: int, **params: Any) -> CaseResult:
        metrics = {"median_s": 0.002} if key == "timed" else {"rounds_flops": [8e11 + run]}
        return CaseResult(suite="gemm", key=key, params=params, metrics=metrics, check={"passed": True})

    per_run = [[case("sentinel", 0, m=5824, n=192, k=5824), case("timed", 0, budget_s=0.1)],
               [case("sentinel", 1, m=8192, n=1024, k=2048), case("timed", 1, budget_s=0.2)]]
    joined, only = join_cases(per_run)
    entries, _ = audit_runs([_run("a"), _run("b")], per_run, joined, only)
    assert {e.condition for e in entries if e.condition.startswith("case parameter")} == {"case parameter budget_s"}
