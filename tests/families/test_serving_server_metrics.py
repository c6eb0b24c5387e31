"""The server's own metrics (Prometheus text, read strictly and fuzzed), the level's server
figures computed by hand, fresh prompts per level, the closed-loop TPOT search, and the
sampler against the scripted server's /metrics over loopback."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parity.families.decode.serving.level import Level, cache_reuse
from parity.families.decode.serving.prometheus import Sample, format_sample, parse_line, parse_text
from parity.families.decode.serving.prompts import random_prompts, shared_prefix_text
from parity.families.decode.serving.search import close_enough, search_concurrency
from parity.families.decode.serving.server_metrics import Sampler, metrics_url, read_metrics, summarize
from parity.families.decode.serving.sweep import OnlineOptions, plan_levels, prompts_for
from parity.model.errors import ParityError
from serving_script import scripted_server

VLLM_TEXT = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
# TYPE vllm:prefix_cache_queries counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1000.0
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 250.0
vllm:iteration_tokens_total_bucket{le="+Inf",model_name="m"} 10.0
vllm:iteration_tokens_total_count{model_name="m"} 10.0
vllm:iteration_tokens_total_sum{model_name="m"} 40.0 1700000000000
"""


def test_vllm_text_reads_as_samples_with_labels_and_timestamps() -> None:
    samples = parse_text(VLLM_TEXT)
    assert samples[0] == Sample("vllm:num_requests_running", (("engine", "0"), ("model_name", "m")), 3.0)
    assert [s.name for s in samples][-1] == "vllm:iteration_tokens_total_sum" and samples[-1].value == 40.0
    assert parse_line('x{a="q\\"uote\\\\ \\n"} +Inf') == Sample("x", (("a", 'q"uote\\ \n'),), math.inf)
    assert math.isnan(parse_line("x NaN").value) and parse_line("   ") is None and parse_line("# note") is None


@pytest.mark.parametrize("bad", ["x", "x{a=1} 2", 'x{a="1" 2', "x 1 2 3", "x one", "x 1 1.5", "{a=\"1\"} 2",
                                 'x{a="\\q"} 1', "x 0x10", 'x{a="1"}2'])
def test_anything_else_is_a_one_line_error_naming_the_line(bad: str) -> None:
    with pytest.raises(ParityError, match=r"/metrics line 3") as caught:
        parse_text(f"# ok\nok 1\n{bad}\n")
    assert "\n" not in str(caught.value)


names = st.from_regex(r"[a-zA-Z_:][a-zA-Z0-9_:]{0,20}", fullmatch=True)
label_names = st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,10}", fullmatch=True)
values = st.floats(allow_nan=False) | st.sampled_from([math.inf, -math.inf])


@settings(max_examples=300, deadline=None)
@given(name=names, labels=st.dictionaries(label_names, st.text(max_size=12), max_size=4), value=values)
def test_what_the_format_allows_reads_back_exactly(name: str, labels: dict[str, str], value: float) -> None:
    sample = Sample(name, tuple(sorted(labels.items())), value)
    assert parse_text(format_sample(sample) + "\n") == [sample]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_any_text_is_samples_or_a_parity_error(text: str) -> None:
    try:
        parse_text(text)
    except ParityError as exc:
        assert "\n" not in str(exc)


def test_a_levels_server_figures_by_hand() -> None:
    start = {"vllm:num_requests_running": 0.0, "vllm:prefix_cache_queries_total": 1000.0,
             "vllm:prefix_cache_hits_total": 100.0, "vllm:iteration_tokens_total_count": 10.0,
             "vllm:iteration_tokens_total_sum": 40.0}
    during = [{"vllm:num_requests_running": 4.0, "vllm:kv_cache_usage_perc": 0.5},
              {"vllm:num_requests_running": 2.0, "vllm:kv_cache_usage_perc": 0.3}]
    end = {"vllm:num_requests_running": 0.0, "vllm:prefix_cache_queries_total": 1400.0,
           "vllm:prefix_cache_hits_total": 200.0, "vllm:iteration_tokens_total_count": 30.0,
           "vllm:iteration_tokens_total_sum": 140.0}
    out = summarize(start, during, end)
    assert out["running_requests_mean"] == pytest.approx(6 / 4) and out["running_requests_max"] == 4.0
    assert out["kv_cache_usage_max"] == 0.5 and out["kv_cache_usage_mean"] == pytest.approx(0.4)
    assert out["prefix_cache_queries"] == 400 and out["prefix_cache_hits"] == 100
    assert out["prefix_cache_hit_rate"] == pytest.approx(0.25)  # 100 hit of 400 queried tokens
    assert out["tokens_per_engine_step"] == pytest.approx(100 / 20)  # (140-40) / (30-10)
    sglang = summarize({"sglang:cache_hit_rate": 0.1}, [], {"sglang:cache_hit_rate": 0.3})
    assert sglang["prefix_cache_hit_rate"] == pytest.approx(0.2) and "sglang:cache_hit_rate" in \
        sglang["prefix_cache_hit_rate_from"]
    assert metrics_url("http://h:8000/v1") == "http://h:8000/metrics" == metrics_url("http://h:8000/")


