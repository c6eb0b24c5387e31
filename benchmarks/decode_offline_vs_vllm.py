"""``parity decode offline --engine vllm`` against ``vllm bench throughput`` on the same tiny model,
the same batch and lengths, alternated.

The model is ``scripts/vllm_cpu_server.py --build-only``'s random-weight Llama (2 layers, hidden
256 by default). Per round: parity's engine sweep over ``--batches`` (its step per batch from the
slope of ``generate`` between 2 and ``--output-tokens`` forced tokens, and the whole call's output
tokens/s beside it), then ``vllm bench throughput`` with ``--num-prompts`` = the largest batch and
``--max-num-seqs`` = that batch (every request in one batch), ``--random-input-len`` and
``--random-output-len`` the same, the order reversed every other round.

Bar: parity's tokens/s at the largest batch within 10% of vLLM's output tokens/s. The two
definitions differ by the prefill: vLLM divides all output tokens by the whole ``generate`` (one
prefill step of batch x input tokens, then output - 1 decode steps); parity's engine figure is
batch / decode step. Both ratios are printed: parity's decode-step figure and parity's whole-call
figure (vLLM's definition, measured through parity's harness) against vLLM's.

    PARITY_VLLM=/work/venvs/vllm/bin/python python benchmarks/decode_offline_vs_vllm.py \\
        --out results/cpu-amd-epyc-2026-12-03/decode_offline_vs_vllm.txt
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BAR = 0.10
# The KV cache both engines get (parity's floor, parity.families.decode.engine.KV_CACHE_FLOOR_BYTES): the
# CPU build otherwise asks for 92% of the host's memory and refuses to start on a shared host.
KV_CACHE_BYTES = 256 * 2**20


def build_model(python: str, workdir: Path, *, layers: int, hidden: int) -> Path:
    done = subprocess.run([python, str(ROOT / "scripts" / "vllm_cpu_server.py"), "--workdir", str(workdir),
                           "--build-only", "--layers", str(layers), "--hidden", str(hidden)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"building the model failed: {done.stderr[-800:]}")
    return Path(json.loads((workdir / "server.json").read_text())["model_path"])


def run_parity(python: str, model: Path, folder: Path, rnd: int, args: argparse.Namespace) -> dict:
    out = folder / f"parity-{rnd}.json"
    command = [python, "-m", "parity", "decode", "offline", "--engine", "vllm", "--model", str(model),
               "--batches", args.batches, "--input-tokens", str(args.input_tokens),
               "--output-tokens", str(args.output_tokens), "--tpot-ms", args.tpot_ms,
               "--db", str(folder / "parity.sqlite"), "--json", str(out), "--budget-s", "0.05"]
    if rnd > 0:
        command.append("--no-step-model")  # the step model is one run; the engine is what alternates
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    if not out.is_file():
        raise RuntimeError(f"parity decode offline --engine exited {done.returncode}: {done.stderr[-1500:]}")
    (folder / f"parity-{rnd}.txt").write_text(done.stdout)
    return json.loads(out.read_text())


def run_vllm(python: str, model: Path, folder: Path, rnd: int, batch: int, args: argparse.Namespace) -> dict:
    out = folder / f"vllm-{rnd}.json"
    vllm = str(Path(python).parent / "vllm")
    command = [vllm, "bench", "throughput", "--model", str(model), "--dtype", "bfloat16", "--dataset-name", "random",
               "--random-input-len", str(args.input_tokens), "--random-output-len", str(args.output_tokens),
               "--num-prompts", str(batch), "--max-num-seqs", str(batch),
               "--max-model-len", str(args.input_tokens + args.output_tokens + 16), "--seed", str(rnd),
               "--kv-cache-memory-bytes", str(KV_CACHE_BYTES), "--num-warmups", str(args.vllm_warmups),
               "--output-json", str(out)]
    done = subprocess.run(command, capture_output=True, text=True)
    if not out.is_file():
        raise RuntimeError(f"vllm bench throughput exited {done.returncode}: {(done.stderr or done.stdout)[-1500:]}")
    result = json.loads(out.read_text())
    elapsed = result["elapsed_time"]
    return {"elapsed_s": elapsed, "output_tok_s": batch * args.output_tokens / elapsed,
            "tokens_per_second": result.get("tokens_per_second"), "num_requests": result.get("num_requests")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vllm-python", default=os.environ.get("PARITY_VLLM"),
                        help="Python of an environment with vllm-cpu and parity (default: $PARITY_VLLM)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batches", default="1,4,16")
    parser.add_argument("--input-tokens", type=int, default=128)
    parser.add_argument("--output-tokens", type=int, default=32)
    parser.add_argument("--tpot-ms", default="5,10,20")
    parser.add_argument("--vllm-warmups", type=int, default=None,
                        help="vllm bench throughput --num-warmups (default: the largest batch, so its one timed "
                             "generate is warm as parity's medians are; 0 is vLLM's own default, a cold call)")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--workdir", type=Path, default=None, help="where the model is built (kept and reused)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if not args.vllm_python:
        parser.error("give --vllm-python or set PARITY_VLLM to the Python of an environment with vllm-cpu")
    folder = Path(tempfile.mkdtemp(prefix="decode-offline-vs-vllm-"))
    model = build_model(args.vllm_python, args.workdir or folder / "model", layers=args.layers, hidden=args.hidden)
    largest = max(int(b) for b in args.batches.split(","))
    args.vllm_warmups = largest if args.vllm_warmups is None else args.vllm_warmups
    begin = time.monotonic()
    rows = []
    step_model = None
    for rnd in range(args.rounds):
        order = ("parity", "vllm") if rnd % 2 == 0 else ("vllm", "parity")
        row: dict = {"round": rnd, "order": order}
        for tool in order:
            if tool == "parity":
                doc = run_parity(args.vllm_python, model, folder, rnd, args)
                step_model = step_model or doc.get("step_model")
                row["parity"] = {p["batch"]: p for p in doc["engine"]["points"]}
                row["pareto"] = doc["engine"]["pareto"]
                row["at_target"] = doc["engine"]["at_target"]
            else:
                row["vllm"] = run_vllm(args.vllm_python, model, folder, rnd, largest, args)
        rows.append(row)
        if args.out:  # each round's report, kept when a later one is cut
            write(args.out, report(rows, step_model, args, largest, model, time.monotonic() - begin), rows, step_model)
        p, v = row["parity"][largest], row["vllm"]
        print(f"[{time.monotonic() - begin:5.0f} s] round {rnd + 1}: parity batch {largest} "
              f"{p['tokens_per_s_per_card']:.0f} tok/s (decode step {p['step_s'] * 1e3:.2f} ms), whole call "
              f"{p['call_output_tok_s']:.0f}; vllm bench throughput {v['output_tok_s']:.0f} output tok/s", flush=True)
    text = report(rows, step_model, args, largest, model, time.monotonic() - begin)
    print(text)
    if args.out:
        write(args.out, text, rows, step_model)
    return 0


def write(out: Path, text: str, rows: list[dict], step_model: dict | None) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    out.with_suffix(".json").write_text(json.dumps({"rounds": rows, "step_model": step_model}, indent=1,
                                                   default=str) + "\n")


def report(rows: list[dict], step_model: dict | None, args: argparse.Namespace, largest: int, model: Path,
           seconds: float) -> str:
    decode = [r["parity"][largest]["tokens_per_s_per_card"] / r["vllm"]["output_tok_s"] for r in rows]
    whole = [r["parity"][largest]["call_output_tok_s"] / r["vllm"]["output_tok_s"] for r in rows]
    lines = [f"parity decode offline --engine vllm vs vllm bench throughput, vLLM 0.32.0 (vllm-cpu), CPU; "
             f"model {model.name} (random weights), {args.input_tokens} in, {args.output_tokens} out (forced), "
             f"{args.rounds} alternated rounds, {seconds:.0f} s; load average {os.getloadavg()[0]:.2f} on "
             f"{os.cpu_count()} cores", ""]
    batches = sorted(rows[0]["parity"])
    lines.append("engine sweep (median over rounds): batch, decode step ms, TPOT ms, tok/s per card, whole call "
                 "output tok/s, step model TPOT ms")
    model_points = {p["batch"]: p for p in (step_model or {}).get("points") or ()}
    for b in batches:
        med = lambda key: statistics.median(r["parity"][b][key] for r in rows if r["parity"][b].get(key))  # noqa: E731
        sm = model_points.get(b)
        lines.append(f"  {b:>5} {med('step_s') * 1e3:>9.3f} {med('tpot_s') * 1e3:>9.3f} "
                     f"{med('tokens_per_s_per_card'):>12.0f} {med('call_output_tok_s'):>12.0f} "
                     f"{sm['tpot_s'] * 1e3 if sm else float('nan'):>12.3f}")
    lines.append(f"  Pareto front (last round): {', '.join(str(f['batch']) for f in rows[-1]['pareto'])}; at targets: "
                 + ", ".join(f"{t['tpot_target_s'] * 1e3:g} ms -> "
                             f"{'not reached' if t['value'] is None else format(t['value'], '.0f')}"
                             for t in rows[-1]["at_target"]))
    lines.append("")
    lines.append(f"batch {largest}: vllm bench throughput (--num-warmups {args.vllm_warmups}) output tok/s per round: "
                 + ", ".join(f"{r['vllm']['output_tok_s']:.0f}" for r in rows))
    for name, ratios in (("parity engine tok/s (batch / decode step)", decode),
                         ("parity whole-call output tok/s (vLLM's definition)", whole)):
        ok = abs(statistics.median(ratios) - 1) <= BAR
        lines.append(f"  {name} / vLLM: median {statistics.median(ratios):.3f}, rounds "
                     f"{', '.join(f'{x:.3f}' for x in ratios)}  {'within 10%' if ok else 'OUTSIDE 10%'}")
    lines.append("")
    lines.append("definitions: vLLM's output tokens/s = num_prompts x output_len / elapsed of one llm.generate "
                 "(prefill included; one timed call, after --num-warmups requests); parity's engine tokens/s = batch / decode step, the step "
                 "being (t(long) - t(short)) / (long - short) of median generate times (prefill and call "
                 "overhead cancelled); parity's whole-call figure = batch x long / median t(long).")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
