"""The run record a sweep writes into: a new run with its config and provenance, or a stored
one to resume, refused when the device or the target (ranks, endpoint) is not the one it ran on.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from typing import Any

from parity.harness.options import options_to_dict
from parity.harness.suite import Suite
from parity.model.errors import ParityError
from parity.model.result import RunRecord
from parity.store.database import Store, now_utc

log = logging.getLogger(__name__)


def run_config(
    *, device: Any, suites: Sequence[Suite], quick: bool, options: dict[str, Any], endpoint: Any = None
) -> dict[str, Any]:
    """The stored ``config`` of a run: what was asked, enough to resume it (typed options in
    their JSON form, only the keys that differ from the defaults; the endpoint's URL and model;
    ``modes``, each suite's measurement mode where it declares one, such as decode's offline
    engine step, so that compare never sets an offline number beside an online one)."""
    config = {
        "device": getattr(device, "name", str(device)),
        "suites": [s.name for s in suites],
        "quick": bool(quick),
        "options": {s.name: options_to_dict(options[s.name]) for s in suites},
    }
    modes = {s.name: mode for s in suites if isinstance(mode := getattr(s, "mode", None), str)}
    if modes:
        config["modes"] = modes
    if endpoint is not None:
        config["endpoint"] = {"url": endpoint.url, "model": endpoint.model}
    return config


def _device_identity(device: Any) -> str | None:
    """The device's model name from its properties (what a resume must match), or None."""
    try:
        return str(device.properties().to_dict().get("name"))
    except Exception:  # noqa: BLE001 - identity is a guard, not a requirement
        log.debug("device %r reports no properties", device, exc_info=True)
        return None


def _target_record(device: Any, group: Any, endpoint: Any = None) -> Any:
    """The run's target: the remote endpoint or the group of ranks when there is one, else this
    local device."""
    from parity.ranks import LocalTarget

    if endpoint is not None:
        return endpoint.record()
    return group.record() if group is not None else LocalTarget(device=device).record()


def _collect_provenance(
    device: Any, argv: Sequence[str] | None, *, group: Any = None, endpoint: Any = None
) -> dict[str, Any]:
    from parity.device.provenance import collect_provenance

    provenance = dict(collect_provenance(device, argv=list(argv if argv is not None else sys.argv)))
    provenance.setdefault("device_identity", _device_identity(device))
    provenance["target"] = _target_record(device, group, endpoint).to_dict()
    topology = getattr(group, "topology", None)  # parity.ranks.topology: which node each rank ran on
    if topology is not None:
        provenance["topology"] = topology.to_dict()
    return provenance


def _check_target(run: RunRecord, *, device: Any, group: Any, endpoint: Any = None) -> None:
    """Refuse to resume a run on another target (another device, world size, backend, server
    or model)."""
    from parity.ranks import Target, check_same_target

    stored = run.provenance.get("target")
    if stored:
        check_same_target(Target.from_dict(stored), _target_record(device, group, endpoint))


def start_or_resume(
    store: Store,
    *,
    device: Any,
    suites: Sequence[Suite],
    quick: bool,
    options: dict[str, Any],
    resume_run_id: str | None,
    argv: Sequence[str] | None,
    group: Any = None,
    endpoint: Any = None,
) -> RunRecord:
    if resume_run_id is None:
        config = run_config(device=device, suites=suites, quick=quick, options=options, endpoint=endpoint)
        provenance = _collect_provenance(device, argv, group=group, endpoint=endpoint)
        return store.create_run(config=config, provenance=provenance)
    run = store.get_run(resume_run_id)
    _check_target(run, device=device, group=group, endpoint=endpoint)
    stored = run.provenance.get("device_identity")
    here = _device_identity(device)
    if stored and here and stored != here:
        raise ParityError(
            f"run {run.run_id} was measured on {stored!r}, this device is {here!r}; "
            "resume it on the same device or start a new run"
        )
    provenance = dict(run.provenance)
    resumes = list(provenance.get("resumes", []))
    resumes.append({"at": now_utc(), "argv": list(argv if argv is not None else sys.argv)})
    provenance["resumes"] = resumes
    store.update_provenance(run.run_id, provenance)
    return store.get_run(run.run_id)
