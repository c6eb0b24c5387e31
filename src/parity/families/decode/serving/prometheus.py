"""A small strict reader of the Prometheus text exposition format (version 0.0.4), the format
vLLM's and SGLang's ``/metrics`` endpoints answer in.

One sample a line: ``name{label="value",...} number [timestamp]``; ``# HELP`` and ``# TYPE``
lines and blank lines are skipped (other ``#`` lines are comments). Label values may hold the
escapes ``\\\\``, ``\\"`` and ``\\n``; numbers are Go floats (``1e3``, ``+Inf``, ``-Inf``,
``NaN``). Anything else (an unclosed brace, a label without quotes, a value that is not a
number) is a :class:`ParityError` naming the line: a server that answers something else on
``/metrics`` is not read by guesswork.

No Prometheus client library is installed beside parity, so this reader is the project's own;
it is fuzzed against text it writes itself (tests/families/test_serving_server_metrics.py).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from parity.model.errors import ParityError

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
SPECIAL = {"+inf": math.inf, "inf": math.inf, "-inf": -math.inf, "nan": math.nan}


@dataclass(frozen=True)
class Sample:
    """One sample: metric name, labels (sorted name/value pairs) and value."""

    name: str
    labels: tuple[tuple[str, str], ...]
    value: float


def parse_number(text: str, *, line: int) -> float:
    """A Go float as Prometheus writes it; a one-line error otherwise."""
    special = SPECIAL.get(text.lower())
    if special is not None:
        return special
    try:
        if text.strip() != text or not text or text.lower().startswith(("0x", "-0x", "+0x")) or "_" in text:
            raise ValueError(text)
        return float(text)
    except ValueError:
        raise ParityError(f"/metrics line {line}: {text[:40]!r} is not a number; is this a Prometheus "
                          "endpoint?") from None


def _labels(text: str, start: int, line: int) -> tuple[tuple[tuple[str, str], ...], int]:
    """The labels from just after ``{`` to just after ``}``, and where they end."""
    labels: list[tuple[str, str]] = []
    pos = start
    while True:
        while pos < len(text) and text[pos] == " ":
            pos += 1
        if pos < len(text) and text[pos] == "}":
            return tuple(sorted(labels)), pos + 1
        match = LABEL_NAME.match(text, pos)
        if not match or text[match.end():match.end() + 2] != '="':
            raise ParityError(f"/metrics line {line}: a label is not name=\"value\"; is this a Prometheus endpoint?")
        name, pos = match.group(), match.end() + 2
        value: list[str] = []
        while True:
            if pos >= len(text):
                raise ParityError(f"/metrics line {line}: a label value is not closed")
            char = text[pos]
            if char == "\\":
                escaped = text[pos + 1:pos + 2]
                if escaped not in ("\\", '"', "n"):
                    raise ParityError(f"/metrics line {line}: unknown escape \\{escaped} in a label value")
                value.append("\n" if escaped == "n" else escaped)
                pos += 2
            elif char == '"':
                pos += 1
                break
            else:
                value.append(char)
                pos += 1
        labels.append((name, "".join(value)))
        while pos < len(text) and text[pos] == " ":
            pos += 1
        if pos < len(text) and text[pos] == ",":
            pos += 1
        elif pos >= len(text) or text[pos] != "}":
            raise ParityError(f"/metrics line {line}: labels are not closed with }}")


def parse_line(text: str, line: int = 1) -> Sample | None:
    """One line as a sample, or None for a blank or ``#`` line."""
    stripped = text.rstrip("\r").strip(" \t")
    if not stripped or stripped.startswith("#"):
        return None
    match = NAME.match(stripped)
    if not match:
        raise ParityError(f"/metrics line {line}: {stripped[:40]!r} does not start with a metric name")
    pos = match.end()
    labels: tuple[tuple[str, str], ...] = ()
    if stripped[pos:pos + 1] == "{":
        labels, pos = _labels(stripped, pos + 1, line)
    rest = stripped[pos:].split(" ") if " " in stripped[pos:] else stripped[pos:].split("\t")
    rest = [part for part in rest if part]
    if not rest or len(rest) > 2 or stripped[pos:pos + 1] not in (" ", "\t"):
        raise ParityError(f"/metrics line {line}: expected 'name{{labels}} value [timestamp]'")
    if len(rest) == 2 and not re.fullmatch(r"-?[0-9]+", rest[1]):
        raise ParityError(f"/metrics line {line}: timestamp {rest[1][:40]!r} is not an integer of ms")
    return Sample(name=match.group(), labels=labels, value=parse_number(rest[0], line=line))


def parse_text(text: str) -> list[Sample]:
    """Every sample of an exposition, in order."""
    out = []
    for number, raw in enumerate(text.split("\n"), 1):  # only \n ends a line: \r may sit in a label
        sample = parse_line(raw, number)
        if sample is not None:
            out.append(sample)
    return out


def format_sample(sample: Sample) -> str:
    """The line that reads back as ``sample`` (the writer the reader is fuzzed against)."""
    def escape(value: str) -> str:
        return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    labels = ",".join(f'{k}="{escape(v)}"' for k, v in sample.labels)
    value = sample.value
    number = "NaN" if math.isnan(value) else "+Inf" if value == math.inf else "-Inf" if value == -math.inf else repr(value)
    return f"{sample.name}{{{labels}}} {number}" if labels else f"{sample.name} {number}"
