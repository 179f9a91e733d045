# pyrite's two entry points: `make demo` (set up, then run the demos) and `make test`
# (set up, then run the whole test suite). Both do all set-up on a fresh Debian machine.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
APT_PACKAGES := mesa-vulkan-drivers chromium
export XDG_RUNTIME_DIR ?= $(shell mktemp -d /tmp/pyrite-xdg-XXXXXX)

.PHONY: setup system-packages venv browser-deps web-bundle test demo serve bench lint typecheck clean

setup: system-packages venv browser-deps web-bundle

# Debian packages: Vulkan on the CPU (lavapipe) for the WebGPU backend, Chromium for the
# browser tests. Installed only when missing; needs root (CI and these machines run as root).
system-packages:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q $$missing; \
	fi

venv: $(VENV)/.installed

# The Pyodide distribution pinned in wasm/package.json (pages and the Pyodide tests load it).
browser-deps: wasm/node_modules/.installed

wasm/node_modules/.installed: wasm/package.json wasm/package-lock.json
	command -v npm >/dev/null || { echo "npm is needed: apt-get install nodejs npm"; exit 1; }
	cd wasm && npm ci --no-audit --no-fund
	touch $@

# The web bundle pages load (pyrite.js, the browser wheel, records, manifest); `pyrite serve`
# rebuilds it at start, so this only makes sure it builds here.
web-bundle: venv browser-deps
	PYRITE_MODELS=$(MODELS) $(BIN)/python -m pyrite.wasm build

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip setuptools wheel
	$(BIN)/pip install -q -e ".[dev,webgpu,server,data,distributed]"
	touch $@

# Set-up installs Vulkan on the CPU, Pyodide and Chromium, so a missing WebGPU adapter, Pyodide
# or browser fails the run instead of skipping tests.
test: setup
	PYRITE_DATA=$(DATA) PYRITE_MODELS=$(MODELS) \
	PYRITE_REQUIRE=$${PYRITE_REQUIRE-webgpu,pyodide,browser} $(BIN)/python -m pytest -q -p no:cacheprovider

# MNIST is read from $PYRITE_DATA/mnist and the sample photos from $PYRITE_DATA/samples;
# pretrained models pyrite does not ship from $PYRITE_MODELS (squeezenet1.1/). Beside a checkout
# with ../shared, those copies are used.
DATA := $(if $(PYRITE_DATA),$(PYRITE_DATA),$(if $(wildcard ../shared/data/mnist),$(abspath ../shared/data),))
MODELS := $(if $(PYRITE_MODELS),$(PYRITE_MODELS),$(if $(wildcard ../shared/models/squeezenet1.1),$(abspath ../shared/models),))

demo: setup
	$(BIN)/pyrite info backends
	$(BIN)/pyrite info ops
	$(BIN)/python examples/tour.py
	PYRITE_DATA=$(DATA) $(BIN)/pyrite infer mnist --index 42
	PYRITE_DATA=$(DATA) $(BIN)/pyrite infer mnist --all
	PYRITE_DATA=$(DATA) $(BIN)/pyrite infer mnist --all --device webgpu
	@# without the model, this says where to put it, and the demo goes on
	-PYRITE_MODELS=$(MODELS) $(BIN)/pyrite infer squeezenet $(wildcard $(DATA)/samples/*.jp*g)
	-PYRITE_MODELS=$(MODELS) $(BIN)/pyrite infer squeezenet $(wildcard $(DATA)/samples/bald_eagle.jp*g) --device webgpu
	$(MAKE) --no-print-directory serve

# The demo pages: prints each demo's URL, serves until Ctrl-C (PORT=0 picks a free port).
PORT ?= 8000
serve: setup
	PYRITE_DATA=$(DATA) PYRITE_MODELS=$(MODELS) $(BIN)/pyrite serve --host 127.0.0.1 --port $(PORT)

bench: setup
	$(BIN)/python benchmarks/ops_cpu.py --out benchmarks/results/ops_cpu.json

lint: venv
	$(BIN)/ruff check .

# mypy --strict over the package as installed: a symlink tree maps the folders to `pyrite.*`
# (the editable install's import hook is invisible to mypy).
typecheck: venv
	$(BIN)/pip install -q mypy
	rm -rf build/typecheck && mkdir -p build/typecheck/pyrite
	for f in core/*; do ln -s $(CURDIR)/$$f build/typecheck/pyrite/; done
	for d in webgpu shaders wasm server demos; do ln -s $(CURDIR)/$$d build/typecheck/pyrite/$$d; done
	cd build/typecheck && $(CURDIR)/$(BIN)/mypy --strict -p pyrite

clean:
	rm -rf $(VENV) build *.egg-info
