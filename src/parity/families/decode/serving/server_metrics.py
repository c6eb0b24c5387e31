"""The server's own view of a level, from its Prometheus ``/metrics`` endpoint (vLLM, SGLang).

While a level runs, a thread reads ``/metrics`` every ``interval_s`` (0.25 s) and once at the
level's start and end. Gauges are summarised over the samples taken during the level (mean and
maximum); counters and histograms as the difference between the end and the start, so what
other clients of the server did before the level does not count. Samples of one name with
several label sets (one per model or engine) are summed.

Names read (vLLM's v1 names first, then its older ones, then SGLang's):

- running requests: ``vllm:num_requests_running``, ``sglang:num_running_reqs``
- waiting requests: ``vllm:num_requests_waiting``, ``sglang:num_queue_reqs``
- KV cache use (0-1): ``vllm:kv_cache_usage_perc``, ``vllm:gpu_cache_usage_perc``,
  ``sglang:token_usage``
- prefix cache: ``vllm:prefix_cache_queries_total`` and ``vllm:prefix_cache_hits_total``
  (tokens; the hit rate is hits / queries over the level); else the gauge
  ``vllm:gpu_prefix_cache_hit_rate`` or ``sglang:cache_hit_rate`` (its mean over the level)
- engine step: the histograms ``vllm:model_forward_time_milliseconds`` and
  ``vllm:model_execute_time_milliseconds`` (older vLLM) and ``vllm:iteration_tokens_total``
  (tokens per engine step), as the mean over the level (sum delta / count delta)
- server-side latencies: ``vllm:time_to_first_token_seconds`` and
  ``vllm:inter_token_latency_seconds`` (SGLang's ``sglang:`` ones), mean over the level.

The figures are the server's, whoever loaded it: requests of another client sent during the
level count in them too (the prefix-cache queries then exceed this level's prompt tokens).

An endpoint without ``/metrics`` gives ``{"available": False, "reason": ...}``: the level is
measured all the same.
"""

from __future__ import annotations

import queue
import threading
import urllib.error
import urllib.request
from collections.abc import Iterable
from typing import Any

from parity.families.decode.serving.prometheus import Sample, parse_text
from parity.model.errors import ParityError

INTERVAL_S = 0.25
TIMEOUT_S = 5.0
GAUGES = {
    "running_requests": ("vllm:num_requests_running", "sglang:num_running_reqs"),
    "waiting_requests": ("vllm:num_requests_waiting", "sglang:num_queue_reqs"),
    "kv_cache_usage": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"),
    "prefix_cache_hit_rate_gauge": ("vllm:gpu_prefix_cache_hit_rate", "sglang:cache_hit_rate"),
}
COUNTERS = {
    "prefix_cache_queries": ("vllm:prefix_cache_queries_total", "vllm:prefix_cache_queries"),
    "prefix_cache_hits": ("vllm:prefix_cache_hits_total", "vllm:prefix_cache_hits"),
    "prompt_tokens": ("vllm:prompt_tokens_total", "sglang:prompt_tokens_total"),
    "generation_tokens": ("vllm:generation_tokens_total", "sglang:generation_tokens_total"),
}
HISTOGRAM_MEANS = {
    "engine_forward_ms": ("vllm:model_forward_time_milliseconds",),
    "engine_execute_ms": ("vllm:model_execute_time_milliseconds",),
    "tokens_per_engine_step": ("vllm:iteration_tokens_total",),
    "server_ttft_s": ("vllm:time_to_first_token_seconds", "sglang:time_to_first_token_seconds"),
    "server_itl_s": ("vllm:inter_token_latency_seconds", "sglang:inter_token_latency_seconds"),
}


def metrics_url(base_url: str) -> str:
    """``http://host:port/metrics`` for a server whose API is at ``base_url`` (with or without /v1)."""
    root = base_url.rstrip("/")
    return (root[:-3] if root.endswith("/v1") else root) + "/metrics"


WANTED = tuple(sorted({n for group in (*GAUGES.values(), *COUNTERS.values()) for n in group}
                      | {f"{n}_{part}" for group in HISTOGRAM_MEANS.values() for n in group for part in ("sum", "count")}))


def wanted_lines(text: str) -> str:
    """Only the lines of the names read (a vLLM exposition is mostly histogram buckets): the
    sampler runs beside the client's event loop, so it parses as little as it can."""
    return "\n".join(line for line in text.split("\n") if line.startswith(WANTED))


