"""Prompts for a serving load: random words of a fixed or random length, or a JSONL dataset.

parity does not tokenize (no tokenizer is downloaded): ``--input-tokens N`` makes prompts of N
words drawn, seeded, from a list of short common English words, each close to one token in
the usual tokenizers; the count the server reports (``usage.prompt_tokens``) is recorded per
request as the true input length. ``N`` fixes the length; ``LO-HI`` draws each prompt's length
uniformly in ``[LO, HI]``. Every prompt is different, so a prefix cache cannot serve one from
another, and so is every level's set: level ``n`` of a sweep (and the warm-up, level ``-1``)
draws its prompts from the seed ``(seed, n)`` (:func:`level_seed`), so no level reuses another's
prompts (a caching server would otherwise answer the later levels from its cache), and a level
measured again (``--resume``) gets the same prompts as the first time. ``shared_prefix`` words,
the same for every request and level (seed ``(seed, "prefix")``), go before each prompt to
measure the cache on purpose (``--shared-prefix N``; the prompt is then N + its own length, as
with ``vllm bench serve --random-prefix-len``).

A dataset file is JSON Lines, one request per line: ``{"prompt": "..."}`` (or ``"text"``), or
``{"messages": [{"role": "user", "content": "..."}]}`` for chat endpoints; an optional integer
``"output_tokens"`` overrides ``--output-tokens`` for that request.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from parity.model.errors import ParityError

WORDS = (
    "the of and to in is it you that he was for on are as with his they at be this have from or "
    "one had by word but not what all were we when your can said there use an each which she do "
    "how their if will up other about out many then them these so some her would make like him "
    "into time has look two more write go see number no way could people my than first water "
    "been call who oil its now find long down day did get come made may part"
).split()


@dataclass(frozen=True, kw_only=True)
class Prompt:
    """One request's input: ``text`` (completions) or ``messages`` (chat), its length in words
    when parity made it, and the output tokens asked for (None: the command's default)."""

    text: str | None = None
    messages: tuple[dict[str, Any], ...] | None = None
    words: int | None = None
    output_tokens: int | None = None

    def as_messages(self) -> list[dict[str, Any]]:
        """The chat form: the dataset's messages, or the text as one user message."""
        if self.messages is not None:
            return [dict(m) for m in self.messages]
        return [{"role": "user", "content": self.text or ""}]

    def as_text(self) -> str:
        """The completions form: the text, or the messages' contents joined by newlines."""
        if self.text is not None:
            return self.text
        return "\n".join(str(m.get("content", "")) for m in self.messages or ())


def parse_length(spec: str) -> tuple[int, int]:
    """``"128"`` -> (128, 128); ``"64-256"`` -> (64, 256); a one-line error otherwise."""
    lo, sep, hi = str(spec).partition("-")
    try:
        low, high = int(lo), int(hi if sep else lo)
    except ValueError:
        raise ParityError(f"--input-tokens {spec!r}: expected N or LO-HI words, e.g. 128 or 64-256") from None
    if low < 1 or high < low:
        raise ParityError(f"--input-tokens {spec!r}: need 1 <= LO <= HI")
    return low, high


WARMUP_LEVEL = -1
PREFIX_STREAM = 1 << 20  # the shared prefix's seed stream, apart from every level's


def level_seed(seed: int, level: int) -> np.random.SeedSequence:
    """The seed of level ``level``'s prompts (``-1``: the warm-up): one stream per (seed, level),
    so levels never share prompts and a level measured again draws the same ones."""
    return np.random.SeedSequence([abs(int(seed)), int(seed < 0), level + 1])


def _words(rng: np.random.Generator, size: int) -> str:
    return " ".join(WORDS[i] for i in rng.integers(0, len(WORDS), size=size))


def shared_prefix_text(words: int, *, seed: int = 0) -> str:
    """The ``words`` words every request of a ``--shared-prefix`` sweep starts with."""
    return _words(np.random.default_rng(level_seed(seed, PREFIX_STREAM)), words) if words > 0 else ""


def random_prompts(count: int, *, length: tuple[int, int], seed: int = 0, level: int = 0,
                   shared_prefix: int = 0) -> list[Prompt]:
    """``count`` prompts of random words, lengths uniform in ``length`` (inclusive), drawn from
    level ``level``'s seed, each after the ``shared_prefix`` words common to all (none: 0)."""
    rng = np.random.default_rng(level_seed(seed, level))
    low, high = length
    sizes = rng.integers(low, high + 1, size=count)
    prefix = shared_prefix_text(shared_prefix, seed=seed)
    out = []
    for size in sizes:
        text = _words(rng, int(size))
        out.append(Prompt(text=f"{prefix} {text}" if prefix else text, words=int(size) + shared_prefix))
    return out


def dataset_prompts(path: str | Path, count: int, *, start: int = 0) -> list[Prompt]:
    """``count`` requests of a JSONL dataset from request ``start`` on, cycled when it holds
    fewer (level ``n`` of a sweep starts at ``n * count``, so levels take different requests
    while the dataset lasts)."""
    source = Path(path)
    try:
        lines = source.read_bytes().splitlines()
    except OSError as exc:
        raise ParityError(f"cannot read dataset {source}: {exc.strerror}; check the path") from None
    prompts = [_dataset_line(line, source, number) for number, line in enumerate(lines, 1) if line.strip()]
    if not prompts:
        raise ParityError(f"dataset {source} holds no requests; write one JSON object per line")
    return [prompts[(start + i) % len(prompts)] for i in range(count)]


def _dataset_line(line: bytes, source: Path, number: int) -> Prompt:
    where = f"dataset {source} line {number}"
    try:
        item = orjson.loads(line)
    except orjson.JSONDecodeError:
        raise ParityError(f"{where} is not JSON; write one JSON object per line") from None
    if not isinstance(item, dict):
        raise ParityError(f"{where} is not a JSON object; give {{\"prompt\": \"...\"}}")
    output = item.get("output_tokens")
    if output is not None and (not isinstance(output, int) or isinstance(output, bool) or output < 1):
        raise ParityError(f"{where}: output_tokens {output!r} is not a positive integer")
    text = item.get("prompt", item.get("text"))
    messages = item.get("messages")
    if isinstance(text, str):
        return Prompt(text=text, output_tokens=output)
    if isinstance(messages, list) and messages and all(isinstance(m, dict) and "content" in m for m in messages):
        return Prompt(messages=tuple(messages), output_tokens=output)
    raise ParityError(f"{where} has neither a \"prompt\" string nor a \"messages\" list of {{role, content}}")
