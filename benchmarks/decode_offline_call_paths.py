"""One vLLM engine, two timed call paths alternated: parity's (``generate`` of token-id prompts, one
``SamplingParams``, no progress bar) and ``vllm bench throughput``'s own ``_run_vllm_requests`` (its random
dataset's text prompts, one ``SamplingParams`` per request, ``use_tqdm``), batch 16, 128 in, 32 out. Both
the engine and the host are the same, so what differs is the call path alone; the first call of each
pair shows the engine's warm-up (no warm-up is run before it).

    /work/venvs/vllm/bin/python benchmarks/decode_offline_call_paths.py MODEL_FOLDER
"""
import os
import statistics
import sys
import time


def main():
    model = sys.argv[1]
    import numpy as np
    from vllm import LLM, SamplingParams
    from vllm.engine.arg_utils import EngineArgs
    from vllm.benchmarks.throughput import _run_vllm_requests, get_requests
    from vllm.tokenizers import get_tokenizer
    B, IN, OUT = 16, 128, 32
    llm = LLM.from_engine_args(EngineArgs(model=model, dtype="bfloat16", max_model_len=IN + OUT + 16, max_num_seqs=B,
                                          kv_cache_memory_bytes=256 * 2**20, seed=0))
    tok = get_tokenizer(model)
    def bench_requests(seed):
        from vllm.benchmarks.throughput import add_cli_args
        from vllm.utils.argparse_utils import FlexibleArgumentParser
        parser = FlexibleArgumentParser(); add_cli_args(parser)
        ns = parser.parse_args(["--model", model, "--dataset-name", "random", "--random-input-len", str(IN),
                                "--random-output-len", str(OUT), "--num-prompts", str(B), "--seed", str(seed)])
        return get_requests(ns, tok)
    rng = np.random.default_rng(0)
    sp = SamplingParams(n=1, temperature=1.0, top_p=1.0, ignore_eos=True, max_tokens=OUT)
    res = {"parity-path": [], "bench-path": []}
    for i in range(6):
        p = [{"prompt_token_ids": [int(t) for t in rng.integers(2, 380, size=IN)]} for _ in range(B)]
        s = time.perf_counter(); llm.generate(p, sp, use_tqdm=False); res["parity-path"].append(time.perf_counter() - s)
        reqs = bench_requests(100 + i)
        t, _ = _run_vllm_requests(llm, reqs, 1, False, do_profile=False, prequeue_requests=False, enable_lora=False)
        res["bench-path"].append(t)
        print(i, {k: round(v[-1] * 1e3, 1) for k, v in res.items()}, os.getloadavg()[0], flush=True)
    for k, v in res.items():
        print(k, "median output tok/s", round(B * OUT / statistics.median(v[1:])), flush=True)


if __name__ == "__main__":
    main()
