#!/usr/bin/env bash
# gpu_check.sh — every GPU code path of the project in one run (`make gpu-check`).
#
# On a machine with a CUDA GPU it runs, each step under its own time limit (14.5 minutes at
# most in all; much less when every step runs normally), most valuable measurement first:
#   1. decode       whole steps of Llama-3-8B, dense vs 2:4: fp16/bf16 decode at batch 1 and 32
#                   eager / graph / graph + searched cuSPARSELt algorithm, TTFT at 512 and 4096,
#                   then torch.compile if time is left       scripts/gpu_measure.py (limit 300 s)
#   2. bench-8b     dense vs 2:4, Llama-3-8B shapes, M = 1 ... 16384: fp16 with timing modes
#                   eager / graph / stream / kernel, bf16 eager / graph
#                                                              scripts/gpu_measure.py (limit 180 s)
#   3. bench-ref    the shapes of published measurements       scripts/gpu_measure.py (limit 45 s)
#   4. kernels      probe + profiler kernel tables             scripts/gpu_measure.py (limit 40 s)
#   5. traces       Chrome traces of a decode step, dense/2:4  scripts/gpu_measure.py (limit 30 s)
#   6. gpu-tests    the GPU-marked tests                      pytest -m gpu tests      (limit 80 s)
#   7. notebooks    every notebook and lab with its GPU branch pytest -n 4 --nbval-lax (limit 140 s)
#   8. bench-70b    Llama-3-70B shapes, fp16                   scripts/gpu_measure.py (limit 50 s)
#   (alg-search, not in the default list: each cuSPARSELt algorithm ID the library accepts, tried
#    upward until it refuses one, at small M, each through F.linear and as a direct _cslt_sparse_mm,
#    with kernel names, and the ID the library's search returns; scripts/gpu_measure.py, limit 240 s;
#    run it with --steps alg-search)
# It writes to the output folder: one log per step, environment.txt, bench-*.json (with
# provenance), decode-*.json (whole steps), kernels.json and trace-*.json.gz. DEADLINE=SECONDS (environment) caps all
# steps together: a later step gets what is left. With --pack FILE the folder is also packed into
# one .tgz after every step, so a run cut short still returns what it measured. Commit the
# JSON files under src/twofour/data/ to ship them with the package; never edit their numbers.
#
# Nothing is installed from the network. torch must already be installed (the GPU box's own
# CUDA build); the project is used from src/ through PYTHONPATH, not installed. Pure-Python
# test dependencies the GPU box lacks (nbval, ipykernel, ipywidgets, nbclient, ... ) travel as
# wheels in .whl/ at the repository root:
#
#   On a machine with package-registry access, in the repository root:
#     bash scripts/gpu_wheels.sh            # fills .whl/ (ignored by git) for CPython 3.12
#   Then, on the GPU box (same repository root, .whl/ copied along):
#     make gpu-check                        # or: bash scripts/gpu_check.sh --out DIR
#   This script installs .whl/*.whl with
#     python3 -m pip install --no-index --no-deps --no-compile --target "$SITE" .whl/*.whl
#   into a throw-away folder and puts it on PYTHONPATH; the system's packages stay untouched.
#
# Without a CUDA GPU the script says what it skipped and exits 3; with --rehearse it instead
# runs every step on the CPU (GPU tests are collected and skipped, notebooks take their CPU
# branches, the sweep measures the CPU's dense float32 GEMM) to prove the plumbing, and
# exits 0 if those steps pass (decode runs its plan on the tiny model with a fake CUDA device).
#
# Usage: scripts/gpu_check.sh [--out DIR] [--pack FILE] [--rehearse] [--python PY] [--steps "S1 S2 ..."]
#   --out DIR     output folder (default: $OUT if set, else ./gpu-check-out)
#   --pack FILE   also pack the output folder into FILE (.tgz) after every step
#   --steps LIST  run only these steps (default: all eight, in the order above)
#   WHEELS_DIR    environment variable: where the wheels are (default .whl)
#   --python PY   interpreter with torch (default: $PYTHON, else .venv/bin/python if it exists, else python3)

set -u
cd "$(dirname "$0")/.."
REPO=$(pwd)

OUT_DIR="${OUT:-$REPO/gpu-check-out}"
REHEARSE=0
PACK=""
STEPS="decode bench-8b bench-ref kernels traces gpu-tests notebooks bench-70b"
WHEELS_DIR="${WHEELS_DIR:-$REPO/.whl}"
PY="${PYTHON:-}"
while [ $# -gt 0 ]; do
    case "$1" in
        --out) OUT_DIR="$2"; shift 2 ;;
        --rehearse) REHEARSE=1; shift ;;
        --pack) PACK="$2"; shift 2 ;;
        --steps) STEPS="$2"; shift 2 ;;
        --python) PY="$2"; shift 2 ;;
        -h|--help) sed -n '2,40p' "$0"; exit 0 ;;
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

