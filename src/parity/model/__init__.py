"""Records shared by every layer: samples, findings, case results, runs, the schema version.

Standard library only, so a worker process, the store and the trace package can all use them.
"""

from parity.model.errors import ParityError
from parity.model.findings import Finding, Severity
from parity.model.result import CaseResult, RunRecord
from parity.model.samples import Samples
from parity.model.schema import SCHEMA_VERSION, envelope

__all__ = [
    "SCHEMA_VERSION",
    "CaseResult",
    "Finding",
    "ParityError",
    "RunRecord",
    "Samples",
    "Severity",
    "envelope",
]
