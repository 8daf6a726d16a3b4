#!/usr/bin/env bash
# gpu_check.sh — the GPU measurements of the project in one run (`make gpu-check`), each step under
# its own time limit, most valuable first, partial results written as each step goes:
#   1. decode      whole decode steps of Llama-3-8B, dense vs 2:4 (algorithm 0, and the searched
#                  algorithm pinned), fp16 and bf16, batch 1/16/64: one CUDA graph per step,
#                  replays back to back; TPOT, tokens/s, kernel names, p   (limit 120 s)
#   2. alg-search  every cuSPARSELt alg_id the library accepts, through F.linear and the direct
#                  call, fp16 and bf16, kernel names and tiles, the search's ID  (limit 90 s)
#   3. counters    ncu: DRAM bytes, SM throughput, tensor pipe of cuBLAS, 2:4 alg 0 and best at
#                  M = 1, 16, 256, 2048; "not available" where ncu is missing (limit 60 s)
#   4. bench-8b    dense vs 2:4 GEMMs, Llama-3-8B shapes, M = 1 ... 16384, fp16 every timing mode,
#                  bf16 lone/graph                                          (limit 90 s)
#   5. gpu-tests   the GPU-marked tests of tests/toolkit                   (limit 45 s)
#   then file      the run folder as benchmarks/gpu-runs/<day>-<gpu>/, the results as
#                  src/twofour/data/ files (nothing replaced)
# Every timing records how it was timed (twofour.bench.gpu_timing.METHODS): no flush writes between
# timed calls, a device-side spin before each start event, many calls per event pair.
# More steps, not in the default list (--steps): bench-ref, bench-70b, kernels, traces, notebooks.
# DEADLINE=SECONDS (environment) caps all steps together: a later step gets what is left.
#
# On the device machine (the `run` tool; no network there), the integrator's one command is:
#   run(command="DEADLINE=390 bash scripts/gpu_check.sh --out /tmp/gpu-run --pack $OUT/gpu-run.tgz",
#       carry=[".whl"], timeout_s=480)
# after `bash scripts/gpu_wheels.sh` here (fills .whl/ with jsonschema and the notebook stack for
# the device's Python 3.12). $OUT brings back one file, gpu-run.tgz, rewritten after every step,
# so a run cut short still returns what it measured. Then, here:
#   mkdir -p /tmp/gpu-run && tar xzf gpu-run.tgz -C /tmp/gpu-run
#   .venv/bin/python scripts/gpu_measure.py file --out /tmp/gpu-run
# files it into this repository (the same `file` step ends a run on a GPU machine that holds the
# repository itself).
#
# Nothing is installed from the network. torch must already be installed (the GPU box's own CUDA
# build); the project is used from src/ through PYTHONPATH, not installed. Pure-Python packages
# the GPU box lacks travel as wheels in .whl/ (WHEELS_DIR), installed with
#     python3 -m pip install --no-index --no-deps --no-compile --target "$SITE" .whl/*.whl
# into a throw-away folder on PYTHONPATH; the system's packages stay untouched.
#
# Without a CUDA GPU the script says what it skipped and exits 3; with --rehearse it runs every
# step's code on the CPU instead (the bench on the simulated GPU of twofour.bench.simgpu, decode
# on the tiny model with a fake CUDA device, the algorithm sweep with dense stand-ins, counters
# through its "not available" path, the filing into a scratch folder) and exits 0 if all pass.
# No GPU number is produced by a rehearsal.
#
# Usage: scripts/gpu_check.sh [--out DIR] [--pack FILE] [--rehearse] [--python PY] [--steps "S1 S2 ..."]
#   --out DIR     output folder (default ./gpu-check-out)
#   --pack FILE   also pack the output folder into FILE (.tgz) after every step
#   --steps LIST  run only these steps (default: decode alg-search counters bench-8b gpu-tests)
#   --python PY   interpreter with torch (default: $PYTHON, else .venv/bin/python if it exists, else python3)
#   WHEELS_DIR    environment variable: where the wheels are (default .whl)

set -u
cd "$(dirname "$0")/.."
REPO=$(pwd)

