"""``parity decode offline --engine``'s refusals, each one line before anything is measured (the
measurement itself runs in tier ``serving``, where vLLM is installed)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from parity.cli.main import main


def parity(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def test_engine_flags_without_engine_are_refused(capsys, db_path: Path) -> None:
    status, _, err = parity(capsys, "decode", "offline", "--model", "m", "--output-tokens", "8")
    assert status == 2 and "--model, --output-tokens apply with --engine only; add --engine vllm" in err


def test_engine_without_model_is_refused(capsys, db_path: Path) -> None:
    status, _, err = parity(capsys, "decode", "offline", "--engine", "vllm")
    assert status == 2 and "--engine vllm needs --model PATH" in err


def test_a_model_folder_without_config_is_refused(capsys, db_path: Path, tmp_path: Path) -> None:
    status, _, err = parity(capsys, "decode", "offline", "--engine", "vllm", "--model", str(tmp_path))
    assert status == 2 and "no config.json there" in err


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
def test_without_vllm_the_error_says_which_python_to_use(capsys, db_path: Path, tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({
        "hidden_size": 128, "num_hidden_layers": 1, "vocab_size": 64, "num_attention_heads": 2,
        "intermediate_size": 256}))
    status, _, err = parity(capsys, "decode", "offline", "--engine", "vllm", "--model", str(tmp_path))
    assert status == 2 and "vLLM does not import here" in err and "scripts/vllm_cpu_server.py" in err
