"""Other tools' serving results as stored runs, with their method labels.

``vllm``: the JSON ``vllm bench serve --save-result`` writes (one object; ``--append-result``
files hold one object per line, each a level): ``date``, ``backend``, ``model_id``,
``num_prompts``, ``request_rate``, ``burstiness``, ``max_concurrency``, ``completed``,
``failed``, ``duration``, token totals, ``request_throughput``, ``output_throughput``,
``total_token_throughput``, and ``mean_/median_/std_/pNN_`` of ``ttft``, ``tpot``, ``itl``,
``e2el`` in ms; with ``--save-detailed`` also the per-request ``ttfts``, ``itls``, ``latencies``
(seconds), kept as raw samples. Its TPOT and ITL are vLLM's (the definitions parity uses).

``inferencex``: InferenceX's aggregated result (``agg_*.json``, one object, or a list of them):
the vLLM fields converted to seconds with ``_ms`` dropped (``median_tpot``, ``p99_ttft``...),
``intvty`` fields (``1000 / tpot_ms``), ``conc``, ``model``, ``hw``, ``framework``,
``precision``, ``tp``, ``ep`` and throughput per GPU (``tput_per_gpu``: all tokens over
``tp`` GPUs; ``output_tput_per_gpu``).

Each level's settings are carried over as its case parameters, named as parity's own
(``record.level_params``): ``max_concurrency``, ``request_rate``, ``burstiness``,
``num_prompts``, and the input and output lengths per request (vLLM: ``total_input_tokens /
num_prompts`` and ``total_output_tokens / completed``, rounded; InferenceX: ``isl``, ``osl``),
so that compare's audit lists only what differs. vLLM's client stamps each streamed chunk on
the host clock as parity's does: its samples carry parity's method name (``host-clock-stream``)
with the source in their meta.

A file that is not one of these, or whose numbers are not numbers, negative times or a zero
TPOT (:func:`check_numbers`), is a one-line error and nothing is written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from parity.families.decode.serving.level import Level
from parity.families.decode.serving.record import STRATEGY, level_case, level_params, method_labels
from parity.metrics.decode import interactivity_per_user, throughput_per_concurrency
from parity.metrics.serving import per_card
from parity.model.errors import ParityError
from parity.model.result import CaseResult
from parity.model.samples import Samples

FORMATS = ("vllm", "inferencex")
VLLM_COUNTS = ("num_prompts", "completed", "failed", "total_input_tokens", "total_output_tokens", "max_concurrency")
VLLM_RATES = ("duration", "request_throughput", "request_goodput", "output_throughput", "total_token_throughput",
              "burstiness", "max_output_tokens_per_s")
METRIC_NAMES = ("ttft", "tpot", "itl", "e2el")
STAT_PREFIXES = ("mean", "median", "std", "p")
SOURCE_META = {"source": "vllm bench serve (its client's monotonic performance counter, read per streamed chunk)"}


@dataclass(frozen=True, kw_only=True)
class ImportedRun:
    """What an import stores: the run's config and its cases (one per level)."""

    config: dict[str, Any]
    cases: list[CaseResult]


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def read_documents(path: Path) -> list[Any]:
    """One JSON document, or one per line (``--append-result``); a one-line error otherwise."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ParityError(f"cannot read {path}: {exc.strerror}; check the path") from None
    try:
        return [orjson.loads(raw)]
    except orjson.JSONDecodeError:
        pass
    try:
        docs = [orjson.loads(line) for line in raw.splitlines() if line.strip()]
    except orjson.JSONDecodeError:
        raise ParityError(f"{path} is not JSON (nor JSON lines); give a result file the tool wrote") from None
    if not docs:
        raise ParityError(f"{path} is empty; give a result file the tool wrote")
    return docs


def _stat_fields(doc: dict[str, Any], *, scale: float, suffix: str) -> dict[str, float]:
    """``{mean_ttft_ms: ...}`` from the document's ``STAT_name{suffix}`` numbers times ``scale``."""
    out = {}
    for key, value in doc.items():
        if not key.endswith(suffix) or not _number(value):
            continue
        stem = key[: len(key) - len(suffix)] if suffix else key
        stat, _, name = stem.partition("_")
        if name in METRIC_NAMES and (stat in STAT_PREFIXES[:3] or (stat[:1] == "p" and stat[1:].replace(".", "").isdigit())):
            out[f"{stat}_{name}_ms"] = float(value) * scale
    return out


def _interactivities(fields: dict[str, Any], cards: int) -> None:
    tpot = fields.get("median_tpot_ms")
    out = fields.get("output_throughput")
    fields.setdefault("interactivity_per_user", interactivity_per_user(tpot / 1e3) if tpot and tpot > 0 else None)
    fields["output_throughput_per_concurrency"] = (
        throughput_per_concurrency(out, fields["max_concurrency"])
        if _number(out) and isinstance(fields.get("max_concurrency"), int) and fields["max_concurrency"] > 0 else None)
    if fields.get("output_throughput_per_card") is None:
        fields["output_throughput_per_card"] = per_card(out, cards) if _number(out) else None
    fields["cards"] = cards


