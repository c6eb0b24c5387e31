"""Self-checks on raw samples: the findings every timed quantity can raise on its own."""

from __future__ import annotations

from parity.model.findings import Finding, Severity
from parity.model.samples import Samples
from parity.stats.summary import summarize

HIGH_VARIANCE_RELATIVE_IQR = 0.10
MIN_SAMPLES = 5
RESOLUTION_FACTOR = 100.0


def check_samples(samples: Samples) -> list[Finding]:
    """Findings about the samples themselves.

    - ``too-few-samples``: fewer than 5 values; the CI is not meaningful.
    - ``high-variance``: IQR/median above 10%; the median is less trustworthy.
    - ``below-resolution``: the median is under 100x the timer resolution, so the timer's
      granularity is a visible part of each value.
    - ``outliers``: samples outside Tukey's fences; flagged, never dropped.
    """
    findings: list[Finding] = []
    values = samples.values_s
    if not values:
        return [
            Finding(
                code="no-samples",
                severity=Severity.ERROR,
                message="no samples were taken",
                hint="raise the time budget or the repeat count",
            )
        ]
    if len(values) < MIN_SAMPLES:
        findings.append(
            Finding(
                code="too-few-samples",
                severity=Severity.WARNING,
                message=f"only {len(values)} samples",
                hint="raise the time budget so at least 5 calls are timed",
            )
        )
    summary = summarize(values)
    if summary.median > 0 and summary.relative_iqr > HIGH_VARIANCE_RELATIVE_IQR:
        findings.append(
            Finding(
                code="high-variance",
                severity=Severity.WARNING,
                message=f"IQR is {summary.relative_iqr:.0%} of the median",
                hint="quiet the machine (other jobs, frequency scaling) or raise the budget",
            )
        )
    if samples.resolution_s > 0 and summary.median < RESOLUTION_FACTOR * samples.resolution_s:
        findings.append(
            Finding(
                code="below-resolution",
                severity=Severity.WARNING,
                message=(
                    f"median {summary.median:.3g} s is under {RESOLUTION_FACTOR:.0f}x the timer "
                    f"resolution {samples.resolution_s:.3g} s"
                ),
                hint="time several calls per sample or use graph replay",
            )
        )
    if summary.outliers:
        findings.append(
            Finding(
                code="outliers",
                severity=Severity.INFO,
                message=f"{len(summary.outliers)} of {summary.n} samples outside Tukey's fences",
                hint="kept in the data; look for interference if there are many",
            )
        )
    return findings
