"""``parity decode offline --engine vllm`` against ``vllm bench throughput`` on the same tiny model,
the same batch and lengths, alternated.

The model is ``scripts/vllm_cpu_server.py --build-only``'s random-weight Llama (2 layers, hidden
256 by default). Per round: parity's engine sweep over ``--batches`` (its step per batch from the
slope of ``generate`` between 2 and ``--output-tokens`` forced tokens, and the whole call's output
tokens/s beside it), then ``vllm bench throughput`` with ``--num-prompts`` = the largest batch and
``--max-num-seqs`` = that batch (every request in one batch), ``--random-input-len`` and
``--random-output-len`` the same, the order reversed every other round, the 1-minute load
average read before each.

Bar: parity's tokens/s at the largest batch within 10% of vLLM's output tokens/s, the same
definition on both sides: output tokens / elapsed of one ``generate`` of the batch's prompts
(prefill included). vLLM's is one call after ``--num-warmups`` requests; parity's the median
over its timed calls at the long length, fresh prompts each. parity's decode-step figure
(batch / decode step, prefill cancelled) is printed beside it, not held to the bar.

Audit: the engine settings that change a step's time, parity's (recorded in its JSON) against
those ``vllm bench throughput``'s engine logged, and the CPU cores each engine's worker was bound
to. What still differs by definition is measured and printed: vLLM's random dataset gives text
prompts, tokenized inside its timed call; parity gives token ids.

On a shared host the rounds spread widely: vLLM's CPU worker binds its one OpenMP thread to core
0 and keeps core 1 for the front end (its log: ``core ids=[0]``, ``reserved_cpus=[1]``) in every
engine started with the defaults, both sides' and any other vLLM server's, so another server under
load shares that core with the engine measured. The load average before each command is printed.

    PARITY_VLLM=/work/venvs/vllm/bin/python python benchmarks/decode_offline_vs_vllm.py \\
        --rounds 3 --out results/cpu-amd-epyc-2026-12-03/decode_offline_vs_vllm.txt
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shlex
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
    (folder / f"parity-{rnd}.log").write_text(done.stderr)
    doc = json.loads(out.read_text())
    doc["engine_log"] = engine_settings(done.stdout + done.stderr)
    return doc


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
    (folder / f"vllm-{rnd}.log").write_text(done.stdout + done.stderr)
    result = json.loads(out.read_text())
    elapsed = result["elapsed_time"]
    return {"elapsed_s": elapsed, "output_tok_s": batch * args.output_tokens / elapsed,
            "tokens_per_second": result.get("tokens_per_second"), "num_requests": result.get("num_requests"),
            "engine": engine_settings(done.stdout + done.stderr)}


# The settings that change a step's time, as vLLM's own log states them (its "non-default args",
# its scheduler line and its engine config line), for either side.
CONFIG_PATTERNS = {"dtype": r"dtype=torch\.(\w+)", "max_model_len": r"max_seq_len=(\d+)",
                   "enforce_eager": r"enforce_eager=(\w+)", "seed": r"[ ,]seed=(\w+)",
                   "enable_prefix_caching": r"enable_prefix_caching=(\w+)",
                   "enable_chunked_prefill": r"enable_chunked_prefill=(\w+)",
                   "compilation_mode": r"'mode': <CompilationMode\.(\w+)",
                   "max_num_batched_tokens": r"max_num_batched_tokens=(\d+)",
                   "max_num_seqs": r"'max_num_seqs': (\d+)", "bound_cores": r"core ids=(\[[\d, ]*\])"}


def engine_settings(log: str) -> dict:
    """The settings ``CONFIG_PATTERNS`` finds in an engine's log, and its non-default arguments."""
    found = {key: m.group(1) for key, pattern in CONFIG_PATTERNS.items() if (m := re.search(pattern, log))}
    m = re.search(r"non-default args: (\{.*\})", log)
    if m:
        try:
            given = ast.literal_eval(m.group(1))
        except (ValueError, SyntaxError):  # a value printed as an object: keep the plain ones
            given = {k: v.strip("'") for k, v in re.findall(r"'(\w+)': ('[^']*'|[\w.+-]+)", m.group(1))}
        found["non_default_args"] = {k: v for k, v in given.items() if k != "model"}
    return found