def test_cache_reuse_fires_only_where_hits_were_not_asked_for() -> None:
    fields = {"server": {"prefix_cache_hit_rate": 0.3, "prefix_cache_hit_rate_from": "x"}, "shared_prefix": 0}
    assert cache_reuse(fields).code == "cache-reuse"
    assert cache_reuse({**fields, "shared_prefix": 64}) is None
    assert cache_reuse({**fields, "server": {"prefix_cache_hit_rate": 0.0}}) is None
    assert cache_reuse({"server": {"available": False}}) is None


def test_every_level_and_the_warm_up_get_their_own_prompts_the_same_each_time() -> None:
    options = OnlineOptions(concurrency=(4, 4, 4), num_requests=8, input_tokens=(32, 32), seed=3)
    specs = plan_levels(options)
    assert [s.key for s in specs] == ["concurrency/4", "concurrency/4#2", "concurrency/4#3"]
    texts = [{p.text for p in prompts_for(options, s.ordinal)} for s in specs] + [
        {p.text for p in prompts_for(options, -1)}]
    assert sum(len(t) for t in texts) == len(set().union(*texts)) == 8 * 3 + 8
    assert [p.text for p in prompts_for(options, 1)] == [p.text for p in prompts_for(options, 1)]
    shared = random_prompts(3, length=(5, 5), seed=3, level=2, shared_prefix=16)
    prefix = shared_prefix_text(16, seed=3)
    assert all(p.text.startswith(prefix + " ") and p.words == 21 for p in shared) and len(prefix.split()) == 16


def _level(tpot_ms: float, passed: bool = True) -> Level:
    return Level(fields={"median_tpot_ms": tpot_ms}, check={"passed": passed})


def test_the_search_brackets_the_highest_concurrency_meeting_the_target() -> None:
    measured: list[int] = []

    def measure(c: int) -> Level:  # TPOT 1 + 2c ms: c <= 5 meets 12 ms
        measured.append(c)
        return _level(1 + 2 * c)

    out = search_concurrency(measure, target_ms=12.0, stat="p50", limit=64)
    assert out["concurrency"] == 5 and out["lowest_failing"] == 6 and out["status"] == "bracketed"
    assert measured == [1, 2, 4, 8, 6, 5]
    assert search_concurrency(lambda c: _level(1.0), target_ms=12.0, stat="p50", limit=6)["status"] == "at the limit"
    low = search_concurrency(lambda c: _level(50.0), target_ms=12.0, stat="p50", start=8, limit=64)
    assert low["concurrency"] is None and low["status"] == "not reached"
    failed = search_concurrency(lambda c: _level(1.0, passed=c < 3), target_ms=12.0, stat="p50", limit=64)
    assert failed["concurrency"] == 2  # a level with failed requests does not meet the target
    assert close_enough(40, 44) and not close_enough(40, 45) and close_enough(1, 2)


def test_the_sampler_reads_the_scripted_servers_metrics_over_loopback() -> None:
    with scripted_server("--ttft-ms", "1", "--gap-ms", "1") as (url, _):
        reading = read_metrics(metrics_url(url))
        assert reading["vllm:prefix_cache_queries_total"] == 0.0 and reading["vllm:num_requests_running"] == 0.0
        with Sampler(metrics_url(url), interval_s=0.05) as sampler:
            pass
        out = sampler.result()
        assert out["available"] and out["prefix_cache_queries"] == 0 and "prefix_cache_hit_rate" not in out
    gone = Sampler("http://127.0.0.1:1/metrics")
    with gone:
        pass
    assert gone.result()["available"] is False and "127.0.0.1:1" in gone.result()["reason"]


