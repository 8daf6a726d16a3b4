# One virtual environment (.venv) holds everything the site, the notebooks and the tests need.
# `make serve` and `make test` are the two commands in the README; both set up first.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.setup-done
# This machine's pip resolves torch==2.13.0 to a small CPU build. The pin applies only when
# the venv has no torch yet, so a GPU box can pre-install its own CUDA torch into .venv.
TORCH_SPEC ?= torch==2.13.0
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: setup serve site test test-fast bench gpu-check clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/pip install --disable-pip-version-check -q "$(TORCH_SPEC)"
	$(BIN)/pip install --disable-pip-version-check -q -e ".[site,test]"
	@# Browser tests drive Debian's chromium: installed here when root, else instructions.
	@scripts/install-chromium.sh
	@touch $(STAMP)

# Notebooks run on first build and are cached in build/notebook-cache (keyed by notebook +
# src/twofour), so later builds and live reloads only re-run what changed.
# site_url is pointed at the dev server so the site is at the root and instant navigation works.
serve: setup
	NO_MKDOCS_2_WARNING=1 TWOFOUR_SITE_URL=http://$(HOST):$(PORT)/ $(BIN)/mkdocs serve --dev-addr $(HOST):$(PORT)

site: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

test: setup
	@# 1. nbval runs every notebook and lab (two at a time, each notebook's cells in one worker).
	@#    The outputs it collects go to build/notebook-cache (see conftest.py), so
	@# 2. the strict site build made by the site tests reads them and runs no notebook again.
	$(BIN)/python -m pytest -n 2 --dist loadfile notebooks labs
	$(BIN)/python -m pytest tests

bench: setup
	$(BIN)/python benchmarks/core.py

clean:
	rm -rf site build .pytest_cache .hypothesis

# --- gpu-check ------------------------------------------------------------------------------
# Owned by the kernel-speed work (issue 6). Runs every GPU path (GPU-marked tests, notebooks
# and labs under nbval, a short bench sweep) on a CUDA machine without network access; see
# the header of scripts/gpu_check.sh for the wheel procedure. Deliberately not depending on
# `setup`, which would install from the network. On a CPU it exits non-zero after saying what
# it skipped; `make gpu-check GPU_CHECK_ARGS=--rehearse` runs the same steps on the CPU.
GPU_CHECK_OUT ?= gpu-check-out
GPU_CHECK_ARGS ?=
gpu-check:
	bash scripts/gpu_check.sh --out $(GPU_CHECK_OUT) $(GPU_CHECK_ARGS)