def append_calls(args: argparse.Namespace) -> int:
    """Add each round's single timed calls (from the kept run folder) to an earlier report."""
    if not args.out or not args.out.with_suffix(".json").is_file():
        raise SystemExit("--calls-from needs --out: the report (and its .json) of the run that folder kept")
    saved = json.loads(args.out.with_suffix(".json").read_text())
    rows = saved["rounds"]
    largest = max(int(b) for b in rows[0]["parity"])
    for row in rows:
        doc = json.loads((args.calls_from / f"parity-{row['round']}.json").read_text())
        row["parity_long_calls_s"] = long_calls(doc, largest)
    lines = ["", f"addendum: {command_line()}", *calls_lines(rows, largest, args.output_tokens)]
    with args.out.open("a") as handle:
        handle.write("\n".join(lines) + "\n")
    args.out.with_suffix(".json").write_text(json.dumps(saved, indent=1, default=str) + "\n")
    print("\n".join(lines))
    return 0


def calls_lines(rows: list[dict], largest: int, output_tokens: int) -> list[str]:
    """parity's first timed call and its range per round at the largest batch, and the first call
    against vLLM's one timed call: the same protocol (one call after one warm-up generate)."""
    calls = [r for r in rows if r.get("parity_long_calls_s")]
    if not calls:
        return []
    rate = lambda t: largest * output_tokens / t  # noqa: E731
    first = [rate(r["parity_long_calls_s"][0]) / r["vllm"]["output_tok_s"] for r in calls]
    settle = [statistics.median(r["parity_long_calls_s"]) / r["parity_long_calls_s"][0] for r in calls]
    return ["  parity's single timed calls at the long length, output tok/s (first timed call; range): "
            + "; ".join(f"round {r['round'] + 1}: {rate(r['parity_long_calls_s'][0]):.0f} "
                        f"({rate(max(r['parity_long_calls_s'])):.0f}-{rate(min(r['parity_long_calls_s'])):.0f})"
                        for r in calls),
            f"  parity's first timed call (one call after one warm-up generate, as vLLM times) / vLLM's one call: "
            f"median {statistics.median(first):.3f} (rounds {', '.join(f'{x:.3f}' for x in first)}); parity's first "
            f"call / its median call: median {statistics.median(settle):.3f} (rounds "
            f"{', '.join(f'{x:.3f}' for x in settle)})"
            + (": parity's first timed call is slower than its median, so vLLM's one timed call after one warm-up "
               "generate can still hold the engine's warm-up" if statistics.median(settle) < 1 else "")]


def long_calls(doc: dict, batch: int) -> list[float]:
    """parity's timed ``generate`` calls at the long length for ``batch``, in the order timed."""
    for case in doc.get("cases") or ():
        if case["params"].get("batch") == batch:
            return list(case["samples"]["long"]["values_s"])
    return []


