#!/usr/bin/env bash
# One command that checks parity on one accelerator in about 10 minutes and keeps everything it
# saw: scripts/device_check.sh OUTDIR
#
# Steps (each under its own time limit; a step that fails or runs over is recorded and the
# script goes on, then exits 1 at the end):
#   env      versions, nvidia-smi/npu-smi queries (read-only), torch's view of the device
#   doctor   parity doctor --json: provenance and the readiness matrix
#   run      parity run on the device into OUTDIR/results.sqlite, summary JSON in run.json
#   export   the run as JSON and CSV (also when the run ran over its limit: partial results)
#   tests    the accelerator-marked tests on this device (junit XML)
#   trace    profile a small matmul loop with torch.profiler, then parity trace analyze it
#   decode   parity decode offline on Llama-3-8B and the DeepSeek-V3 config (2 layers per kind,
#            batches 1..256, context 4096; about 2 minutes on one H200) into decode-<config>.json
#            (with QUICK=1: the tiny and tiny-moe configs at context 256, seconds on a CPU)
#   kernels  optional (KERNELS=1, CUDA only): parity gemm with the tuned backends (compile, and
#            triton where it imports) against torch on the quick catalog, and parity kernels on
#            the model-sized shapes (DeepGEMM and FlashMLA kernels beside the torch references
#            where they import; each says why not otherwise)
#
# It never changes clocks, power limits, persistence or compute modes; it only reads them.
#
# Environment:
#   DEVICE=cuda          device to check (cuda:0, npu:0, xpu, mps, cpu)
#   QUICK=1              parity run --quick (a smoke run) instead of the full suites
#   SUITES=gemm,membw    restrict parity run to these suites (default: all registered)
#   RUN_BUDGET_S=300     time limit of the run step, seconds (a run that overruns keeps its
#                        finished cases; the export step still writes them)
#   SETS="a.b=1 c.d=2"   suite options for parity run (--set each); the default trims the GEMM
#                        per-shape budget so the full catalog fits the run step on a current GPU
#   TESTS=1, TRACE=1     set to 0 to skip the device tests or the trace self-check
#                        (both default to 0 when DEVICE=cpu)
#   DOCTOR=1             set to 0 to skip the doctor step
#   DECODE=1             set to 0 to skip the offline decode step (defaults to 0 when DEVICE=cpu)
#   KERNELS=0            set to 1 for the optional kernels step (skipped, logged, off CUDA)
#
# Dry check without an accelerator: DEVICE=cpu QUICK=1 scripts/device_check.sh /tmp/check
set -uo pipefail

