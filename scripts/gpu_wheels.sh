#!/usr/bin/env bash
# gpu_wheels.sh — fill .whl/ with the wheels gpu_check.sh needs on a GPU box without network.
#
# Run where a package registry is reachable, in the repository root. It takes the versions
# installed in this checkout's .venv (so the GPU box tests with what CI tests with), walks the
# dependencies of the notebook-test stack (nbval, ipykernel, ipywidgets, nbclient, ...), leaves
# out what the GPU image already has (list below, from the device notes for the H200 image),
# and downloads one wheel per package for CPython 3.12 on manylinux x86-64 into .whl/.
#
# Usage: scripts/gpu_wheels.sh            (PYV=3.11 scripts/gpu_wheels.sh for another Python)

set -euo pipefail
cd "$(dirname "$0")/.."
PYV="${PYV:-3.12}"
VENV_PY=.venv/bin/python
[ -x "$VENV_PY" ] || { echo "gpu_wheels.sh: needs the project's .venv (run 'make setup' first)" >&2; exit 2; }

specs=$("$VENV_PY" - <<'EOF'
import importlib.metadata as md, re

roots = ["nbval", "ipykernel", "ipywidgets", "nbclient", "nbformat", "jupyter_client"]
# Already in the GPU image (device notes, package list of the 'cuda' image, 2026-11-17).
present = set("""absl-py accelerate attrs certifi charset-normalizer click cloudpickle colorama contourpy
coverage cycler filelock fonttools fsspec hypothesis idna imageio iniconfig jinja2 joblib kiwisolver
markdown markdown-it-py markupsafe matplotlib mdurl mpmath networkx numpy packaging pandas pillow pip
pluggy protobuf psutil pygments pyparsing pytest pytest-xdist execnet python-dateutil pyyaml regex
requests rich safetensors scipy setuptools six sympy tabulate torch tqdm triton typing-extensions
urllib3 wheel""".split())

def norm(n):
    return re.sub(r"[-_.]+", "-", n).lower()

seen, todo = {}, list(roots)
while todo:
    name = norm(todo.pop())
    if name in seen or name in present:
        continue
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        continue  # an optional dependency this venv does not have
    seen[name] = dist.version
    for req in dist.requires or []:
        if "extra ==" in req:
            continue
        marker_ok = True
        if ";" in req:
            req, marker = req.split(";", 1)
            if "python_version" in marker and "<" in marker and "3.1" in marker:
                marker_ok = False  # backports for old Pythons
            if "sys_platform == \"win32\"" in marker or "platform_system == \"Windows\"" in marker:
                marker_ok = False
        if marker_ok:
            todo.append(re.split(r"[ <>=!~\[(]", req.strip(), maxsplit=1)[0])
print(" ".join(f"{n}=={v}" for n, v in sorted(seen.items())))
EOF
)
echo "wheels to fetch: $specs"
mkdir -p .whl
for spec in $specs; do
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PYV" --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl "$spec" \
        || echo "gpu_wheels.sh: no wheel for $spec (add --platform manylinux_2_N_x86_64 for its N)" >&2
done
ls .whl
