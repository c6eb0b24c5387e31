"""What-if selection: scales that select nothing, and the finding when methods disagree."""

from __future__ import annotations

import pytest

from parity.model.errors import ParityError
from parity.trace.builder import build_table
from parity.trace.whatif import parse_scale, predict
from parity.trace.whatif.prediction import disagreement
from parity.trace.whatif.replay import Replay

GEMM, RELU = "ampere_sgemm_128x64_nn", "relu_kernel"


def two_streams():
    """stream 7: GEMM [0, 40), ReLU [40, 60); stream 8: GEMM [60, 80) (exposed, off the busiest
    stream). Device window [0, 80)."""
    return build_table([
        {"stream": 7, "name": GEMM, "start_ns": 0, "end_ns": 40},
        {"stream": 7, "name": RELU, "start_ns": 40, "end_ns": 60},
        {"stream": 8, "name": GEMM, "start_ns": 60, "end_ns": 80},
    ])


@pytest.mark.parametrize("scale", ["MATRIX=2", "nosuch=2", "name:nomatch=2"])
def test_a_scale_selecting_nothing_names_the_categories_present(scale: str) -> None:
    with pytest.raises(ParityError, match=r"selects no activity; categories with work in this trace: matrix, vector"):
        predict(two_streams(), [parse_scale(scale)], with_sensitivity=False)


def test_a_scale_of_one_may_select_nothing() -> None:
    p = predict(two_streams(), [parse_scale("attention=1")], method="first-order", with_sensitivity=False)
    assert p.first_order.speedup == 1.0


def test_first_order_and_replay_disagreeing_names_the_assumption() -> None:
    # first order: stream 7 saves 20 of its 40 ns of GEMM: 80 / 60; the bound saves both GEMMs'
    # 30 ns: 80 / 50, beyond what the first order counts on the busiest lane
    p = predict(two_streams(), [parse_scale("matrix=2")], method="first-order", with_sensitivity=False)
    assert p.first_order.speedup == pytest.approx(80 / 60)
    assert p.bounds.high == pytest.approx(80 / 50)

    replay = Replay(step_ns=80, new_step_ns=50, speedup=1.6, new_steps_ns=(50.0,), reproduction_error=0.0)
    (message,) = disagreement(p.first_order, p.bounds, replay)
    assert "1.333x and replay 1.600x disagree" in message and "only the scaled time on the busiest lane" in message
    assert disagreement(p.first_order, p.bounds, None) == []