missing=$("$PY" - <<'EOF'
import importlib.util
need = ["torch", "numpy", "matplotlib", "tqdm", "yaml", "safetensors", "pytest", "hypothesis",
        "nbval", "nbformat", "nbclient", "jupyter_client", "ipykernel", "ipywidgets", "xdist"]
print(" ".join(n for n in need if importlib.util.find_spec(n) is None))
EOF
)
if [ -n "$missing" ]; then
    echo "gpu_check.sh: missing Python packages: $missing" >&2
    echo "  bring them as wheels: run 'bash scripts/gpu_wheels.sh' where a package registry is reachable" >&2
    exit 2
fi

HAS_CUDA=$("$PY" -c "import torch; print(int(torch.cuda.is_available()))" 2>/dev/null || echo 0)
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "python: $("$PY" -c 'import sys; print(sys.version.split()[0], sys.executable)')"
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit,temperature.gpu,memory.total --format=csv
    command -v nvidia-smi >/dev/null && nvidia-smi
    "$PY" -c "from twofour.device import environment; print(environment())"
    "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cusparselt', torch.backends.cusparselt.version() if torch.backends.cusparselt.is_available() else None); p = torch.cuda.get_device_properties(0) if torch.cuda.is_available() else None; print(p, 'L2', getattr(p, 'L2_cache_size', None))"
    "$PY" -m pip list 2>/dev/null | grep -i -E "^(torch|triton|numpy|nvidia-cusparselt|nvidia-cublas|nbval|pytest) "
} > "$OUT_DIR/environment.txt" 2>&1
cat "$OUT_DIR/environment.txt"

if [ "$HAS_CUDA" != "1" ]; then
    echo
    echo "No CUDA GPU visible to torch: the GPU checks cannot run here. Skipped:"
    echo "  - pytest -m gpu (real sparse matmuls, CUDA-event timing, L2 flush)"
    echo "  - the GPU branches of every notebook and lab (they would take their CPU branches)"
    echo "  - the dense vs 2:4 benchmark sweep (a CPU can only time its own dense float32 GEMM)"
    if [ "$REHEARSE" != "1" ]; then
        echo "Nothing was measured. Run this on a CUDA machine, or pass --rehearse to exercise the CPU paths."
        exit 3
    fi
    echo "--rehearse: running the same steps on the CPU to check the plumbing (no GPU number is produced)."
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

T0=$SECONDS
pack
for step in $STEPS; do
    case "$step" in
        # decode: its own budget stops starting items 30 s before the limit, so the file is whole
        decode)    run_step decode 300 "${MEASURE[@]}" decode --out "$OUT_DIR" --budget 270 ;;
        bench-8b)  run_step bench-8b 180 "${MEASURE[@]}" bench-8b --out "$OUT_DIR" ;;
        bench-ref) run_step bench-ref 45 "${MEASURE[@]}" bench-ref --out "$OUT_DIR" ;;
        kernels)   run_step kernels 40 "${MEASURE[@]}" kernels --out "$OUT_DIR" ;;
        traces)    run_step traces 30 "${MEASURE[@]}" traces --out "$OUT_DIR" ;;
        gpu-tests) run_step gpu-tests 80 "$PY" -m pytest -m gpu tests --ignore=tests/site -q -p no:cacheprovider -rs ;;
        notebooks) run_step notebooks 140 "$PY" -m pytest -n 4 --dist loadfile --nbval-lax notebooks labs -q -p no:cacheprovider ;;
        bench-70b) run_step bench-70b 50 "${MEASURE[@]}" bench-70b --out "$OUT_DIR" ;;
        alg-search) run_step alg-search 240 "${MEASURE[@]}" alg-search --out "$OUT_DIR" ;;
        *) echo "gpu_check.sh: unknown step '$step' (valid: decode bench-8b bench-ref kernels traces gpu-tests notebooks bench-70b alg-search)" >&2; exit 2 ;;
    esac
    pack
done

echo
log "summary (total $((SECONDS - T0))s; logs and results in $OUT_DIR):"
status=0
for name in $STEPS; do
    echo "  $name: rc=${RC[$name]}"
    [ "${RC[$name]}" = "0" ] || status=1
done
[ "$HAS_CUDA" = "1" ] || echo "  (rehearsal on CPU: no GPU number was produced)"
exit $status
