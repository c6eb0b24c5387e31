"""Serving formulas, arrivals, prompts, level summaries and the TPOT-target search, on
hand-computed cases (no server)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from parity.families.decode.serving.arrivals import arrival_offsets_s
from parity.families.decode.serving.at_target import throughput_at_tpot
from parity.families.decode.serving.client import TOKENS_FROM_CHUNKS, RequestRecord, request_body
from parity.families.decode.serving.level import summarize_level
from parity.families.decode.serving.load import ClientLoad, LevelRun, split_shares
from parity.families.decode.serving.prompts import Prompt, dataset_prompts, parse_length, random_prompts
from parity.metrics.serving import distribution_ms, meets_slo, per_card, rate_per_s, request_goodput
from parity.model.errors import ParityError

MS = 1_000_000  # ns


def test_distribution_is_vllms_mean_median_std_and_linear_percentiles() -> None:
    out = distribution_ms("ttft", [0.1, 0.2, 0.3, 0.4])
    assert out["mean_ttft_ms"] == pytest.approx(250.0)
    assert out["median_ttft_ms"] == pytest.approx(250.0)
    assert out["std_ttft_ms"] == pytest.approx(111.8034, rel=1e-5)  # population std
    assert out["p90_ttft_ms"] == pytest.approx(370.0)
    assert out["p99_ttft_ms"] == pytest.approx(397.0)
    assert set(distribution_ms("itl", [])) == {"mean_itl_ms", "median_itl_ms", "std_itl_ms", "p90_itl_ms", "p99_itl_ms"}
    assert all(v is None for v in distribution_ms("itl", []).values())


def test_rates_per_card_and_goodput_by_hand() -> None:
    assert rate_per_s(320, 2.0) == 160.0
    assert per_card(800.0, 4) == 200.0
    requests = [{"ttft": 0.1, "tpot": 0.01, "e2el": 1.0}, {"ttft": 0.3, "tpot": 0.01, "e2el": 1.2},
                {"ttft": 0.1, "tpot": None, "e2el": 0.1}]
    assert meets_slo(requests[2], {"tpot": 0.001})  # an undefined TPOT does not count against it
    assert request_goodput(requests, {"ttft": 0.2}, 2.0) == 1.0
    assert request_goodput(requests, {"ttft": 0.2, "e2el": 0.5}, 2.0) == 0.5
    with pytest.raises(ValueError):
        meets_slo(requests[0], {"itl": 1.0})


@pytest.mark.parametrize("burstiness", [0.25, 1.0, 4.0])
def test_gamma_arrivals_have_the_asked_rate_and_spread(burstiness: float) -> None:
    offsets = arrival_offsets_s(20_000, rate_per_s=50.0, burstiness=burstiness, seed=3)
    gaps = np.diff([0.0, *offsets])
    assert gaps.mean() == pytest.approx(1 / 50.0, rel=0.03)
    assert gaps.std() / gaps.mean() == pytest.approx(1 / math.sqrt(burstiness), rel=0.05)
    assert offsets == arrival_offsets_s(20_000, rate_per_s=50.0, burstiness=burstiness, seed=3)
    assert offsets != arrival_offsets_s(20_000, rate_per_s=50.0, burstiness=burstiness, seed=4)


def test_poisson_counts_per_window_have_variance_equal_to_mean() -> None:
    offsets = np.array(arrival_offsets_s(50_000, rate_per_s=100.0, burstiness=1.0, seed=1))
    counts = np.bincount((offsets // 0.1).astype(int))[:-1]  # 10 expected per 100 ms window
    assert counts.mean() == pytest.approx(10.0, rel=0.03)
    assert counts.var() == pytest.approx(counts.mean(), rel=0.08)


def test_an_infinite_rate_sends_everything_at_once_and_bad_values_are_refused() -> None:
    assert arrival_offsets_s(3, rate_per_s=math.inf) == [0.0, 0.0, 0.0]
    for bad in ({"rate_per_s": 0.0}, {"rate_per_s": 1.0, "burstiness": 0.0}):
        with pytest.raises(ValueError):
            arrival_offsets_s(3, **bad)


def test_prompts_lengths_and_dataset_errors(tmp_path) -> None:
    assert parse_length("128") == (128, 128) and parse_length("64-256") == (64, 256)
    for bad in ("x", "0", "9-3"):
        with pytest.raises(ParityError, match="--input-tokens"):
            parse_length(bad)
    fixed = random_prompts(5, length=(7, 7), seed=1)
    assert [len(p.as_text().split()) for p in fixed] == [7] * 5 and len({p.text for p in fixed}) == 5
    ranged = random_prompts(200, length=(3, 9), seed=1)
    assert {p.words for p in ranged} == set(range(3, 10))
    data = tmp_path / "d.jsonl"
    data.write_text('{"prompt": "hi"}\n\n{"messages": [{"role": "user", "content": "yo"}], "output_tokens": 4}\n')
    first, second, third = dataset_prompts(data, 3)
    assert first.as_text() == "hi" and second.as_messages()[0]["content"] == "yo" and second.output_tokens == 4
    assert third == first
    data.write_text('{"prompt": "hi"}\n[1]\n')
    with pytest.raises(ParityError, match=r"d.jsonl line 2 is not a JSON object"):
        dataset_prompts(data, 1)


def test_request_bodies_ask_for_a_stream_with_usage() -> None:
    chat = request_body(Prompt(text="hi"), endpoint_type="chat", model="m", output_tokens=8, ignore_eos=True)
    assert chat["messages"] == [{"role": "user", "content": "hi"}] and chat["stream"] is True
    assert chat["stream_options"] == {"include_usage": True} and chat["max_tokens"] == 8 and chat["ignore_eos"]
    text = request_body(Prompt(text="hi", output_tokens=3), endpoint_type="completions", model="m",
                        output_tokens=8, ignore_eos=False)
    assert text["prompt"] == "hi" and text["max_tokens"] == 3 and "ignore_eos" not in text


def _record(index: int, start_ms: int, ttft_ms: int, gaps_ms: list[int], *, usage: int | None) -> RequestRecord:
    stamps = [start_ms + ttft_ms]
    for gap in gaps_ms:
        stamps.append(stamps[-1] + gap)
    return RequestRecord(index=index, start_ns=start_ms * MS, content_ns=tuple(s * MS for s in stamps),
                         end_ns=stamps[-1] * MS, usage_output_tokens=usage, usage_prompt_tokens=10,
                         asked_tokens=len(stamps), events=len(stamps))


def test_ttft_and_e2e_start_before_the_post_and_the_send_time_is_kept_beside() -> None:
    # started at 1 ms, last body byte written at 3 ms, tokens at 51 and 61 ms:
    # TTFT = 51 - 1 = 50 ms and E2E = 60 ms (vLLM's start), send = 3 - 1 = 2 ms
    record = RequestRecord(index=0, start_ns=1 * MS, sent_ns=3 * MS, content_ns=(51 * MS, 61 * MS), end_ns=62 * MS,
                           usage_output_tokens=2)
    assert record.ttft_s() == pytest.approx(0.050) and record.e2e_s() == pytest.approx(0.060)
    assert record.send_s() == pytest.approx(0.002)
    level = summarize_level(LevelRun(records=[record], clients=[ClientLoad(cpu_s=0.0, wall_s=1.0)]),
                            concurrency=1, rate_per_s_asked=math.inf, burstiness=1.0, cards=1)
    assert level.fields["median_ttft_ms"] == pytest.approx(50.0) and level.fields["median_send_ms"] == pytest.approx(2.0)
    assert level.fields["median_tpot_ms"] == pytest.approx(10.0)  # (60 - 50) / (2 - 1)
    assert RequestRecord(index=0, start_ns=1 * MS).send_s() == 0.0  # never sent: no send time


def test_a_level_has_vllms_figures_computed_by_hand() -> None:
    # request 0: TTFT 100 ms, 5 tokens (usage), E2E 100+40 = 140 ms -> TPOT 40/4 = 10 ms
    # request 1: TTFT 200 ms, 3 tokens, E2E 200+40 = 240 ms -> TPOT 20 ms; starts at 0 too
    records = [_record(0, 0, 100, [10, 10, 10, 10], usage=5), _record(1, 0, 200, [20, 20], usage=3)]
    run = LevelRun(records=records, clients=[ClientLoad(cpu_s=0.01, wall_s=0.24, lags_s=(0.0001,), events=8)])
    level = summarize_level(run, concurrency=2, rate_per_s_asked=math.inf, burstiness=1.0, cards=2,
                            slo_s={"ttft": 0.15})
    f = level.fields
    assert f["duration"] == pytest.approx(0.24)
    assert f["completed"] == 2 and f["failed"] == 0 and f["total_output_tokens"] == 8
    assert f["output_throughput"] == pytest.approx(8 / 0.24)
    assert f["output_throughput_per_card"] == pytest.approx(8 / 0.24 / 2)
    assert f["request_throughput"] == pytest.approx(2 / 0.24)
    assert f["request_goodput"] == pytest.approx(1 / 0.24)
    assert f["median_ttft_ms"] == pytest.approx(150.0) and f["median_tpot_ms"] == pytest.approx(15.0)
    assert f["median_itl_ms"] == pytest.approx(10.0) and f["p99_tpot_ms"] == pytest.approx(19.9)
    assert f["median_e2el_ms"] == pytest.approx(190.0)
    assert f["interactivity_per_user"] == pytest.approx(1000 / 15.0)
    assert f["output_throughput_per_concurrency"] == pytest.approx(8 / 0.24 / 2)
    # the server's own prompt counts (usage.prompt_tokens), named apart from vLLM's total_input_tokens
    assert f["total_usage_prompt_tokens"] == 20 and "total_input_tokens" not in f
    assert f["usage_token_throughput"] == pytest.approx(28 / 0.24)
    assert level.check["passed"] and not level.findings
    assert len(level.samples["itl"]) == 6 and len(level.samples["tpot"]) == 2


def test_token_fallback_failures_and_a_busy_client_are_findings() -> None:
    records = [_record(0, 0, 100, [10, 10], usage=None),
               RequestRecord(index=1, start_ns=0, end_ns=5 * MS, error="HTTP 500: boom")]
    run = LevelRun(records=records, clients=[ClientLoad(cpu_s=0.9, wall_s=1.0, lags_s=(0.0,), events=3)])
    level = summarize_level(run, concurrency=1, rate_per_s_asked=2.0, burstiness=1.0, cards=1)
    codes = {f.code for f in level.findings}
    assert codes == {"client-bound", "failed-requests", "tokens-from-chunks"}
    assert level.fields["token_count_source"] == TOKENS_FROM_CHUNKS and level.fields["total_output_tokens"] == 3
    assert not level.check["passed"] and level.check["errors"] == ["HTTP 500: boom"]
    # event-loop lag alone (other processes on the host) is no evidence against the client
    lagging = LevelRun(records=records[:1], clients=[ClientLoad(cpu_s=0.1, wall_s=1.0, lags_s=(0.004,) * 10)])
    assert "client-bound" not in {f.code for f in summarize_level(
        lagging, concurrency=1, rate_per_s_asked=math.inf, burstiness=1.0, cards=1).findings}
    # send time (start stamp -> last byte written) of 5 ms while the client was 60% busy is
    late = RequestRecord(**{**records[0].to_dict(), "content_ns": records[0].content_ns, "sent_ns": 5 * MS})
    sending = LevelRun(records=[late], clients=[ClientLoad(cpu_s=0.6, wall_s=1.0)])
    (bound,) = [f for f in summarize_level(sending, concurrency=1, rate_per_s_asked=math.inf, burstiness=1.0,
                                           cards=1).findings if f.code == "client-bound"]
    assert "--client-procs 2" in bound.hint


def test_shares_split_requests_round_robin_and_the_limit_evenly() -> None:
    items = [(i, {}, 0.0) for i in range(10)]
    shares = split_shares(items, procs=3, concurrency=8, url="u", headers={})
    assert [s.concurrency for s in shares] == [3, 3, 2]
    assert [i for s in shares for i, _, _ in s.items] == [0, 3, 6, 9, 1, 4, 7, 2, 5, 8]
    assert len(split_shares(items, procs=4, concurrency=2, url="u", headers={})) == 2


def test_the_tpot_search_interpolates_on_the_front_and_never_extrapolates() -> None:
    levels = [
        {"max_concurrency": 1, "median_tpot_ms": 2.0, "p99_tpot_ms": 3.0, "output_throughput_per_card": 1000.0},
        {"max_concurrency": 8, "median_tpot_ms": 6.0, "p99_tpot_ms": 9.0, "output_throughput_per_card": 3000.0},
        {"max_concurrency": 4, "median_tpot_ms": 7.0, "p99_tpot_ms": 8.0, "output_throughput_per_card": 2000.0},
    ]
    out = throughput_at_tpot(levels, targets_ms=[5.0, 1.0, 20.0], stat="p50", cards=1)
    assert [p["level"] for p in out["pareto"]] == ["concurrency/1", "concurrency/8"]
    five, one, twenty = out["at_target"]
    assert five["value"] == pytest.approx(2500.0) and five["status"] == "interpolated"
    assert one["value"] == "not reached" and twenty["value"] == "not reached"
    p99 = throughput_at_tpot(levels, targets_ms=[8.0], stat="p99", cards=1)
    assert p99["at_target"][0]["value"] == pytest.approx(2000.0) and p99["tpot_field"] == "p99_tpot_ms"
    assert "measured levels" in out["method"]
