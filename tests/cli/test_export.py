"""``parity export astra-sim|calculon|vidur|fit``: the files match each simulator's documented
schema field for field, with the runs' provenance beside them, and the fit's numbers are the
hand-made ones.

Schemas, from the simulators' public repositories: ASTRA-sim's analytical network file
(``examples/network/analytical/Ring_4npus.yml``: topology, npus_count, bandwidth GB/s, latency
ns, one entry per dimension) and system file (``examples/ns3/system.json`` plus the
``roofline-enabled``/``peak-perf`` keys of its roofline examples); Calculon's network tier
(``systems/h100_80g_nvl8.json``: bandwidth, efficiency, size, latency, ops of p2p,
reduce_scatter, all_gather, all_reduce, collective_minus1_scalar, must_be_filled,
processor_usage); Vidur's network profiles (``data/profiling/network/h100_dgx/all_reduce.csv``
and ``send_recv.csv``).
"""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from parity.cli.main import cli
from parity.model.result import CaseResult
from parity.model.samples import Samples
from parity.store import Store

ALPHA_S = {"intra": 10e-6, "inter": 50e-6}
BETA_BPS = {"intra": 8e9, "inter": 1.25e8}
SIZES = [2**k for k in range(12, 25, 2)]  # 4 KiB .. 16 MiB

ASTRA_NETWORK_KEYS = {"topology", "npus_count", "bandwidth", "latency"}
ASTRA_SYSTEM_KEYS = {"scheduling-policy", "endpoint-delay", "active-chunks-per-dimension",
                     "preferred-dataset-splits", "all-reduce-implementation", "all-gather-implementation",
                     "reduce-scatter-implementation", "all-to-all-implementation", "collective-optimization",
                     "local-mem-bw", "boost-mode", "roofline-enabled", "peak-perf"}
CALCULON_TIER_KEYS = {"bandwidth", "efficiency", "size", "latency", "ops", "collective_minus1_scalar",
                      "must_be_filled", "processor_usage"}
CALCULON_OPS = {"p2p", "reduce_scatter", "all_gather", "all_reduce"}
VIDUR_COLUMNS = ["", "time_stats.{op}.min", "time_stats.{op}.max", "time_stats.{op}.mean",
                 "time_stats.{op}.median", "time_stats.{op}.std", "rank", "num_workers", "size", "collective",
                 "devices_per_node", "max_devices_per_node"]


def _case(op: str, dimension: str, size: int, world: int) -> CaseResult:
    factor = 2 * (world - 1) / world if op == "all_reduce" else 1.0
    t = ALPHA_S[dimension] + size * factor / BETA_BPS[dimension]
    key = f"{dimension}:{op}/fp32/in-place/{size}"
    return CaseResult(suite="collectives", key=key,
                      params={"op": op, "dtype": "fp32", "placement": "in-place", "size_bytes": size,
                              "dimension": dimension},
                      samples={"main": Samples(values_s=(t * 0.99, t, t * 1.01), method="max-over-ranks")},
                      metrics={"world_size": world, "size_bytes": size, "backend": "gloo"}, check={"passed": True})


@pytest.fixture()
def stored(tmp_path: Path) -> tuple[str, str]:
    db = tmp_path / "runs.sqlite"
    with Store.open(db) as store:
        run = store.create_run(config={"suites": ["collectives"], "device": "cpu"},
                               provenance={"topology": {"nodes": 2, "ranks_per_node": 2, "source": "launcher"},
                                           "target": {"kind": "ranks", "identity": {"world_size": 4}}})
        for dimension in ("intra", "inter"):
            for op in ("all_reduce", "sendrecv"):
                for size in SIZES:
                    store.add_case(run.run_id, _case(op, dimension, size, 2))
        store.finish_run(run.run_id, status="complete", summary={})
    return str(db), run.run_id


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_astra_sim_files_match_the_documented_schema(stored: tuple[str, str], tmp_path: Path) -> None:
    db, run_id = stored
    out = tmp_path / "astra"
    _invoke("export", "astra-sim", run_id, "--db", db, "--out", str(out))
    network = yaml.safe_load((out / "network.yml").read_text())
    assert set(network) == ASTRA_NETWORK_KEYS
    assert network["topology"] == ["FullyConnected", "Switch"]  # scale-up first, then scale-out
    assert network["npus_count"] == [2, 2]
    assert network["bandwidth"] == pytest.approx([8.0, 0.125], rel=1e-4)  # GB/s
    assert network["latency"] == pytest.approx([10e3, 50e3], rel=1e-3)  # ns
    system = json.loads((out / "system.json").read_text())
    assert set(system) == ASTRA_SYSTEM_KEYS
    for key in ("all-reduce-implementation", "all-gather-implementation", "reduce-scatter-implementation",
                "all-to-all-implementation"):
        assert isinstance(system[key], list) and len(system[key]) == 2
    assert system["scheduling-policy"] in ("LIFO", "FIFO")
    assert system["collective-optimization"] in ("baseline", "localBWAware")
    provenance = json.loads((out / "provenance.json").read_text())
    assert provenance["runs"][0]["run_id"] == run_id
    assert provenance["runs"][0]["topology"]["nodes"] == 2
    assert {f["dimension"] for f in provenance["fits"]} == {"intra", "inter"}


