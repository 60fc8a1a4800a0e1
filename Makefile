# ipycompile: the two commands are `make demo` and `make test`.
# Both start from `venv`, which builds .venv from scratch on a fresh machine
# and does next to nothing when it is already up to date.

SHELL       := /bin/bash
# The interpreter a new venv is built with. By default python3's own version as the system's
# distribution built it, where that one is complete (/usr/bin/python3.X with its venv module and its
# headers, which Inductor compiles against: Debian's python3.X-venv and python3.X-dev), else python3
# itself. Distributions build CPython with profile-guided and link-time optimisation; pyenv and
# other source builds leave both out by default (--enable-optimizations, --with-lto). The suite is
# CPU-bound: on Debian 12 with pyenv's 3.11.7 as python3, Debian's 3.11.2 runs it in 11% less time.
# `make venv PYTHON=python3` (or any interpreter) chooses outright; an existing venv keeps its own.
ifeq ($(origin PYTHON),undefined)
DISTRO_PYTHON := $(shell p=$$(python3 -c 'import sys; print("/usr/bin/python%d.%d" % sys.version_info[:2])' 2>/dev/null) && \
  [ -x "$$p" ] && "$$p" -c 'import ensurepip, os, sysconfig, venv; assert os.path.isfile(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' >/dev/null 2>&1 && echo "$$p")
PYTHON := $(or $(DISTRO_PYTHON),python3)
endif
# Installed first, by exact version: an open `torch` requirement on a machine
# with no torch pulls the newest build from the registry. Which build a pin gets
# depends on where pip looks: on PyPI, torch==2.13.0 for Linux is a CUDA build of
# several GB; PyTorch's CPU index serves the CPU-only build:
#   make venv TORCH_INDEX=https://download.pytorch.org/whl/cpu
# Another version: `make test TORCH_PIN=torch==2.14.1`. Empty TORCH_INDEX: pip's
# own configuration (pip.conf, PIP_INDEX_URL). `make venv` prints what it got.
DEFAULT_TORCH_PIN := torch==2.13.0
TORCH_PIN   ?= $(DEFAULT_TORCH_PIN)
TORCH_INDEX ?=
# One venv per pin, so that switching pins never reinstalls another's torch: .venv
# for the default pin, .venv-torch-2.14.1 for TORCH_PIN=torch==2.14.1 (the pin with
# each run of other characters as one '-'). VENV=dir overrides it.
ifeq ($(origin VENV),undefined)
VENV        := $(if $(filter $(DEFAULT_TORCH_PIN),$(TORCH_PIN)),.venv,.venv-$(shell printf '%s' '$(TORCH_PIN)' | sed -E 's/[^A-Za-z0-9.]+/-/g'))
endif
PY          := $(VENV)/bin/python
# "torch 2.13.0+cpu (CPU-only build)" / "torch 2.11.0+cu128 (CUDA 12.8 build)"
TORCH_BUILD  = $(PY) -c 'import torch; c = torch.version.cuda; print("torch", torch.__version__, f"(CUDA {c} build)" if c else "(CPU-only build)")'
# Rebuilt when pyproject.toml changes (or when the venv is deleted).
STAMP       := $(VENV)/.ipycompile-installed
BUILD       := build
TIMEOUT     ?= 1200
# Extra arguments for pytest, e.g. `make test PYTEST_ARGS="-k report -x"`.
PYTEST_ARGS ?=
# pytest-xdist workers for `make test`/`make pytest` (0: all in one process). Each module's
# tests stay in one worker (--dist loadscope: its servers and compiled models are shared);
# tests/conftest.py starts the longest modules first. With more than one worker each gets
# one OpenMP thread (unless OMP_NUM_THREADS is set), so workers do not oversubscribe the cores.
PYTEST_WORKERS ?= 2
PYTEST_PAR   = $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadscope --no-loadscope-reorder)
PYTEST_OMP   = $(if $(filter 0 1,$(PYTEST_WORKERS)),,OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1})
# The suite's ~200 Python processes (workers, kernels, CLI runs, torchrun ranks) keep the bytecode of
# this checkout's modules, and pytest its rewritten test modules, in __pycache__ (ignored by git):
# where PYTHONDONTWRITEBYTECODE is set (as on our development machines) each process compiled them again
# (pytest's collection: 14 to 8 s of CPU per worker).
PYTEST_PYC   = PYTHONDONTWRITEBYTECODE=
# The browser tests (tests/test_browser.py, marker `browser`) drive Debian's
# Chromium through Playwright; Playwright's own browser download is never used.
CHROMIUM    ?= /usr/bin/chromium
BROWSER_STAMP := $(VENV)/.ipycompile-browser
SUDO        := $(if $(filter 0,$(shell id -u)),,sudo)
# Whether `make test` / `make pytest` install Chromium and run the browser tests:
#   auto (default): when Chromium is at $(CHROMIUM), or make can install it (apt-get,
#        as root or through password-less sudo); else they skip, with the reason.
#   yes (the default under CI=...): install it; a browser test fails without it.
#   no:  never install; the browser tests skip.
# Deselecting them (PYTEST_ARGS='-m "not browser"') never installs anything.
BROWSER_TESTS ?= $(if $(CI),yes,auto)
CAN_INSTALL_BROWSER = $(shell command -v apt-get >/dev/null 2>&1 && { [ "$$(id -u)" = 0 ] || sudo -n true 2>/dev/null; } && echo yes)
BROWSER_DESELECTED := $(findstring not browser,$(PYTEST_ARGS))
NEED_BROWSER = $(if $(BROWSER_DESELECTED),,$(if $(filter yes,$(BROWSER_TESTS)),yes,$(if $(filter auto,$(BROWSER_TESTS)),$(if $(or $(wildcard $(CHROMIUM)),$(CAN_INSTALL_BROWSER)),yes))))

