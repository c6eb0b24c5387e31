"""A compute ceiling ``P`` taken from a stored run (``--ceiling-from RUN``), so two sweeps share it.

On a machine whose speed drifts, two sweeps that each search their own ``P`` divide by two
different ceilings; to compare them, one measured ``P`` is searched once and reused. The
reference is resolved at the command's edge, where the store is open
(``attach_stored_ceiling``): the named run's ``ceiling/<dtype>`` case, which must have been
measured, passed its check and be of the sweep's dtype, with ``P`` read from its sentinel rounds
as that run's summary quoted it (``analysis.sweep_ceiling``), is copied into the options as JSON
(``stored_ceiling``), so the run's stored config holds it and a resume needs no lookup. The
suite's ceiling case then reproduces it (``stored_ceiling_row``) with ``ceiling_from`` naming the
run, and refuses it on another device, or on the CPU with other torch threads or another CPU
affinity than the stored run had (``ceiling-from-other-conditions``: a ``P`` measured with one
pinned thread is not the ceiling of a two-thread sweep).
"""

from __future__ import annotations

import json
from typing import Any

from parity.families.gemm.datasheet import with_given_peak
from parity.harness.suite import CaseSpec
from parity.model.errors import ParityError
from parity.model.findings import Finding, Severity
from parity.model.result import CaseResult

# The stored ceiling case's metrics that a reused ceiling carries over.
CARRIED = ("ceiling_flops", "ceiling_best_flops", "ceiling_statistic", "ceiling_rounds", "ceiling_shape",
           "device_name", "emulation_note", "datasheet_flops", "datasheet_source", "datasheet_derived")


def attach_stored_ceiling(store: Any, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` (the gemm suite's, as a mapping) with ``ceiling_from`` resolved to a run id and
    that run's ceiling copied into ``stored_ceiling``; unchanged without ``ceiling_from``.
    A run without a usable ceiling of the dtype is a one-line error naming the run."""
    reference = options.get("ceiling_from")
    if not reference or options.get("stored_ceiling"):
        return options
    from parity.families.gemm.dtypes import resolve_dtype

    dtype = resolve_dtype(str(options.get("dtype", "bf16"))).name
    run = store.get_run(str(reference))
    key = f"ceiling/{dtype}"
    case = next((c for c in store.cases(run.run_id, "gemm") if c.key == key), None)
    if case is None or case.error is not None or not case.metrics.get("ceiling_flops"):
        why = "has no such case" if case is None else f"did not measure it ({case.error or 'no value'})"
        raise ParityError(f"--ceiling-from {reference}: run {run.run_id} {why} for {key}; "
                          "name a run whose gemm sweep measured this dtype's ceiling")
    from parity.families.gemm.analysis import sentinel_rates, sweep_ceiling
    from parity.families.gemm.raised import floor_at_sweep, raise_ceiling

    stored = store.cases(run.run_id, "gemm")
    metrics = floor_at_sweep(raise_ceiling(sweep_ceiling(case, sentinel_rates(stored)), stored), stored)  # the run's final P
    carried = {name: metrics.get(name) for name in CARRIED}
    carried["run_id"] = run.run_id
    carried["findings"] = [f.to_dict() for f in metrics["findings"]]
    carried["check"] = dict(case.check)
    carried["conditions"] = stored_conditions(run.config, run.provenance)
    return {**options, "ceiling_from": run.run_id, "stored_ceiling": json.dumps(carried, sort_keys=True)}


def stored_ceiling_row(case: CaseSpec, *, stored: str, device_name: str,
                       given_peak_tflops: float | None = None) -> CaseResult:
    """The ceiling case reproduced from ``stored`` (``attach_stored_ceiling``'s JSON), an error row
    when it was measured on another device than ``device_name``; a given peak replaces the
    stored datasheet figure."""
    record = json.loads(stored)
    source = record.get("device_name")
    if source and source != device_name:
        message = f"the ceiling of run {record['run_id']} was measured on {source!r}, this device is {device_name!r}"
        return CaseResult(suite=case.suite, key=case.key, params=dict(case.params), error=message,
                          findings=(Finding(code="ceiling-from-other-device", severity=Severity.ERROR,
                                            message=message, hint="name a run measured on this device"),))
    differs = differing_conditions(record.get("conditions") or {}, current_conditions())
    if differs:
        message = f"the ceiling of run {record['run_id']} was measured with {differs}"
        return CaseResult(suite=case.suite, key=case.key, params=dict(case.params), error=message,
                          findings=(Finding(code="ceiling-from-other-conditions", severity=Severity.ERROR,
                                            message=message, hint="name a run measured with the same threads and "
                                            "CPU affinity, or measure P in this run (drop --ceiling-from)"),))
    metrics = with_given_peak({name: record.get(name) for name in CARRIED}, given_peak_tflops)
    metrics["ceiling_from"] = record["run_id"]
    findings = tuple(Finding.from_dict(f) for f in record.get("findings", []))
    return CaseResult(suite=case.suite, key=case.key, params=dict(case.params), metrics=metrics,
                      check=dict(record.get("check") or {"passed": True}), findings=findings)


def stored_conditions(config: dict[str, Any], provenance: dict[str, Any]) -> dict[str, Any]:
    """What a CPU ceiling depends on besides the device, from the stored run: torch's intra-op
    threads and the process's CPU affinity (empty for an accelerator, whose ``P`` they do not set)."""
    if not str(config.get("device", "")).startswith("cpu"):
        return {}
    torch_info = provenance.get("torch") if isinstance(provenance.get("torch"), dict) else {}
    host = provenance.get("host") if isinstance(provenance.get("host"), dict) else {}
    return {"threads": torch_info.get("threads"), "affinity": host.get("affinity")}


def current_conditions() -> dict[str, Any]:
    """This process's torch threads and CPU affinity, as :func:`stored_conditions` records them."""
    import torch

    from parity.device.host import placement

    return {"threads": torch.get_num_threads(), "affinity": placement().get("affinity")}


def differing_conditions(stored: dict[str, Any], current: dict[str, Any]) -> str:
    """``""`` when the stored conditions match (or were not recorded), else what differs:
    ``1 thread(s) on CPUs 0, this run has 2 thread(s) on CPUs 0-1``."""
    keys = [k for k in ("threads", "affinity") if stored.get(k) is not None]
    if all(stored[k] == current.get(k) for k in keys):
        return ""
    return (f"{stored.get('threads')} thread(s) on CPUs {stored.get('affinity')}, this run has "
            f"{current.get('threads')} thread(s) on CPUs {current.get('affinity')}")