if [[ $# -ne 1 || "$1" == -* ]]; then
    echo "usage: [DEVICE=cuda] [QUICK=1] [SUITES=a,b] scripts/device_check.sh OUTDIR" >&2
    exit 2
fi
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$1" || exit 2
OUT="$(cd "$1" && pwd)"
DEVICE="${DEVICE:-cuda}"
QUICK="${QUICK:-0}"
SUITES="${SUITES:-}"
RUN_BUDGET_S="${RUN_BUDGET_S:-300}"
if [[ "$DEVICE" == cpu ]]; then default_extra=0; else default_extra=1; fi
TESTS="${TESTS:-$default_extra}"
TRACE="${TRACE:-$default_extra}"
DOCTOR="${DOCTOR:-1}"
DECODE="${DECODE:-$default_extra}"
KERNELS="${KERNELS:-0}"
if [[ "$QUICK" == 1 ]]; then default_sets=""; else
    default_sets="gemm.warmup_s=0.01 gemm.budget_s=0.05 gemm.ceiling_budget_s=30"
fi
SETS="${SETS-$default_sets}"
PYTHON="${PYTHON:-python}"
DB="$OUT/results.sqlite"
LOG="$OUT/device_check.log"
STEPS="$OUT/steps.tsv"
export PARITY_DB="$DB"
export PYTHONUNBUFFERED=1

# Use the checkout's sources when parity is not installed (a bare copy of the tree).
if ! "$PYTHON" -c "import parity" 2>/dev/null; then
    export PYTHONPATH="$REPO/src${PYTHONPATH:+:$PYTHONPATH}"
fi

: > "$LOG"
printf 'step\tstatus\tseconds\tcommand\n' > "$STEPS"
failed=()

log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$LOG" >&2; }

# step NAME LIMIT_S COMMAND...: run with stdout/stderr in OUTDIR/NAME.{out,err}, record status.
step() {
    local name="$1" limit="$2"
    shift 2
    log "$name: $* (limit ${limit}s)"
    local started=$SECONDS status
    # bash -c so a step may be a function of this script (exported below); timeout signals the
    # whole group, so parity gets SIGINT first and prints how to resume.
    timeout --signal=INT --kill-after=20 "$limit" bash -c '"$@"' _ "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
    status=$?
    local took=$((SECONDS - started))
    printf '%s\t%s\t%s\t%s\n' "$name" "$status" "$took" "$*" >>"$STEPS"
    if [[ $status -eq 0 ]]; then
        log "$name: ok in ${took}s"
    else
        [[ $status -eq 124 ]] && log "$name: ran over its ${limit}s limit"
        log "$name: FAILED (status $status) in ${took}s; see $name.err"
        tail -n 5 "$OUT/$name.err" | sed 's/^/    /' | tee -a "$LOG" >&2
        failed+=("$name")
    fi
    return 0
}

env_report() {
    date -u +"time_utc %Y-%m-%dT%H:%M:%SZ"
    echo "host $(hostname)"
    echo "device $DEVICE quick $QUICK suites ${SUITES:-all}"
    git -C "$REPO" rev-parse HEAD 2>/dev/null | sed 's/^/git /'
    "$PYTHON" -m parity --version
    "$PYTHON" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'hip', torch.version.hip)"
    if command -v nvidia-smi >/dev/null; then
        nvidia-smi --query-gpu=name,driver_version,pci.bus_id,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu,persistence_mode,compute_mode --format=csv
        nvidia-smi -q >"$OUT/nvidia-smi-q.txt" 2>&1 || true
    fi
    if command -v npu-smi >/dev/null; then
        npu-smi info >"$OUT/npu-smi-info.txt" 2>&1 || true
    fi
    return 0
}

profile_selfcheck() {
    "$PYTHON" - "$DEVICE" "$OUT/trace" <<'EOF'
import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, schedule

device, folder = torch.device(sys.argv[1]), Path(sys.argv[2])
folder.mkdir(parents=True, exist_ok=True)
activities = [ProfilerActivity.CPU]
if device.type == "cuda":
    activities.append(ProfilerActivity.CUDA)
# bf16 on accelerators; fp32 and a smaller size on the CPU, where bf16 may lack fast kernels.
size, dtype = (4096, torch.bfloat16) if device.type != "cpu" else (512, torch.float32)
a = torch.randn(size, size, device=device, dtype=dtype)
b = torch.randn(size, size, device=device, dtype=dtype)
stream = torch.cuda.Stream() if device.type == "cuda" else None


def on_ready(prof):
    prof.export_chrome_trace(str(folder / "selfcheck.json"))


with profile(activities=activities, schedule=schedule(wait=1, warmup=1, active=4),
             on_trace_ready=on_ready) as prof:
    for _ in range(6):
        c = a @ b
        if stream is not None:
            with torch.cuda.stream(stream):
                d = (a + 1.0).relu_()  # vector work on a second stream, overlapping the GEMM
            torch.cuda.current_stream().wait_stream(stream)
        (c.float().sum()).item()
        prof.step()
print(folder / "selfcheck.json")
EOF
}

trace_selfcheck() {
    set -e
    local trace
    trace="$(profile_selfcheck)"
    "$PYTHON" -m parity trace analyze "$trace" --json "$OUT/trace-analyze.json"
}

export DEVICE OUT PYTHON REPO
export -f env_report profile_selfcheck trace_selfcheck

log "device check of $DEVICE into $OUT"
step env 120 env_report
[[ "$DOCTOR" == 1 ]] && step doctor 120 "$PYTHON" -m parity doctor --device "$DEVICE" --timeout 60 --json "$OUT/doctor.json"

run_args=(--device "$DEVICE" --db "$DB" --json "$OUT/run.json")
[[ "$QUICK" == 1 ]] && run_args+=(--quick)
[[ -n "$SUITES" ]] && run_args+=(--suite "$SUITES")
for item in $SETS; do run_args+=(--set "$item"); done
step run "$RUN_BUDGET_S" "$PYTHON" -m parity run "${run_args[@]}"

# Export whatever the store holds, so a run that ran over its limit still leaves its cases.
export_run() {
    "$PYTHON" -m parity runs export latest --db "$DB" --format json --output "$OUT/run-export.json" &&
        "$PYTHON" -m parity runs export latest --db "$DB" --format csv --output "$OUT/run-export.csv" &&
        "$PYTHON" -m parity runs list --db "$DB" --json "$OUT/runs.json"
}
export DB
export -f export_run
step export 60 export_run

# Offline decode: each config's batch sweep in the same store, its JSON beside the others.
decode_sweep() {
    local config="$1" context="$2" batches="$3"
    "$PYTHON" -m parity decode offline --config "$config" --device "$DEVICE" --db "$DB" --layers 2 \
        --context "$context" --batches "$batches" --tpot-ms 5,10,20,50 --json "$OUT/decode-$config.json"
}
export -f decode_sweep
if [[ "$DECODE" == 1 ]]; then
    if [[ "$QUICK" == 1 ]]; then
        step decode-tiny 120 decode_sweep tiny 256 1,2,4,8
        step decode-tiny-moe 120 decode_sweep tiny-moe 256 1,2,4,8
    else
        step decode-llama-3-8b 150 decode_sweep llama-3-8b 4096 1,8,32,64,128,256
        step decode-deepseek-v3 200 decode_sweep deepseek-v3 4096 1,8,32,64,128,256
    fi
fi

if [[ "$TESTS" == 1 ]]; then
    step tests 90 "$PYTHON" -m pytest -q -p no:cacheprovider -m "accelerator or cuda" \
        --junitxml "$OUT/tests.xml" "$REPO/tests"
fi
if [[ "$TRACE" == 1 ]]; then
    step trace 60 trace_selfcheck
fi

# The optional step: tuned GEMM backends and the kernel libraries, only where they can run.
kernels_check() {
    set -e
    local backends=torch,compile
    if "$PYTHON" -c "import triton" 2>/dev/null; then backends+=",triton"; fi
    if "$PYTHON" -c "import tilelang" 2>/dev/null; then backends+=",tilelang"; fi
    "$PYTHON" -m parity gemm --quick --device "$DEVICE" --backends "$backends" --ceiling-budget-s 10 \
        --db "$DB" --json "$OUT/gemm-tuned.json" >"$OUT/gemm-tuned.txt"
    "$PYTHON" -m parity kernels --device "$DEVICE" --db "$DB" --json "$OUT/kernels.json" >"$OUT/kernels.txt"
}
export -f kernels_check
if [[ "$KERNELS" == 1 ]]; then
    if [[ "$DEVICE" == cuda* ]] && "$PYTHON" -c "import torch, sys; sys.exit(not torch.cuda.is_available())"; then
        step kernels 300 kernels_check
    else
        log "kernels: skipped (needs a CUDA device; DEVICE=$DEVICE)"
    fi
fi

"$PYTHON" - "$STEPS" "$OUT/summary.json" "$DEVICE" "${#failed[@]}" <<'EOF'
import csv, json, sys
steps = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
for row in steps:
    row["status"], row["seconds"] = int(row["status"]), int(row["seconds"])
doc = {"schema_version": 1, "kind": "device-check", "device": sys.argv[3],
       "ok": int(sys.argv[4]) == 0, "steps": steps}
open(sys.argv[2], "w").write(json.dumps(doc, indent=2) + "\n")
EOF

if [[ ${#failed[@]} -gt 0 ]]; then
    log "FAILED: ${failed[*]} (logs in $OUT)"
    exit 1
fi
log "OK: every step passed (results in $OUT)"