def read_metrics(url: str, timeout_s: float = TIMEOUT_S) -> dict[str, float]:
    """One reading of the names read: each one's value summed over its label sets
    (histograms by their ``_sum`` and ``_count`` series)."""
    request = urllib.request.Request(url, headers={"Accept": "text/plain"})
    with urllib.request.urlopen(request, timeout=timeout_s) as answer:  # noqa: S310 - the user's server
        text = answer.read().decode("utf-8", "replace")
    return totals(parse_text(wanted_lines(text)))


def totals(samples: Iterable[Sample]) -> dict[str, float]:
    """Values summed per name over label sets (bucket series are left out)."""
    out: dict[str, float] = {}
    for sample in samples:
        if sample.name.endswith("_bucket"):
            continue
        out[sample.name] = out.get(sample.name, 0.0) + sample.value
    return out


def _first(reading: dict[str, float], names: tuple[str, ...]) -> tuple[str, float] | None:
    return next(((n, reading[n]) for n in names if n in reading), None)


def summarize(start: dict[str, float], during: list[dict[str, float]], end: dict[str, float]) -> dict[str, Any]:
    """The level's server figures from the readings at its start, during it and at its end."""
    out: dict[str, Any] = {"available": True, "readings": len(during) + 2, "names": {}}
    seen = [start, *during, end]
    for field, names in GAUGES.items():
        values = [hit[1] for r in seen if (hit := _first(r, names))]
        if values:
            out[f"{field}_mean"] = sum(values) / len(values)
            out[f"{field}_max"] = max(values)
            last = _first(end, names)
            out["names"][field] = last[0] if last else names[0]
    for field, names in COUNTERS.items():
        before, after = _first(start, names), _first(end, names)
        if before and after:
            out[field] = max(0.0, after[1] - before[1])
            out["names"][field] = after[0]
    for field, names in HISTOGRAM_MEANS.items():
        for name in names:
            count = end.get(f"{name}_count", 0.0) - start.get(f"{name}_count", 0.0)
            total = end.get(f"{name}_sum", 0.0) - start.get(f"{name}_sum", 0.0)
            if f"{name}_count" in end and count > 0:
                out[field] = total / count
                out["names"][field] = name
                break
    queries, hits = out.get("prefix_cache_queries"), out.get("prefix_cache_hits")
    if queries:
        out["prefix_cache_hit_rate"] = (hits or 0.0) / queries
        out["prefix_cache_hit_rate_from"] = "hits / queries over the level (tokens)"
    elif "prefix_cache_hit_rate_gauge_mean" in out:
        out["prefix_cache_hit_rate"] = out["prefix_cache_hit_rate_gauge_mean"]
        out["prefix_cache_hit_rate_from"] = f"mean of {out['names']['prefix_cache_hit_rate_gauge']} over the level"
    return out


class Sampler:
    """Reads ``/metrics`` at the start, every ``interval_s`` while the level runs, and at the
    end; ``result()`` is :func:`summarize`'s answer or why there is none. Use as a context."""

    def __init__(self, url: str | None, *, interval_s: float = INTERVAL_S) -> None:
        self.url, self.interval_s = url, interval_s
        self._stop: queue.Queue[bool] = queue.Queue()  # a put() ends the sampling loop
        self._during: list[dict[str, float]] = []
        self._start: dict[str, float] | None = None
        self._end: dict[str, float] | None = None
        self._reason = "no metrics URL" if url is None else ""
        self._thread: threading.Thread | None = None

    def _read(self) -> dict[str, float] | None:
        if self.url is None or self._reason:
            return None
        try:
            return read_metrics(self.url)
        except (OSError, urllib.error.URLError, ParityError, ValueError) as exc:
            self._reason = f"{self.url}: {type(exc).__name__}: {str(exc)[:160]}"
            return None

    def _loop(self) -> None:
        while True:
            try:
                self._stop.get(timeout=self.interval_s)
                return
            except queue.Empty:
                pass
            reading = self._read()
            if reading is None:
                return
            self._during.append(reading)

    def __enter__(self) -> Sampler:
        self._start = self._read()
        if self._start is not None:
            self._thread = threading.Thread(target=self._loop, name="parity-server-metrics", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.put(True)
        if self._thread is not None:
            self._thread.join(timeout=TIMEOUT_S + 1)
        if self._start is not None and not self._reason:
            self._end = self._read()

    def result(self) -> dict[str, Any]:
        if self._start is None or self._end is None:
            return {"available": False, "reason": self._reason or "not read"}
        return {**summarize(self._start, self._during, self._end), "url": self.url}