def _vllm_samples(doc: dict[str, Any]) -> dict[str, Samples]:
    """The per-request lists of a ``--save-detailed`` file (seconds) as raw samples."""
    samples = {}
    ttfts, latencies, itls = doc.get("ttfts"), doc.get("latencies"), doc.get("itls")
    if isinstance(ttfts, list) and all(_number(v) and v >= 0 for v in ttfts):
        samples["ttft"] = Samples(values_s=ttfts, method=STRATEGY, meta=SOURCE_META)
    if isinstance(latencies, list) and all(_number(v) and v >= 0 for v in latencies):
        samples["e2el"] = Samples(values_s=latencies, method=STRATEGY, meta=SOURCE_META)
    if isinstance(itls, list) and all(isinstance(r, list) and all(_number(v) and v >= 0 for v in r) for r in itls):
        samples["itl"] = Samples(values_s=[v for r in itls for v in r], method=STRATEGY, meta=SOURCE_META)
    return samples


def _is_stat(key: str, *, suffix: str) -> bool:
    """``median_tpot_ms``, ``p99_itl_ms``... (``suffix`` ``_ms``) or ``median_tpot`` (``""``)."""
    if not key.endswith(suffix):
        return False
    stat, _, name = (key[: len(key) - len(suffix)] if suffix else key).partition("_")
    return name in METRIC_NAMES and (stat in STAT_PREFIXES[:3] or (stat[:1] == "p" and stat[1:].replace(".", "").isdigit()))


def check_numbers(doc: dict[str, Any], *, source: str, fmt: str) -> None:
    """Numbers where numbers belong, before anything is stored: every time statistic
    (``*_ttft``, ``*_tpot``, ``*_itl``, ``*_e2el``) a finite number, not negative, and the
    mean and median of TTFT, TPOT and E2E latency above zero (no request takes no time);
    counts non-negative integers; rates and throughputs finite and not negative; per-request
    lists (``ttfts``, ``latencies``, ``itls``) finite seconds, not negative. A one-line
    ParityError names the file, the field and the value."""
    suffix = "_ms" if fmt == "vllm" else ""
    counts = VLLM_COUNTS + ("conc", "tp", "ep", "num_decode_gpu")
    rates = VLLM_RATES + ("output_tput_per_gpu", "tput_per_gpu", "median_intvty", "mean_intvty")
    for key, value in doc.items():
        where = f"{source}: {key} = {_shown(value)}"
        if _is_stat(key, suffix=suffix) or key in rates:
            if value is None and not _is_stat(key, suffix=suffix):
                continue  # vllm writes null for a rate it did not measure (request_goodput)
            if not _number(value) or value < 0:
                raise ParityError(f"{where} is not a number >= 0; give the file the tool wrote, unedited")
            stem = key[: len(key) - len(suffix)] if suffix else key
            if stem.split("_", 1)[0] in ("mean", "median") and stem.split("_", 1)[1] != "itl" and value <= 0:
                raise ParityError(f"{where}: a {stem.split('_', 1)[1].upper()} of 0 is not a time a request takes; "
                                  "give the file the tool wrote, unedited")
        elif key in counts and value is not None:
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ParityError(f"{where} is not a count (an integer >= 0); give the file the tool wrote, unedited")
        elif key == "request_rate" and not (value == "inf" or (_number(value) and value > 0)):
            raise ParityError(f"{where} is not a rate above 0 or 'inf'; give the file the tool wrote, unedited")
        elif key in ("ttfts", "latencies", "itls") and value is not None:
            flat = [v for r in value for v in (r if isinstance(r, list) else [None])] if key == "itls" and \
                isinstance(value, list) else value
            if not isinstance(flat, list) or not all(_number(v) and v >= 0 for v in flat):
                raise ParityError(f"{source}: {key} holds a value that is not a time >= 0 s; "
                                  "give the file the tool wrote, unedited")


def _shown(value: Any, limit: int = 40) -> str:
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def vllm_level(doc: Any, *, source: str, cards: int) -> Level:
    """One ``vllm bench serve`` result object as a level."""
    if not isinstance(doc, dict) or not isinstance(doc.get("model_id"), str) or not _number(doc.get("output_throughput")):
        raise ParityError(f"{source} is not a vllm bench serve result (it needs a model_id string and an "
                          "output_throughput number); for InferenceX files pass --format inferencex")
    check_numbers(doc, source=source, fmt="vllm")
    fields: dict[str, Any] = {k: doc[k] for k in VLLM_COUNTS if isinstance(doc.get(k), int) and not isinstance(doc[k], bool)}
    fields.update({k: float(doc[k]) for k in VLLM_RATES if _number(doc.get(k))})
    rate = doc.get("request_rate")
    fields["request_rate"] = float(rate) if _number(rate) else "inf"
    fields.setdefault("max_concurrency", None)
    fields.update(_stat_fields(doc, scale=1.0, suffix="_ms"))
    _interactivities(fields, cards)
    completed, failed = fields.get("completed"), fields.get("failed", 0)
    check = {"passed": isinstance(completed, int) and completed > 0 and failed == 0,
             "method": "as reported by vllm bench serve: completed requests and no failed ones"}
    return Level(fields=fields, samples=_vllm_samples(doc), check=check)


