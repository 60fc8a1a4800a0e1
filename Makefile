# ipycompile: the two commands are `make demo` and `make test`.
# Both start from `venv`, which builds .venv from scratch on a fresh machine
# and does next to nothing when it is already up to date.

SHELL       := /bin/bash
PYTHON      ?= python3
VENV        := .venv
PY          := $(VENV)/bin/python
# Installed first, by exact version: an open `torch` requirement on a machine
# with no torch pulls the newest multi-GB CUDA build from the registry, while
# `pip install torch==2.13.0` takes the local CPU wheel (machine's pip config).
TORCH_PIN   ?= torch==2.13.0
# Rebuilt when pyproject.toml changes (or when .venv is deleted).
STAMP       := $(VENV)/.ipycompile-installed
BUILD       := build
TIMEOUT     ?= 1200
# Extra arguments for pytest, e.g. `make test PYTEST_ARGS="-k report -x"`.
PYTEST_ARGS ?=

.PHONY: all venv demo test pytest tutorials clean distclean

all: test

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || { echo "venv: creating $(VENV) with $(PYTHON)"; $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install --quiet --upgrade pip
	@if $(PY) -c 'import torch' >/dev/null 2>&1; then \
	  echo "venv: torch $$($(PY) -c 'import torch; print(torch.__version__)') already installed"; \
	else \
	  echo "venv: installing $(TORCH_PIN) (CPU wheel) before the package"; \
	  $(PY) -m pip install --quiet '$(TORCH_PIN)'; \
	fi
	$(PY) -m pip install --quiet -e '.[test]'
	@# A kernelspec inside the venv whose argv is the venv's python; the runner
	@# puts $(VENV)/share/jupyter first on the search path and checks the spec.
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (ipycompile .venv)" >/dev/null
	@$(PY) -c 'import sys, torch; print(f"venv: ready ({sys.executable}, torch {torch.__version__})")'
	@touch $@

demo: venv
	$(PY) tools/run_notebook.py tutorials/01_quickstart.ipynb --out $(BUILD) --timeout $(TIMEOUT)

test: venv
	@$(MAKE) --no-print-directory pytest
	@$(MAKE) --no-print-directory tutorials

# Any non-zero pytest exit fails the target, including 5 (no tests collected).
pytest: venv
	@rc=0; $(PY) -m pytest $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests; failing" >&2; fi; \
	exit $$rc

tutorials: venv
	$(PY) tools/run_notebook.py tutorials/*.ipynb --out $(BUILD)/tutorials --timeout $(TIMEOUT)

clean:
	rm -rf $(BUILD) .pytest_cache

distclean: clean
	rm -rf $(VENV) *.egg-info
