# Two commands set up and run everything on a fresh machine:
#   make demo   the default environment (latest TensorFlow CPU + Keras 3 + tf_keras) and `compat-clone doctor`
#   make test   the test suite in every environment of the version matrix
PYTHON ?= python3
TOOLS := .tools
UV := $(TOOLS)/bin/uv
VENV := .venv

.PHONY: demo test test-default bench tools venv clean

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install -q --disable-pip-version-check "uv>=0.4"

tools: $(UV)

$(VENV)/.stamp: $(UV) pyproject.toml requirements/default.txt
	$(UV) venv -q --allow-existing -p $(PYTHON) $(VENV)
	VIRTUAL_ENV=$(VENV) $(UV) pip install -q -r requirements/default.txt -e .
	touch $@

venv: $(VENV)/.stamp

demo: $(VENV)/.stamp
	$(VENV)/bin/compat-clone doctor

test-default: $(VENV)/.stamp
	$(VENV)/bin/python -m pytest -n auto -q tests

test: test-default

clean:
	rm -rf $(VENV) $(TOOLS) .matrix