def test_calculon_tiers_match_the_documented_schema(stored: tuple[str, str], tmp_path: Path) -> None:
    db, run_id = stored
    _invoke("export", "calculon", run_id, "--db", db, "--out", str(tmp_path))
    tiers = json.loads((tmp_path / "calculon_networks.json").read_text())["networks"]
    assert len(tiers) == 2
    for tier in tiers:
        assert set(tier) == CALCULON_TIER_KEYS
        assert set(tier["ops"]) == CALCULON_OPS
        assert 0 < tier["efficiency"] <= 1 and 0 <= tier["processor_usage"] < 1
    assert tiers[0]["bandwidth"] == pytest.approx(8.0, rel=1e-4)
    assert tiers[1]["latency"] == pytest.approx(50e-6, rel=1e-3)
    assert tiers[0]["must_be_filled"] is True and tiers[1]["must_be_filled"] is False


def test_vidur_profiles_match_the_documented_columns(stored: tuple[str, str], tmp_path: Path) -> None:
    db, run_id = stored
    _invoke("export", "vidur", run_id, "--db", db, "--out", str(tmp_path))
    for name, op in (("all_reduce", "all_reduce"), ("send_recv", "sendrecv")):
        rows = list(csv.reader((tmp_path / f"{name}.csv").open()))
        assert rows[0] == [c.format(op=name) for c in VIDUR_COLUMNS]
        first = dict(zip(rows[0], rows[1]))
        assert first["collective"] == name and int(first["num_workers"]) == 2
        assert int(first["size"]) == SIZES[0]
        expected_ms = (ALPHA_S["intra"] + SIZES[0] * 1.0 / BETA_BPS["intra"]) * 1e3
        assert float(first[f"time_stats.{name}.median"]) == pytest.approx(expected_ms, rel=1e-6)
        assert len(rows) == 1 + 2 * len(SIZES)


def test_fit_predicts_the_sizes_left_out(stored: tuple[str, str], tmp_path: Path) -> None:
    db, run_id = stored
    out = tmp_path / "fit.json"
    text = _invoke("export", "fit", run_id, "--db", db, "--fit-max-bytes", "1MiB", "--json", str(out))
    assert "within" in text
    fits = {(f["op"], f["dimension"]): f for f in json.loads(out.read_text())["fits"]}
    inter = fits[("all_reduce", "inter")]
    assert inter["beta_bps"] == pytest.approx(1.25e8, rel=1e-6)
    assert inter["check"]["within"] is True and len(inter["check"]["predictions"]) == 2  # 4 and 16 MiB


def test_a_fit_on_contended_points_says_so(tmp_path: Path) -> None:
    """Cases measured while others used the machine carry a ``contended`` finding: the fit and
    the files built on it say how many of their points are in doubt."""
    from parity.model.findings import Finding, Severity

    db = tmp_path / "runs.sqlite"
    busy = Finding(code="contended", severity=Severity.WARNING, message="other processes used 40% of a CPU")
    with Store.open(db) as store:
        run = store.create_run(config={"suites": ["collectives"], "device": "cpu"},
                               provenance={"topology": {"nodes": 2, "ranks_per_node": 1, "source": "launcher"}})
        for i, size in enumerate(SIZES):
            case = _case("all_reduce", "inter", size, 2)
            store.add_case(run.run_id, case if i % 3 else replace(case, findings=(busy,)))
        store.finish_run(run.run_id, status="complete", summary={})
    out = tmp_path / "fit.json"
    result = CliRunner().invoke(cli, ["export", "fit", run.run_id, "--db", str(db), "--fit-max-bytes", "1MiB",
                                      "--json", str(out)], catch_exceptions=False)  # fmt: skip
    assert result.exit_code == 0, result.output
    # sizes 4 KiB .. 16 MiB by 4x: the 1st, 4th and 7th are contended; 1 MiB and below fit (5 points)
    assert "; 2 of its 5 points contended; predicts 2 left-out points" in result.stdout
    assert "1 of them in doubt" in result.stdout
    assert "fit rests on 2 of 5 points measured contended" in result.stderr
    (fit,) = json.loads(out.read_text())["fits"]
    assert fit["doubtful_points"] == 2 and fit["doubts"] == ["contended"]
    assert [p["doubts"] for p in fit["check"]["predictions"]] == [[], ["contended"]]
    files = CliRunner().invoke(cli, ["export", "astra-sim", run.run_id, "--db", str(db), "--out", str(tmp_path / "a")])
    assert files.exit_code == 0 and "fit rests on 3 of 7 points measured contended" in files.stderr
    provenance = json.loads((tmp_path / "a" / "provenance.json").read_text())
    assert provenance["fits"][0]["doubtful_points"] == 3