OUT_DIR="$REPO/gpu-check-out"
REHEARSE=0
PACK=""
STEPS="decode alg-search counters bench-8b gpu-tests"
WHEELS_DIR="${WHEELS_DIR:-$REPO/.whl}"
PY="${PYTHON:-}"
while [ $# -gt 0 ]; do
    case "$1" in
        --out) OUT_DIR="$2"; shift 2 ;;
        --rehearse) REHEARSE=1; shift ;;
        --pack) PACK="$2"; shift 2 ;;
        --steps) STEPS="$2"; shift 2 ;;
        --python) PY="$2"; shift 2 ;;
        -h|--help) sed -n '2,52p' "$0"; exit 0 ;;
        *) echo "gpu_check.sh: unknown argument '$1' (valid: --out DIR, --pack FILE, --rehearse, --python PY, --steps LIST)" >&2; exit 2 ;;
    esac
done
if [ -z "$PY" ]; then
    if [ -x "$REPO/.venv/bin/python" ] && "$REPO/.venv/bin/python" -c "import torch" 2>/dev/null; then
        PY="$REPO/.venv/bin/python"
    else
        PY=python3
    fi
fi
mkdir -p "$OUT_DIR" || { echo "gpu_check.sh: cannot create --out folder '$OUT_DIR'" >&2; exit 2; }
OUT_DIR=$(cd "$OUT_DIR" && pwd)

log() { echo "[gpu-check $(date -u +%H:%M:%S)] $*"; }