.PHONY: all venv browser browser-note demo test test-quick pytest tutorials clean distclean

all: test

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || { echo "venv: creating $(VENV) with $(PYTHON) ($$($(PYTHON) -c 'import sys; print(sys.version.split()[0])'))"; $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install --quiet --upgrade pip
	@if $(PY) -c 'import torch' >/dev/null 2>&1; then \
	  echo "venv: $$($(TORCH_BUILD)) already installed"; \
	else \
	  echo "venv: installing $(TORCH_PIN) from $(or $(TORCH_INDEX),pip's configured index) before the package"; \
	  $(PY) -m pip install --quiet $(if $(TORCH_INDEX),--index-url '$(TORCH_INDEX)') '$(TORCH_PIN)' && \
	  echo "venv: installed $$($(TORCH_BUILD))"; \
	fi
	$(PY) -m pip install --quiet -e '.[test]'
	@# A kernelspec inside the venv whose argv is the venv's python; the runner
	@# puts $(VENV)/share/jupyter first on the search path and checks the spec.
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (ipycompile $(VENV))" >/dev/null
	@echo "venv: ready ($(abspath $(PY)), $$($(TORCH_BUILD)))"
	@touch $@

# Chromium for the browser tests: installed with apt-get (as root, else through
# sudo) when $(CHROMIUM) is missing. `apt-get update` runs only when needed: when
# apt knows no chromium package (no package lists yet), or when the install fails
# (stale lists), then the install is tried once more. The stamp is touched once
# the browser starts, so later runs do nothing; a missing $(CHROMIUM) is
# installed again. No apt-get (not Debian/Ubuntu): a clear error.
browser: $(BROWSER_STAMP)

# Checks that the browser starts, and says which one it is.
CHECK_CHROMIUM = $(CHROMIUM) --headless --no-sandbox --disable-gpu --version >/dev/null 2>&1 || { \
	  echo "browser: $(CHROMIUM) is installed but does not start:" >&2; \
	  $(CHROMIUM) --headless --no-sandbox --disable-gpu --version >&2; exit 1; }; \
	echo "browser: $$($(CHROMIUM) --version 2>/dev/null) at $(CHROMIUM)"

$(BROWSER_STAMP): $(CHROMIUM) | $(STAMP)
	@$(CHECK_CHROMIUM)
	@touch $@

$(CHROMIUM):
	@command -v apt-get >/dev/null 2>&1 || { \
	  echo "browser: $(CHROMIUM) is missing and apt-get is not available to install it." >&2; \
	  echo "browser: install Chromium with your package manager and run again, or set CHROMIUM=/path/to/chromium." >&2; \
	  exit 1; }
	@if [ -n "$(SUDO)" ] && ! command -v sudo >/dev/null 2>&1; then \
	  echo "browser: $(CHROMIUM) is missing; installing it needs root, and sudo is not available." >&2; \
	  echo "browser: run 'apt-get install -y chromium fonts-liberation' as root, then run again." >&2; exit 1; fi
	@echo "browser: installing chromium (and fonts-liberation, so pages have text) with apt-get; one time, under a minute on a fresh machine"
	@log=$$(mktemp); trap 'rm -f "$$log"' EXIT; \
	apt_install() { $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	    chromium fonts-liberation >"$$log" 2>&1; }; \
	if ! apt-cache show chromium >/dev/null 2>&1; then \
	  echo "browser: apt knows no chromium package yet; running apt-get update"; \
	  $(SUDO) apt-get update -qq || exit 1; \
	  apt_install || { cat "$$log" >&2; exit 1; }; \
	elif ! apt_install; then \
	  echo "browser: apt-get install failed (stale package lists?); running apt-get update and trying again"; \
	  $(SUDO) apt-get update -qq && apt_install || { cat "$$log" >&2; exit 1; }; \
	fi
	@test -x $(CHROMIUM) || { echo "browser: apt-get installed chromium but $(CHROMIUM) is not there" >&2; exit 1; }
	@$(CHECK_CHROMIUM)

demo: venv
	$(PY) tools/run_notebook.py tutorials/01_quickstart.ipynb --out $(BUILD) --timeout $(TIMEOUT)

# The suite includes every tutorial, run end to end (tests/test_tutorials.py).
test: venv
	@$(MAKE) --no-print-directory pytest

# A quick subset, minutes where the suite takes twenty: capture, the doctor's corpus harness
# and a slice of its real-code corpus, the loop doctor, trace parsing, the files torch dumps, and
# the door tests where they exist. CI runs it on the newest torch besides the pinned one:
#   make test-quick TORCH_PIN=torch==2.14.1
# No browser and no notebook kernel: nothing to install besides the venv.
QUICK_TESTS ?= tests/test_capture.py tests/test_doctor_corpus.py tests/test_doctor_corpus_real.py \
	tests/test_doctor_loops.py tests/test_parse_records.py tests/test_dumped_files.py $(wildcard tests/test_doors.py)

test-quick: venv
	@echo "test-quick: $$($(TORCH_BUILD)) in $(VENV)"
	@rc=0; $(PYTEST_OMP) $(PY) -m pytest $(PYTEST_PAR) $(QUICK_TESTS) $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test-quick: pytest collected no tests; failing" >&2; fi; \
	exit $$rc

# Any non-zero pytest exit fails the target, including 5 (no tests collected).
# IPYCOMPILE_REQUIRE_BROWSER=1 (when make installed or found Chromium): a missing
# browser fails the browser tests instead of skipping them.
pytest: venv $(if $(NEED_BROWSER),browser,browser-note)
	@rc=0; IPYCOMPILE_CHROMIUM=$(CHROMIUM) IPYCOMPILE_REQUIRE_BROWSER=$(if $(NEED_BROWSER),1,) $(PYTEST_OMP) $(PYTEST_PYC) \
	  $(PY) -m pytest $(PYTEST_PAR) $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests; failing" >&2; fi; \
	exit $$rc

# Why the browser tests will not run (nothing installed).
browser-note:
	@$(if $(BROWSER_DESELECTED),true,echo "browser: the browser tests will be skipped: \
	$(if $(filter no,$(BROWSER_TESTS)),BROWSER_TESTS=no,no Chromium at $(CHROMIUM) and no root or password-less sudo to install it) \
	(install Debian's chromium and fonts-liberation, or set CHROMIUM=/path/to/chromium)")

tutorials: venv
	$(PY) tools/run_notebook.py tutorials/*.ipynb --out $(BUILD)/tutorials --timeout $(TIMEOUT) --cell-times

clean:
	rm -rf $(BUILD) .pytest_cache

# Every pin's venv (.venv, .venv-torch-*).
distclean: clean
	rm -rf .venv .venv-* $(VENV) *.egg-info