def test_imports_carry_their_settings_as_parity_names_them(tmp_path) -> None:
    import orjson

    from parity.families.decode.serving.imported import import_results

    vllm = {"model_id": "m", "num_prompts": 8, "completed": 8, "failed": 0, "max_concurrency": 2,
            "request_rate": "inf", "burstiness": 1.0, "total_input_tokens": 1030, "total_output_tokens": 63,
            "output_throughput": 100.0, "median_tpot_ms": 2.0, "median_ttft_ms": 20.0, "ttfts": [0.02, 0.021]}
    (tmp_path / "v.json").write_bytes(orjson.dumps(vllm))
    (case,) = import_results(tmp_path / "v.json", fmt="vllm").cases
    # 1030 / 8 prompts = 128.75 -> 129; 63 / 8 completed = 7.875 -> 8
    assert case.params == {"max_concurrency": 2, "request_rate": "inf", "burstiness": 1.0, "num_prompts": 8,
                           "input_tokens": 129, "output_tokens": 8, "shared_prefix": 0}
    assert case.samples["ttft"].method == "host-clock-stream" and case.metrics["headline_metric"] == "output_tokens_per_s"
    ix = {"model": "m", "hw": "h200", "conc": 4, "isl": 1024, "osl": 256, "tp": 8, "output_tput_per_gpu": 10.0,
          "median_tpot": 0.02, "median_ttft": 0.1}
    (tmp_path / "x.json").write_bytes(orjson.dumps(ix))
    run = import_results(tmp_path / "x.json", fmt="inferencex")
    assert run.cases[0].params["input_tokens"] == 1024 and run.cases[0].params["output_tokens"] == 256
    assert run.config["device"] == "m on h200 (imported)"


def test_the_serving_table_drops_silent_columns_and_fits_a_pipe() -> None:
    import io

    from rich.console import Console

    from parity.families.decode.views import VIEW, fitted_console, serving_table

    row = {"max_concurrency": 4, "repeat": 2, "completed": 8, "median_ttft_ms": 12.5, "cards": 1,
           "server": {"prefix_cache_hit_rate": 0.0, "kv_cache_usage_max": 0.25},
           "client": {"busy_fraction_max": 0.1, "procs": 1}, "findings": ["client-bound", "cache-reuse"]}
    table = serving_table([row], title="t")
    headers = [c.header for c in table.columns]
    assert "goodput" not in headers and "/card" not in headers and "cache hit" in headers
    console = Console(file=io.StringIO(), width=80, force_terminal=False)
    fitted_console(console, table).print(table)
    text = console.file.getvalue()
    assert "c=4 #2" in text and "client-bound,cache-reuse" in text and "…" not in text and "25%" in text
    shown = Console(file=io.StringIO(), width=200)
    shown.print(VIEW.terminal({"mode": "online", "levels": [row], "search": {
        "tpot_statistic": "p50", "tpot_target_ms": 10.0, "concurrency": 5, "status": "bracketed",
        "lowest_failing": 6, "method": "bisection"}}))
    assert "highest concurrency meeting TPOT p50 <= 10 ms: 5" in shown.file.getvalue()


def test_the_rate_search_brackets_within_ten_percent() -> None:
    from parity.families.decode.serving.search import search_rate

    measured: list[float] = []

    def measure(rate: float) -> Level:  # TPOT 1 + rate ms: rate <= 11 req/s meets 12 ms
        measured.append(rate)
        return _level(1 + rate)

    out = search_rate(measure, target_ms=12.0, stat="p50", start=1.0)
    # doubling 1, 2, 4, 8 (pass), 16 (fail); then (8+16)/2 = 12 fails, 10 passes, 11 passes: 12 - 11 <= 1.1
    assert measured == [1.0, 2.0, 4.0, 8.0, 16.0, 12.0, 10.0, 11.0]
    assert out["request_rate"] == 11.0 and out["lowest_failing"] == 12.0 and out["status"] == "bracketed"
    assert search_rate(lambda r: _level(50.0), target_ms=12.0, stat="p50", start=4.0)["request_rate"] is None