def inferencex_level(doc: Any, *, source: str) -> Level:
    """One InferenceX aggregated result object as a level (its per-GPU figures kept)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("model"), str) or not _number(doc.get("output_tput_per_gpu")):
        raise ParityError(f"{source} is not an InferenceX result (it needs a model string and an output_tput_per_gpu "
                          "number); for vllm bench serve files pass --format vllm")
    check_numbers(doc, source=source, fmt="inferencex")
    gpus = doc.get("tp") if isinstance(doc.get("tp"), int) and doc["tp"] > 0 else None
    if doc.get("is_multinode") and isinstance(doc.get("num_decode_gpu"), int) and doc["num_decode_gpu"] > 0:
        gpus = doc["num_decode_gpu"]
    conc = doc.get("conc")
    fields: dict[str, Any] = {
        "max_concurrency": conc if isinstance(conc, int) and not isinstance(conc, bool) else None,
        "request_rate": "inf",
        "output_throughput_per_card": float(doc["output_tput_per_gpu"]),
        "output_throughput": float(doc["output_tput_per_gpu"]) * gpus if gpus else None,
        "total_token_throughput_per_card": float(doc["tput_per_gpu"]) if _number(doc.get("tput_per_gpu")) else None,
    }
    fields.update(_stat_fields(doc, scale=1e3, suffix=""))
    if _number(doc.get("median_intvty")):
        fields["interactivity_per_user"] = float(doc["median_intvty"])
    _interactivities(fields, gpus or 1)
    check = {"passed": True, "method": "as reported by InferenceX (its aggregate keeps no request counts)"}
    return Level(fields=fields, check=check)


def _per_request(total: Any, count: Any) -> int | None:
    return round(total / count) if _number(total) and isinstance(count, int) and count > 0 else None


def _settings(level: Level, doc: dict[str, Any], fmt: str) -> dict[str, Any]:
    """The level's settings as parity names them (case parameters)."""
    if fmt == "vllm":
        inputs = _per_request(doc.get("total_input_tokens"), doc.get("num_prompts"))
        outputs = _per_request(doc.get("total_output_tokens"), doc.get("completed"))
    else:
        inputs = doc.get("isl") if isinstance(doc.get("isl"), int) else None
        outputs = doc.get("osl") if isinstance(doc.get("osl"), int) else None
    fields = {**level.fields, "burstiness": level.fields.get("burstiness", doc.get("burstiness")),
              "num_prompts": level.fields.get("num_prompts", doc.get("num_prompts"))}
    return level_params(fields, input_tokens=inputs, output_tokens=outputs)


def import_results(path: str | Path, *, fmt: str, cards: int = 1) -> ImportedRun:
    """Read ``path`` as ``fmt`` into a run's config and cases; nothing is written here."""
    if fmt not in FORMATS:
        raise ParityError(f"--format {fmt!r} is not one of {', '.join(FORMATS)}")
    source = Path(path)
    docs = read_documents(source)
    if fmt == "inferencex" and len(docs) == 1 and isinstance(docs[0], list):
        docs = docs[0]
    if not docs:
        raise ParityError(f"{source} holds no results")
    if fmt == "vllm":
        levels = [vllm_level(d, source=str(source), cards=cards) for d in docs]
        first = docs[0]
        model, labels = first["model_id"], method_labels(
            "vllm bench serve", backend=first.get("backend"), date=first.get("date"),
            output_tokens_from="vllm bench serve: its tokenizer over the generated text", tokens="tokenizer")
    else:
        levels = [inferencex_level(d, source=str(source)) for d in docs]
        first = docs[0]
        model, labels = first["model"], method_labels(
            "InferenceX", hw=first.get("hw"), framework=first.get("framework"), precision=first.get("precision"),
            per_gpu="output_tput_per_gpu: output tokens/s over tp GPUs (decode GPUs when multinode)",
            interactivity_quoted="intvty = 1000 / tpot_ms", tokens="tokenizer")
    keys = [level_case(level, params={}).key for level in levels]
    if len(set(keys)) != len(keys):
        raise ParityError(f"{source} holds two results for the same level ({keys}); import them one file each")
    cases = [level_case(level, params=_settings(level, doc, fmt)) for level, doc in zip(levels, docs)]
    hardware = f" on {first['hw']}" if fmt == "inferencex" and isinstance(first.get("hw"), str) else ""
    config = {"device": f"{model}{hardware} (imported)", "suites": ["serving"], "quick": False, "mode": "online",
              "labels": {k: v for k, v in labels.items() if v is not None},
              "imported_from": {"path": str(source.resolve()), "format": fmt},
              "endpoint": {"model": model}}
    return ImportedRun(config=config, cases=cases)
