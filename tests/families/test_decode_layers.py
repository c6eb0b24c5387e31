"""The offline decode layers on tiny sizes: paged cache = contiguous, attention and MoE against
simple references, shapes, and a check that fails when the attention is wrong."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from parity.families.decode import attention as attn  # noqa: E402
from parity.families.decode import step as step_module  # noqa: E402
from parity.families.decode.cache import paged_cache, relative_error  # noqa: E402
from parity.families.decode.config import load_config  # noqa: E402
from parity.families.decode.layers import cache_entry, layer_weights  # noqa: E402
from parity.families.decode.moe import grouped_products_supported, moe_mlp, moe_reference, route  # noqa: E402
from parity.families.decode.step import build_kind_step, check_kind_step  # noqa: E402
from parity.device import get_device  # noqa: E402

pytestmark = pytest.mark.torch
CPU = get_device("cpu")
# torch.nn.functional.grouped_mm is in torch's CPU builds from 2.9; older ones run experts one by one
GROUPED = grouped_products_supported(CPU, torch.float32)


def _gen(seed: int = 0):
    return torch.Generator().manual_seed(seed)


def test_paged_gather_equals_the_blocks_walked_and_the_blocks_are_scattered() -> None:
    cache = paged_cache(batch=3, context=37, block_size=8, entry=(2, 2, 4), dtype=torch.float32, device=CPU,
                        generator=_gen())
    assert cache.block_table.shape == (3, 5) and cache.gather().shape == (3, 37, 2, 2, 4)
    for s in range(3):
        assert torch.equal(cache.gather()[s], cache.walk(s))
    assert sorted(cache.block_table.flatten().tolist()) == list(range(15))
    assert cache.block_table.flatten().tolist() != list(range(15))  # not laid out contiguously
    new = torch.full((3, 2, 2, 4), 7.0)
    cache.write(new)
    assert torch.equal(cache.walk(2)[36], new[2]) and not torch.equal(cache.walk(2)[35], new[2])


def _step(name: str, kind: str, *, batch: int = 3, context: int = 21):
    config = load_config(name)
    weights = [layer_weights(config, kind, device=CPU, dtype=torch.float32, generator=_gen(1))]
    return config, build_kind_step(config, kind, weights, batch=batch, context=context, block_size=4,
                                   device=CPU, dtype=torch.float32, generator=_gen(2), grouped=GROUPED)


def test_gqa_paged_attention_matches_the_dense_reference_per_sequence() -> None:
    config, s = _step("tiny", "dense")
    q = torch.randn(3, 8, 32, generator=_gen(3))
    got = attn.gqa_heads(q, s.caches[0], config)
    for seq in range(3):
        want = attn.gqa_reference(q[seq], s.caches[0], config, sequence=seq)
        assert relative_error(got[seq], want) < 1e-5


def test_mla_absorbed_equals_the_per_head_expanded_reference() -> None:
    config, s = _step("tiny-moe", "moe")
    a, w = config.attention, s.weights[0]
    q_nope, q_rope = torch.randn(3, a.heads, a.nope_head, generator=_gen(4)), torch.randn(3, a.heads, a.rope_head)
    got = attn.mla_heads(q_nope, q_rope, w, s.caches[0], config)
    assert got.shape == (3, a.heads, a.v_head)
    for seq in range(3):
        want = attn.mla_reference(q_nope[seq].double(), q_rope[seq].double(), w, s.caches[0], config, sequence=seq)
        assert relative_error(got[seq], want) < 1e-5


def test_moe_grouped_products_equal_one_pair_at_a_time() -> None:
    config, s = _step("tiny-moe", "moe", batch=5)
    h = torch.randn(5, config.hidden, generator=_gen(5))
    got = moe_mlp(h, s.weights[0], config.moe, grouped=GROUPED)
    assert relative_error(got, moe_reference(h, s.weights[0], config.moe, tokens=list(range(5)))) < 1e-5


def test_group_limited_routing_on_a_hand_case() -> None:
    from dataclasses import replace

    moe = replace(load_config("tiny-moe").moe, routed_experts=4, groups=2, top_groups=1, top_k=2, routed_scaling=1.0)
    # router = identity on 4 features: logits are the token itself; group {0,1} sums higher
    h = torch.tensor([[3.0, 2.0, 2.5, -9.0]])
    experts, weights = route(h, torch.eye(4), moe)
    assert sorted(experts[0].tolist()) == [0, 1]  # expert 2 beats 1 but its group is out
    s = torch.sigmoid(torch.tensor([3.0, 2.0]))
    assert torch.allclose(weights[0].sort(descending=True).values, s / s.sum())


@pytest.mark.parametrize(("name", "kind"), [("tiny", "dense"), ("tiny-moe", "dense"), ("tiny-moe", "moe"),
                                            ("tiny", "head")])
def test_each_layer_kind_keeps_shapes_and_passes_its_check(name: str, kind: str) -> None:
    config, s = _step(name, kind)
    out = s()
    assert out.shape == ((3,) if kind == "head" else (3, config.hidden))
    verdict = check_kind_step(s, device=CPU, seed=0)
    assert verdict["passed"], verdict
    if kind != "head":
        assert s.caches[0].data.shape[2:] == cache_entry(config)
        assert verdict["errors"]["paged_vs_walked"] == 0.0


def test_the_check_fails_when_the_paged_attention_is_wrong(monkeypatch: pytest.MonkeyPatch) -> None:
    config, s = _step("tiny", "dense")
    monkeypatch.setattr(step_module, "gqa_heads", lambda q, cache, config: torch.zeros_like(q))
    verdict = check_kind_step(s, device=CPU, seed=0)
    assert verdict["passed"] is False and verdict["errors"]["attention_vs_reference"] > 0.5


@pytest.mark.skipif(not GROUPED, reason="this torch has no grouped_mm on the CPU")
def test_experts_one_at_a_time_equal_the_grouped_products() -> None:
    config, s = _step("tiny-moe", "moe", batch=6)
    h = torch.randn(6, config.hidden, generator=_gen(6))
    grouped = moe_mlp(h, s.weights[0], config.moe, grouped=True)
    assert relative_error(moe_mlp(h, s.weights[0], config.moe, grouped=False), grouped) < 1e-5


def test_setup_refuses_weights_beyond_free_memory_before_allocating(monkeypatch: pytest.MonkeyPatch) -> None:
    from parity.families.decode.suite import DecodeSuite
    from parity.families.decode.options import DecodeOptions
    from parity.model.errors import ParityError

    device = get_device("cpu")
    monkeypatch.setattr(device, "free_memory_bytes", lambda: 2**30)
    # (2 layers x 218.1M + head 525.3M) weights x 2 B = 1.92e9 B = 1.8 GiB, over 80% of 1 GiB
    with pytest.raises(ParityError, match=r"decode.config=llama-3-8b: the weights of 2 layer\(s\) per kind take 1.8 GiB"):
        DecodeSuite().setup(device=device, options=DecodeOptions(config="llama-3-8b"))
