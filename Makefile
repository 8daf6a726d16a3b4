# One virtual environment (.venv) holds everything the site, the notebooks and the tests need.
# `make serve` and `make test` are the two commands in the README; both set up first.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.setup-done
# This machine's pip resolves torch==2.13.0 to a small CPU build. The pin applies only when
# the venv has no torch yet, so a GPU box can pre-install its own CUDA torch into .venv.
TORCH_SPEC ?= torch==2.13.0
# pip installs only torch (it reads this machine's pip settings, which point at the CPU build on
# disk) and uv; uv installs the rest, downloading and unpacking in parallel: 8 s with an empty
# cache against pip's 38 s with a warm one (benchmarks/README.md). Neither compiles bytecode up
# front (compiling every file of torch, jupyter and the rest took about 70 s of CPU, most of it for
# modules nothing here imports): Python compiles what is imported on first use and keeps it, which
# needs bytecode writing on in the commands below (some shells turn it off for everything).
unexport PYTHONDONTWRITEBYTECODE
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: setup serve site test test-fast bench gpu-check clean lab mutate

setup: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@# Browser tests drive Debian's chromium: installed here when root (else instructions), while
	@# the packages install. rfc3987-syntax comes with jupyter-events' jsonschema[format-nongpl] and
	@# builds an Earley grammar on every `import jsonschema` (2.2 s of CPU in each process that reads
	@# a notebook or a twofour JSON file; python-jsonschema/jsonschema#1521). Nothing here checks
	@# the "iri" format it serves (jsonschema skips a format whose checker is missing), so it goes.
	@echo "Setting up $(VENV): PyTorch, then the site's, the notebooks' and the tests' packages"
	@scripts/install-chromium.sh & chromium=$$!; \
	$(BIN)/python -c "import torch" 2>/dev/null || torch="$(TORCH_SPEC)"; \
	$(BIN)/pip install --disable-pip-version-check --no-compile -q uv $$torch \
	&& $(BIN)/uv pip install --python $(BIN)/python -q -e ".[site,test,lab]" \
	&& { $(BIN)/uv pip uninstall --python $(BIN)/python -q rfc3987-syntax || true; }; \
	status=$$?; wait $$chromium && exit $$status
	@touch $(STAMP)

# Serves at once and never makes a request wait (scripts/serve.py): a static server over the newest
# complete build; builds run beside it, each into a fresh folder swapped in when done, and the
# notebooks missing from build/notebook-cache run in a process of their own, each page saying its
# outputs are being computed until a build has them (the open page reloads itself). On a fresh
# clone the first build is a quick one (site_hooks/quick.py: the API reference, the practice
# questions and the wheel follow in the full build that comes next, each page saying so).
# site_url is the server's address, so the site is at the root and instant navigation works.
serve: setup
	$(BIN)/python scripts/serve.py --host $(HOST) --port $(PORT)

# The deploy build: executes every notebook missing from the cache first; any error fails it.
site: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# JupyterLab from .venv (the `lab` extra), on the labs and the chapters, with a kernel that
# has twofour. LAB_ARGS passes options on, e.g. `make lab LAB_ARGS="--no-browser --port 8890"`.
# (Jupyter refuses to run as root without --allow-root; containers and CI often are root.)
LAB_ARGS ?=
LAB_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)
lab: setup
	$(BIN)/jupyter lab --ServerApp.root_dir="$(CURDIR)" --LabApp.default_url=/lab/tree/labs $(LAB_ROOT) $(LAB_ARGS)

test: setup
	@# 1. nbval runs every notebook and lab (two at a time, each notebook's cells in one worker).
	@#    The outputs it collects go to build/notebook-cache (see conftest.py), so
	@# 2. the one strict site build of the run reads them and runs no notebook again. Two
	@#    workers; the xdist controller builds the site in the background while the unit tests
	@#    run and serves it to both (tests/site/twofour_site_build.py); the site tests come last.
	@#    loadgroup keeps the tests that share one `make serve` on one worker.
	$(BIN)/python -m pytest -n 2 --dist loadfile notebooks labs
	$(BIN)/python -m pytest -n 2 --dist loadgroup tests

# The inner loop: every toolkit test (tests/toolkit/) not marked slow, and every module's
# doctests, under a minute on 2 cores. No notebooks, no site, no browser (tests/course/ and
# tests/site/); `make test` (what CI runs) is still the whole thing. A toolkit test that takes
# more than a few seconds is marked `slow` where it is defined, so this target needs no list.
test-fast: setup
	@# loadgroup: tests that share one costly module fixture (the kernel-model fit) carry an
	@# xdist_group mark and run on one worker; under the default distribution each worker made it.
	$(BIN)/python -m pytest -n 2 --dist loadgroup -m "not slow" tests/toolkit

# Mutation score of the toolkit modules the site's numbers come from: a report to run after
# changing one of them, not part of `make test`. A fixed sample of MUTATE_SAMPLE mutants per
# module (or "all"), one worker, stopped after MUTATE_BUDGET seconds; prints
# killed/survived/equivalent per module (scripts/mutate_report.py). Renaming a function changes
# which mutants a sample draws: compare scores of the same code, or run with MUTATE_SAMPLE=all.
# e.g. `make mutate MUTATE_MODULES=request,amdahl MUTATE_SAMPLE=all`
MUTATE_MODULES ?= structure,packing,roofline,amdahl,request,explain,practice
MUTATE_SAMPLE ?= 40
MUTATE_BUDGET ?= 1800
MUTATE_SEED ?= 0
mutate: setup
	@$(BIN)/python -c "import mutmut" 2>/dev/null || $(BIN)/pip install --disable-pip-version-check --no-compile -q -e ".[mutate]"
	$(BIN)/python scripts/mutate_report.py run --modules $(MUTATE_MODULES) --sample $(MUTATE_SAMPLE) --seed $(MUTATE_SEED) --budget $(MUTATE_BUDGET) $(if $(MUTATE_OUT),--out $(MUTATE_OUT),)

# Speed targets (wall-clock, so never asserted in `make test`): the toolkit core against a copy,
# then the site's (calculator update under 16 ms, `make serve`'s first page within 10 s and no
# request over 1 s while its notebooks run; builds
# the site into build/bench-site first).
bench: setup
	$(BIN)/python benchmarks/core.py
	$(BIN)/python benchmarks/checkpoint_speed.py
	$(BIN)/python benchmarks/site_speed.py

clean:
	rm -rf site build .pytest_cache .hypothesis mutants

# --- gpu-check ------------------------------------------------------------------------------
# Owned by the kernel-speed work (issues 6, 50). Runs the GPU measurements (whole decode steps,
# every cuSPARSELt algorithm, ncu counters, the GEMM sweep, the GPU-marked tests), each step under a
# time limit, then files the run (benchmarks/gpu-runs/, src/twofour/data/) on a CUDA machine without
# network access; see the header of scripts/gpu_check.sh for the wheels and the device-machine
# command. Deliberately not depending on `setup`, which would install from the network. On a CPU it
# exits non-zero after saying what it skipped; `make gpu-check GPU_CHECK_ARGS=--rehearse` runs every
# step's code on the CPU (simulated GPU, fake CUDA device, stand-ins; no GPU number).
GPU_CHECK_OUT ?= gpu-check-out
GPU_CHECK_ARGS ?=
gpu-check:
	bash scripts/gpu_check.sh --out $(GPU_CHECK_OUT) $(GPU_CHECK_ARGS)