# -- dependencies: wheels from .whl/, the project from src/ --------------------------------------
if ls "$WHEELS_DIR"/*.whl >/dev/null 2>&1; then
    SITE=$(mktemp -d /tmp/twofour-wheels.XXXXXX)
    log "installing $(ls "$WHEELS_DIR"/*.whl | wc -l) wheels from $WHEELS_DIR into $SITE (no network)"
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$WHEELS_DIR"/*.whl \
        || { echo "gpu_check.sh: installing $WHEELS_DIR/*.whl failed (see above); are they built for this Python?" >&2; exit 2; }
    export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$REPO/src${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg

missing=$(STEPS="$STEPS" "$PY" - <<'EOF'
import importlib.util, os
steps = os.environ["STEPS"].split()
need = ["torch", "numpy", "tqdm", "yaml", "jsonschema"]
if "gpu-tests" in steps or "notebooks" in steps:
    need += ["pytest", "hypothesis", "xdist", "safetensors", "matplotlib"]
if "notebooks" in steps:
    need += ["nbval", "nbformat", "nbclient", "jupyter_client", "ipykernel", "ipywidgets"]
print(" ".join(n for n in need if importlib.util.find_spec(n) is None))
EOF
)
if [ -n "$missing" ]; then
    echo "gpu_check.sh: missing Python packages: $missing" >&2
    echo "  bring them as wheels: run 'bash scripts/gpu_wheels.sh' where a package registry is reachable" >&2
    exit 2
fi

# One Python process reports the interpreter, twofour's environment, torch and the device, and
# whether CUDA is usable (each process that imports torch costs seconds of the device's time).
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit,temperature.gpu,memory.total --format=csv
    command -v nvidia-smi >/dev/null && nvidia-smi
    "$PY" - <<'EOF'
import sys

import torch

print("python:", sys.version.split()[0], sys.executable)
print("cuda_available:", int(torch.cuda.is_available()), flush=True)  # first: read even if what follows fails
cusparselt = torch.backends.cusparselt.version() if torch.backends.cusparselt.is_available() else None
print("torch", torch.__version__, "cuda", torch.version.cuda, "cusparselt", cusparselt)
p = torch.cuda.get_device_properties(0) if torch.cuda.is_available() else None
print(p, "L2", getattr(p, "L2_cache_size", None))
from twofour.device import environment

print(environment())
EOF
    "$PY" -m pip list 2>/dev/null | grep -i -E "^(torch|triton|numpy|nvidia-cusparselt|nvidia-cublas|nbval|pytest) "
} > "$OUT_DIR/environment.txt" 2>&1
HAS_CUDA=$(sed -n 's/^cuda_available: \([01]\)$/\1/p' "$OUT_DIR/environment.txt")
HAS_CUDA=${HAS_CUDA:-0}
cat "$OUT_DIR/environment.txt"

if [ "$HAS_CUDA" != "1" ]; then
    echo
    echo "No CUDA GPU visible to torch: the GPU measurements cannot run here. Skipped: $STEPS"
    if [ "$REHEARSE" != "1" ]; then
        echo "Nothing was measured. Run this on a CUDA machine, or pass --rehearse to exercise every step's code on the CPU."
        exit 3
    fi
    echo "--rehearse: running every step's code on the CPU (no GPU number is produced)."
fi

declare -A RC
DEADLINE=${DEADLINE:-0}  # seconds for all steps together (0: none); later steps get what is left
run_step() {  # name, limit in seconds, command...
    local name=$1 limit=$2; shift 2
    if [ "$DEADLINE" -gt 0 ]; then
        local left=$((DEADLINE - (SECONDS - T0)))
        if [ "$left" -lt 15 ]; then
            log "step $name skipped: only ${left}s of DEADLINE=${DEADLINE}s left"; RC[$name]=skipped; return
        fi
        [ "$left" -lt "$limit" ] && limit=$left
    fi
    log "step $name (limit ${limit}s): $*"
    local t0=$SECONDS
    timeout --signal=TERM --kill-after=10 "$limit" "$@" > "$OUT_DIR/$name.log" 2>&1
    RC[$name]=$?
    tail -n 15 "$OUT_DIR/$name.log"
    log "step $name finished rc=${RC[$name]} in $((SECONDS - t0))s"
}

pack() {
    [ -n "$PACK" ] && tar czf "$PACK" -C "$OUT_DIR" . 2>/dev/null
    return 0
}
MEASURE=("$PY" "$REPO/scripts/gpu_measure.py")
[ "$HAS_CUDA" = "1" ] || MEASURE+=(--rehearse)
# Notebook workers: each gets two threads, so four of them do not fight over the cores.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}

# the test files that hold GPU-marked tests (collecting all of tests/ would spend the step's limit)
mapfile -t GPU_TEST_FILES < <(grep -rl "mark.gpu" tests/toolkit --include="test_*.py" | sort)

T0=$SECONDS
pack
for step in $STEPS; do
    case "$step" in
        # each measuring step stops starting work 15 s before its limit (--budget), so its files are whole
        decode)     run_step decode 120 "${MEASURE[@]}" decode --out "$OUT_DIR" --budget 105 ;;
        alg-search) run_step alg-search 90 "${MEASURE[@]}" alg-search --out "$OUT_DIR" --budget 75 ;;
        counters)   run_step counters 60 "${MEASURE[@]}" counters --out "$OUT_DIR" --budget 55 ;;
        bench-8b)   run_step bench-8b 90 "${MEASURE[@]}" bench-8b --out "$OUT_DIR" --budget 75 ;;
        gpu-tests)  run_step gpu-tests 45 "$PY" -m pytest -n 0 -m gpu -q -p no:cacheprovider -rs "${GPU_TEST_FILES[@]}" ;;
        bench-ref)  run_step bench-ref 45 "${MEASURE[@]}" bench-ref --out "$OUT_DIR" ;;
        bench-70b)  run_step bench-70b 50 "${MEASURE[@]}" bench-70b --out "$OUT_DIR" --budget 40 ;;
        kernels)    run_step kernels 40 "${MEASURE[@]}" kernels --out "$OUT_DIR" ;;
        traces)     run_step traces 30 "${MEASURE[@]}" traces --out "$OUT_DIR" ;;
        notebooks)  run_step notebooks 140 "$PY" -m pytest -n 4 --dist loadfile --nbval-lax notebooks labs -q -p no:cacheprovider ;;
        *) echo "gpu_check.sh: unknown step '$step' (valid: decode alg-search counters bench-8b gpu-tests bench-ref bench-70b kernels traces notebooks)" >&2; exit 2 ;;
    esac
    pack
done
# File the run: into this repository on a GPU machine, into a scratch folder of the output when rehearsing.
if [ "$HAS_CUDA" = "1" ]; then
    "$PY" "$REPO/scripts/gpu_measure.py" file --out "$OUT_DIR" --repo "$REPO" > "$OUT_DIR/file.log" 2>&1
else
    "$PY" "$REPO/scripts/gpu_measure.py" file --out "$OUT_DIR" --rehearse --repo "$OUT_DIR/filed-rehearsal" > "$OUT_DIR/file.log" 2>&1
fi
RC[file]=$?
cat "$OUT_DIR/file.log"
pack
STEPS="$STEPS file"
echo
log "summary (total $((SECONDS - T0))s; logs and results in $OUT_DIR):"
status=0
for name in $STEPS; do
    echo "  $name: rc=${RC[$name]}"
    [ "${RC[$name]}" = "0" ] || status=1
done
[ "$HAS_CUDA" = "1" ] || echo "  (rehearsal on CPU: no GPU number was produced)"
exit $status