def tokenize_seconds(python: str, model: Path, batch: int, tokens: int) -> float:
    """Median seconds to tokenize ``batch`` text prompts of ``tokens`` tokens with the model's
    tokenizer: what vLLM's timed call spends on text prompts and parity's (token ids) does not."""
    code = (f"import time,statistics,numpy as np\nfrom transformers import AutoTokenizer\n"
            f"t=AutoTokenizer.from_pretrained({str(model)!r})\nrng=np.random.default_rng(0)\n"
            f"texts=[t.decode(rng.integers(2,t.vocab_size,size={tokens}).tolist()) for _ in range({batch})]\n"
            f"ts=[]\nfor _ in range(20):\n s=time.perf_counter(); [t(x)['input_ids'] for x in texts]; "
            f"ts.append(time.perf_counter()-s)\nprint(statistics.median(ts))\n")
    done = subprocess.run([python, "-c", code], capture_output=True, text=True)
    try:
        return float(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vllm-python", default=os.environ.get("PARITY_VLLM"),
                        help="Python of an environment with vllm-cpu and parity (default: $PARITY_VLLM)")
    parser.add_argument("--rounds", type=int, default=3)
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
    parser.add_argument("--calls-from", type=Path, default=None, metavar="FOLDER",
                        help="measure nothing: append to --out's report parity's single timed calls at the largest "
                             "batch, read from the run folder FOLDER that report's run kept (its parity-N.json)")
    args = parser.parse_args()
    if args.calls_from:
        return append_calls(args)
    if not args.vllm_python:
        parser.error("give --vllm-python or set PARITY_VLLM to the Python of an environment with vllm-cpu")
    folder = Path(tempfile.mkdtemp(prefix="decode-offline-vs-vllm-"))
    model = build_model(args.vllm_python, args.workdir or folder / "model", layers=args.layers, hidden=args.hidden)
    largest = max(int(b) for b in args.batches.split(","))
    args.vllm_warmups = largest if args.vllm_warmups is None else args.vllm_warmups
    args.tokenize_s = tokenize_seconds(args.vllm_python, model, largest, args.input_tokens)
    begin = time.monotonic()
    rows = []
    step_model = None
    for rnd in range(args.rounds):
        order = ("parity", "vllm") if rnd % 2 == 0 else ("vllm", "parity")
        row: dict = {"round": rnd, "order": order}
        for tool in order:
            row[f"load_before_{tool}"] = os.getloadavg()[0]
            if tool == "parity":
                doc = run_parity(args.vllm_python, model, folder, rnd, args)
                step_model = step_model or doc.get("step_model")
                row["parity"] = {p["batch"]: p for p in doc["engine"]["points"]}
                row["pareto"] = doc["engine"]["pareto"]
                row["at_target"] = doc["engine"]["at_target"]
                row["parity_engine"] = {"args": doc["engine"].get("engine_args"), "log": doc["engine_log"]}
                row["parity_long_calls_s"] = long_calls(doc, largest)
            else:
                row["vllm"] = run_vllm(args.vllm_python, model, folder, rnd, largest, args)
        rows.append(row)
        if args.out:  # each round's report, kept when a later one is cut
            write(args.out, report(rows, step_model, args, largest, model, time.monotonic() - begin), rows, step_model)
        p, v = row["parity"][largest], row["vllm"]
        print(f"[{time.monotonic() - begin:5.0f} s] round {rnd + 1}: parity batch {largest} whole call "
              f"{p['call_output_tok_s']:.0f} output tok/s (decode step {p['step_s'] * 1e3:.2f} ms, "
              f"{p['tokens_per_s_per_card']:.0f} tok/s); vllm bench throughput {v['output_tok_s']:.0f} output tok/s; "
              f"load {row['load_before_parity']:.2f} / {row['load_before_vllm']:.2f}", flush=True)
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
    whole = [r["parity"][largest]["call_output_tok_s"] / r["vllm"]["output_tok_s"] for r in rows]
    decode = [r["parity"][largest]["tokens_per_s_per_card"] / r["vllm"]["output_tok_s"] for r in rows]
    loads = [r[k] for r in rows for k in ("load_before_parity", "load_before_vllm") if k in r]
    lines = [command_line(),
             f"parity decode offline --engine vllm vs vllm bench throughput, vLLM 0.32.0 (vllm-cpu), CPU; "
             f"model {model.name} (random weights), {args.input_tokens} in, {args.output_tokens} out (forced), "
             f"{len(rows)} alternated rounds, {seconds:.0f} s; load average (1 min) before each command "
             f"{min(loads):.2f}-{max(loads):.2f}, {os.getloadavg()[0]:.2f} at the end, on {os.cpu_count()} cores", ""]
    batches = sorted(rows[0]["parity"])
    lines.append("engine sweep (median over rounds): batch, decode step ms, TPOT ms, tok/s per card (batch / step), "
                 "whole call output tok/s, step model TPOT ms")
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
    lines.append(f"batch {largest}, per round (order; load before parity / vLLM): parity whole call, vLLM output "
                 f"tok/s, ratio; parity decode-step tok/s, ratio")
    for r, w, d in zip(rows, whole, decode):
        p = r["parity"][largest]
        lines.append(f"  round {r['round'] + 1} ({' then '.join(r['order'])}; {r.get('load_before_parity', 0):.2f} / "
                     f"{r.get('load_before_vllm', 0):.2f}): {p['call_output_tok_s']:.0f}, "
                     f"{r['vllm']['output_tok_s']:.0f}, "
                     f"{w:.3f}; {p['tokens_per_s_per_card']:.0f}, {d:.3f}")
    lines.extend(calls_lines(rows, largest, args.output_tokens))
    ok = abs(statistics.median(whole) - 1) <= BAR
    lines.append(f"BAR (same definition, output tokens / elapsed of one generate of the batch): parity / vLLM median "
                 f"{statistics.median(whole):.3f} (rounds {', '.join(f'{x:.3f}' for x in whole)})  "
                 f"{'within 10%' if ok else 'OUTSIDE 10%'}")
    lines.append(f"beside it, not the bar: parity decode-step tok/s / vLLM whole call, median "
                 f"{statistics.median(decode):.3f} (prefill cancelled on parity's side only)")
    lines.append("")
    lines.extend(audit(rows, args))
    lines.append("")
    lines.append("definitions: vLLM's output tokens/s = num_prompts x output_len / elapsed of one llm.generate "
                 f"(prefill and tokenizing its text prompts included; one timed call, after --num-warmups "
                 f"{args.vllm_warmups} requests); parity's whole call = batch x long / median t(long) over its timed "
                 "generate calls (fresh token-id prompts each, after one warm-up call per length and batch); parity's "
                 "engine tokens/s = batch / decode step, the step being (t(long) - t(short)) / (long - short) of "
                 "median generate times (prefill and call overhead cancelled).")
    return "\n".join(lines) + "\n"


