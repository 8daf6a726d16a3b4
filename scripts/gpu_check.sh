#!/usr/bin/env bash
# gpu_check.sh — every GPU code path of the project in one run (`make gpu-check`).
#
# On a machine with a CUDA GPU it runs, each step under its own time limit so the whole run
# stays under 8 minutes on an H200:
#   1. the GPU-marked tests            pytest -m gpu tests/                      (limit 120 s)
#   2. every notebook and lab          pytest --nbval-lax notebooks labs          (limit 240 s)
#      (their GPU branches run real sparse matmuls through to_sparse_semi_structured)
#   3. a short benchmark sweep         twofour bench: Llama-3-8B shapes x 8 M x fp16/bf16,
#                                      then Llama-3-70B shapes x 4 M x fp16      (limit 120 s)
# and writes to the output folder: one log per step, environment.txt, and the bench results
# files (bench-<gpu>-<time>.json, with provenance). Commit those JSON files under
# src/twofour/data/ to ship them with the package; never edit their numbers.
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
# exits 0 if those steps pass.
#
# Usage: scripts/gpu_check.sh [--out DIR] [--rehearse] [--python PY]
#   --out DIR     output folder (default: $OUT if set, else ./gpu-check-out)
#   --python PY   interpreter with torch (default: $PYTHON, else .venv/bin/python if it exists, else python3)

set -u
cd "$(dirname "$0")/.."
REPO=$(pwd)

OUT_DIR="${OUT:-$REPO/gpu-check-out}"
REHEARSE=0
PY="${PYTHON:-}"
while [ $# -gt 0 ]; do
    case "$1" in
        --out) OUT_DIR="$2"; shift 2 ;;
        --rehearse) REHEARSE=1; shift ;;
        --python) PY="$2"; shift 2 ;;
        -h|--help) sed -n '2,40p' "$0"; exit 0 ;;
        *) echo "gpu_check.sh: unknown argument '$1' (valid: --out DIR, --rehearse, --python PY)" >&2; exit 2 ;;
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
if ls "$REPO"/.whl/*.whl >/dev/null 2>&1; then
    SITE=$(mktemp -d /tmp/twofour-wheels.XXXXXX)
    log "installing $(ls "$REPO"/.whl/*.whl | wc -l) wheels from .whl/ into $SITE (no network)"
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$REPO"/.whl/*.whl \
        || { echo "gpu_check.sh: installing .whl/*.whl failed (see above); are they built for this Python?" >&2; exit 2; }
    export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$REPO/src${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg

missing=$("$PY" - <<'EOF'
import importlib.util
need = ["torch", "numpy", "matplotlib", "tqdm", "yaml", "safetensors", "pytest", "hypothesis",
        "nbval", "nbformat", "nbclient", "jupyter_client", "ipykernel", "ipywidgets"]
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
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
    "$PY" -c "from twofour.device import environment; print(environment())"
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
run_step() {  # name, limit in seconds, command...
    local name=$1 limit=$2; shift 2
    log "step $name (limit ${limit}s): $*"
    local t0=$SECONDS
    timeout --signal=TERM --kill-after=10 "$limit" "$@" > "$OUT_DIR/$name.log" 2>&1
    RC[$name]=$?
    tail -n 15 "$OUT_DIR/$name.log"
    log "step $name finished rc=${RC[$name]} in $((SECONDS - t0))s"
}

T0=$SECONDS
run_step gpu-tests 120 "$PY" -m pytest -m gpu tests -q -p no:cacheprovider -rs
run_step notebooks 240 "$PY" -m pytest --nbval-lax notebooks labs -q -p no:cacheprovider
if [ "$HAS_CUDA" = "1" ]; then
    run_step bench 120 bash -c "
        '$PY' -m twofour bench --shapes llama-3-8b --m 1 4 16 64 256 1024 4096 16384 --dtypes float16 bfloat16 \
            --repeats 10 --no-progress --out '$OUT_DIR/bench-llama-3-8b.json' &&
        '$PY' -m twofour bench --shapes llama-3-70b --m 1 16 256 4096 --dtypes float16 \
            --repeats 10 --no-progress --out '$OUT_DIR/bench-llama-3-70b.json'"
else
    run_step bench 120 "$PY" -m twofour bench --shapes 1024x1024 --m 1 16 256 --repeats 3 --warmup 1 \
        --no-progress --out "$OUT_DIR/bench-cpu-rehearsal.json"
fi

echo
log "summary (total $((SECONDS - T0))s; logs and results in $OUT_DIR):"
status=0
for name in gpu-tests notebooks bench; do
    echo "  $name: rc=${RC[$name]}"
    [ "${RC[$name]}" = "0" ] || status=1
done
[ "$HAS_CUDA" = "1" ] || echo "  (rehearsal on CPU: no GPU number was produced)"
exit $status
