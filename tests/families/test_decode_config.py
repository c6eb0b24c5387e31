"""Model configs of the offline decode step: the shipped shapes and one-line errors for bad files."""

from __future__ import annotations

from pathlib import Path

import pytest

from parity.families.decode.config import SHIPPED, config_to_dict, load_config
from parity.model.errors import ParityError

TINY = Path(__file__).resolve().parents[2] / "src" / "parity" / "data" / "decode" / "tiny.toml"


def test_llama_3_8b_has_the_published_shape() -> None:
    c = load_config("llama-3-8b")
    a = c.attention
    assert (a.type, a.heads, a.kv_heads, a.head_dim) == ("gqa", 32, 8, 128)
    assert (c.hidden, c.ffn, c.layers, c.vocab, c.moe) == (4096, 14336, 32, 128256, None)
    assert c.layer_counts() == {"dense": 32, "head": 1}


def test_deepseek_v3_has_mla_and_moe_with_three_dense_layers() -> None:
    c = load_config("deepseek-v3")
    a, m = c.attention, c.moe
    assert (a.type, a.heads, a.q_lora, a.kv_lora, a.rope_head, a.nope_head, a.v_head) == ("mla", 128, 1536, 512, 64, 128, 128)
    assert (m.routed_experts, m.top_k, m.shared_experts, m.expert_ffn, m.first_dense_layers) == (256, 8, 1, 2048, 3)
    assert (m.gate, m.groups, m.top_groups, m.routed_scaling) == ("sigmoid", 8, 4, 2.5)
    assert c.layers == 61 and c.layer_counts() == {"dense": 3, "moe": 58, "head": 1}
    assert c.accepted_tokens_per_step == 1.0  # MTP's factor is given on request, see the TOML's comment


def test_every_shipped_config_loads_and_serialises() -> None:
    for name in SHIPPED:
        data = config_to_dict(load_config(name))
        assert data["name"] == name and data["origin"].endswith(f"{name}.toml")


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "model.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(("edit", "needle"), [
    (("hidden = 256", "hiden = 256"), "hiden = 256 is not a known key"),
    (("hidden = 256", 'hidden = "wide"'), "hidden = 'wide' must be an integer"),
    (("hidden = 256", "hidden = 0"), "hidden = 0 must be at least 1"),
    (("kv_heads = 2", "kv_heads = 3"), "attention.kv_heads = 3 must divide attention.heads = 8"),
    (('type = "gqa"', 'type = "mqa"'), "attention.type = 'mqa' is not gqa or mla"),
    (("ffn = 512", "ffn = 512\nwidth = 3"), "mlp.width = 3 is not a known key"),
    (("vocab = 2048\n", ""), "vocab is missing"),
])
def test_a_bad_key_or_value_is_one_line_naming_file_key_and_value(tmp_path: Path, edit: tuple[str, str],
                                                                   needle: str) -> None:
    path = _write(tmp_path, TINY.read_text().replace(*edit, 1))
    with pytest.raises(ParityError) as info:
        load_config(str(path))
    message = str(info.value)
    assert message.startswith(f"{path}: ") and needle in message and "\n" not in message


def test_moe_table_is_checked(tmp_path: Path) -> None:
    moe = "\n[moe]\nrouted_experts = 8\nshared_experts = 0\ntop_k = 9\nexpert_ffn = 64\nfirst_dense_layers = 1\n"
    with pytest.raises(ParityError, match="moe.top_k = 9 exceeds moe.routed_experts = 8"):
        load_config(str(_write(tmp_path, TINY.read_text() + moe)))
    good = moe.replace("top_k = 9", "top_k = 2")
    c = load_config(str(_write(tmp_path, TINY.read_text() + good)))
    assert c.layer_counts() == {"dense": 1, "moe": 3, "head": 1} and c.moe.gate == "softmax"


def test_unknown_name_bad_toml_and_missing_table(tmp_path: Path) -> None:
    with pytest.raises(ParityError, match="neither a shipped config"):
        load_config("llama-9")
    with pytest.raises(ParityError, match="not valid TOML"):
        load_config(str(_write(tmp_path, "hidden = = 3")))
    with pytest.raises(ParityError, match="attention = None must be a table"):
        load_config(str(_write(tmp_path, TINY.read_text().split("[attention]")[0] + "[mlp]\nffn = 8\n")))
