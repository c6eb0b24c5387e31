"""Records shared by every layer: samples, findings, case results, runs, the schema version.

Standard library only, so a worker process, the store and the trace package can all use them.
The names below load with their module on first use: ``from parity.model.errors import
ParityError`` (which every module does) then costs no more than the errors module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from parity.model.lazy import lazy_names

if TYPE_CHECKING:
    from parity.model.errors import ParityError
    from parity.model.findings import Finding, Severity
    from parity.model.result import CaseResult, RunRecord
    from parity.model.samples import Samples
    from parity.model.schema import SCHEMA_VERSION, envelope

_HOME = {
    "SCHEMA_VERSION": "schema", "CaseResult": "result", "Finding": "findings", "ParityError": "errors",
    "RunRecord": "result", "Samples": "samples", "Severity": "findings", "envelope": "schema",
}  # fmt: skip

__all__ = sorted(_HOME)


__getattr__ = lazy_names(__name__, _HOME)