def test_a_run_without_collectives_is_refused_in_one_line(tmp_path: Path) -> None:
    db = tmp_path / "empty.sqlite"
    with Store.open(db) as store:
        run = store.create_run(config={"suites": ["gemm"]}, provenance={})
    result = CliRunner().invoke(cli, ["export", "astra-sim", run.run_id, "--db", str(db), "--out", str(tmp_path)])
    assert result.exit_code != 0 and "two or more sizes" in str(result.exception)


def test_astra_sim_system_takes_p_and_b_from_a_gemm_and_a_membw_run(stored: tuple[str, str], tmp_path: Path) -> None:
    from parity.model.figure import Figure

    db, run_id = stored
    with Store.open(db) as store:
        device = store.create_run(config={"suites": ["gemm", "membw"], "device": "cpu"}, provenance={})
        store.add_figures(device.run_id, "gemm", [Figure(name="gemm.ceiling", value=4.0e11, unit="FLOP/s",
                                                         method="measured", scope={"dtype": "bf16"})])
        store.add_figures(device.run_id, "membw", [Figure(name="membw.ceiling", value=2.5e10, unit="B/s",
                                                          method="copy")])
        store.finish_run(device.run_id, status="complete", summary={})
    out = tmp_path / "astra"
    _invoke("export", "astra-sim", run_id, device.run_id, "--db", db, "--out", str(out))
    system = json.loads((out / "system.json").read_text())
    assert system["roofline-enabled"] == 1
    assert system["peak-perf"] == pytest.approx(0.4)  # TFLOP/s
    assert system["local-mem-bw"] == pytest.approx(25.0)  # GB/s
    ceilings = json.loads((out / "provenance.json").read_text())["device_ceilings"]
    assert ceilings["peak_flop_per_s"]["run_id"] == device.run_id and ceilings["peak_flop_per_s"]["figure"] == "gemm.ceiling"
    assert ceilings["mem_bytes_per_s"]["figure"] == "membw.ceiling"
    # Without them: zeros, roofline off, and stderr says which is missing.
    result = CliRunner().invoke(cli, ["export", "astra-sim", run_id, "--db", db, "--out", str(tmp_path / "b")])
    assert result.exit_code == 0
    assert "none measured P and B" in result.output
    assert json.loads((tmp_path / "b" / "system.json").read_text())["roofline-enabled"] == 0


def test_calculon_system_takes_matrix_and_mem1_from_gemm_and_membw_runs(stored: tuple[str, str], tmp_path: Path) -> None:
    from parity.model.figure import Figure

    db, run_id = stored
    with Store.open(db) as store:
        device = store.create_run(config={"suites": ["gemm", "membw"], "device": "cpu"},
                                  provenance={"device": {"memory_bytes": 16 * 2**30}})
        for m, rate in ((4096, 0.8e12), (1024, 0.4e12)):
            store.add_case(device.run_id, CaseResult(
                suite="gemm", key=f"bf16/matmul/{m}", check={"passed": True},
                params={"kind": "shape", "dtype": "bf16", "m": m, "n": m, "k": m},
                metrics={"work_flop": 2.0 * m**3, "achieved_flops": rate}))
        for size, gbps in ((256 * 2**20, 90.0), (4 * 2**20, 60.0)):
            store.add_case(device.run_id, CaseResult(
                suite="membw", key=f"copy/{size}", check={"passed": True},
                params={"op": "copy", "bytes": size, "regime": "cold"}, metrics={"gbps": gbps}))
        store.add_figures(device.run_id, "gemm", [Figure(name="gemm.ceiling", value=1e12, unit="FLOP/s", method="m")])
        store.add_figures(device.run_id, "membw", [Figure(name="membw.ceiling", value=100e9, unit="B/s", method="c")])
        store.finish_run(device.run_id, status="complete", summary={})
    result = CliRunner().invoke(cli, ["export", "calculon", run_id, device.run_id, "--db", db, "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "lacks vector, mem2, processing_mode" in result.output
    system = json.loads((tmp_path / "calculon_system.json").read_text())
    # 4096^3: 137 GFLOP at 0.8 of P; 1024^3: 2.1 GFLOP at 0.4. 268 MB copy at 0.9 of B, 4.2 MB at 0.6.
    assert system["matrix"] == {"tflops": 1.0, "gflops_efficiency": {"bfloat16": [[64.0, 0.8], [0.0, 0.4]]}}
    assert system["mem1"] == {"GBps": 100.0, "MB_efficiency": [[100.0, 0.9], [0.0, 0.6]], "GiB": 16.0}
    assert len(system["networks"]) == 2
    assert json.loads((tmp_path / "provenance.json").read_text())["not_measured"] == ["vector", "mem2",
                                                                                     "processing_mode"]