def command_line() -> str:
    """How this report was made, as one shell line (the Python of vLLM's environment by its variable)."""
    return "PARITY_VLLM=" + shlex.quote(os.environ.get("PARITY_VLLM", "")) + " python " + shlex.join(
        ["benchmarks/decode_offline_vs_vllm.py", *sys.argv[1:]])


AUDITED = ("dtype", "max_model_len", "max_num_seqs", "max_num_batched_tokens", "enable_prefix_caching",
           "enable_chunked_prefill", "enforce_eager", "compilation_mode", "seed", "bound_cores")


def audit(rows: list[dict], args: argparse.Namespace) -> list[str]:
    """Engine settings from each side's own engine log (first round), what differs, and the
    measured size of the one known difference of definition (tokenizing text prompts)."""
    ours = rows[0].get("parity_engine", {}).get("log", {})
    theirs = rows[0]["vllm"].get("engine", {})
    differ = [f"{k}: parity {ours.get(k)!r}, vLLM {theirs.get(k)!r}" for k in AUDITED if ours.get(k) != theirs.get(k)]
    missing = [k for k in AUDITED if ours.get(k) is None and theirs.get(k) is None]
    setting = ", ".join(f"{k}={ours.get(k)}" for k in AUDITED)
    lines = [f"audit (engine settings as each engine logged them): {setting}",
             "  " + ("DIFFER: " + "; ".join(differ) if differ else "every audited setting found is the same on both "
                    "sides") + (f"; not in either log: {', '.join(missing)}" if missing else ""),
             f"  non-default engine args: parity {ours.get('non_default_args')}, "
             f"vLLM {theirs.get('non_default_args')}"]
    elapsed = statistics.median(r["vllm"]["elapsed_s"] for r in rows)
    lines.append(f"  differs by definition: vLLM tokenizes its {rows[0]['vllm'].get('num_requests')} text prompts "
                 f"inside its timed call, {args.tokenize_s * 1e3:.2f} ms measured here "
                 f"({args.tokenize_s / elapsed:.1%} of its median elapsed {elapsed * 1e3:.0f} ms); "
                 "vLLM shows a progress bar (use_tqdm) in its timed "
                 "call, parity does not")
    return lines


if __name__ == "__main__":
    sys.exit(main())
