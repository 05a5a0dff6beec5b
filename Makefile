# The quick start: `make demo` steps through generation on the bundled model, `make test` runs the tests.
# Both set up .venv first (scripts/setup.sh: CPU-only torch unless an NVIDIA GPU is present).
VENV ?= .venv
PY := $(VENV)/bin/python
PROMPT ?= The three primary colours are

.PHONY: setup demo test test-avx2 test-bf16 gpu-check test-browser notebooks lab book slides pdf lint bench bench-serving clean-cache grade instructor

# The tests and the committed notebook outputs assume the CPU in float32: pin them, whatever the machine has
# (tl.load() reads TEACHLLM_DEVICE and TEACHLLM_DTYPE as its defaults).
PINNED := TEACHLLM_DEVICE=cpu TEACHLLM_DTYPE=float32

setup:
	@bash scripts/setup.sh

demo: setup
	$(PY) -m teachllm step "$(PROMPT)"

NBVAL := --nbval --nbval-current-env --nbval-sanitize-with notebooks/sanitize.cfg -p no:cacheprovider

# Each pytest run ends with its peak resident memory and its slowest files; the last two lines are the whole run's:
# the most memory all its processes held at once (tests, notebook kernels, sandboxes, Chromium; scripts/peak_memory.py)
# and its time. Each edition's notebooks run once: on a CPU with AVX-512 the Chinese edition's run under AVX2 dispatch
# (see test-avx2), so that one run sees both families of kernels; both editions run the same code and print the same
# numbers (tests/test_notebooks.py).
HAS_AVX512 ?= $(shell grep -qw avx512f /proc/cpuinfo 2>/dev/null && echo yes)
ZH_KERNELS = $(if $(HAS_AVX512),$(AVX2))

test: setup
	@$(PY) scripts/peak_memory.py --label "make test" -- bash -c '\
	$(VENV)/bin/ruff check conftest.py teachllm tests scripts notebooks/conftest.py notebooks/src notebooks/solutions notebooks/grading notebooks/quizzes book \
	&& $(PINNED) $(PY) -m pytest \
	&& $(PINNED) $(PY) -m pytest $(NBVAL) notebooks/*.ipynb \
	&& $(PINNED) $(ZH_KERNELS) $(PY) -m pytest $(NBVAL) notebooks/zh/*.ipynb'

# The tests whose results depend on the CPU's kernels (marked `floating`), again with PyTorch, oneDNN, MKL and fbgemm
# limited to their AVX2 kernels: what most laptops run (Intel's consumer chips since Alder Lake and AMD's before Zen 4
# have no AVX-512). On an AVX-512 machine this is the only way to see them (`make test` ran the Chinese notebooks so);
# CI runs both. On a CPU without AVX-512 these are the kernels `make test` ran already: it says so and stops.
AVX2 := ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 FBGEMM_ENABLE_INSTRUCTIONS=AVX2

test-avx2: setup
	@if [ -z "$(HAS_AVX512)" ]; then \
	    echo "test-avx2: this CPU has no AVX-512 (or no /proc/cpuinfo): its best kernels, which make test ran, are these"; \
	else \
	    $(PINNED) $(AVX2) $(PY) -m pytest -m floating; \
	fi

# Every chapter of both editions, cell by cell, in bfloat16 (scripts/run_chapters.py; outputs not compared, no cell
# may fail): a cell that holds only in float32, or mixes dtypes, fails here. The English edition runs on an emulated
# second device (tests/second_device.py), where a CPU tensor meeting a device one, a .numpy() on a model tensor or a
# CPU generator drawing for device logits fails as it does on a GPU. CI runs it; the committed outputs stay float32.
test-bf16: setup
	TEACHLLM_DTYPE=bfloat16 $(PY) scripts/run_chapters.py --lang en --device second --jobs 2 --threads 1
	TEACHLLM_DEVICE=cpu TEACHLLM_DTYPE=bfloat16 $(PY) scripts/run_chapters.py --lang zh --jobs 2 --threads 1

# On a machine with a CUDA GPU (scripts/gpu_check.sh): the engine, viz and serving tests in float32 and bfloat16,
# every chapter of both editions with a GPU user's defaults, and the GPU bench. Needs no .venv: with none it uses
# python3, with the wheels ../shared/gpu/pack.sh brings to a machine with no internet.
gpu-check:
	bash scripts/gpu_check.sh

# only the JupyterLab + Chromium test (needs Debian's chromium: apt-get install chromium); screenshots in artifacts/screenshots/
test-browser: setup
	$(PY) -m pytest tests/browser

# rebuild (execute) the chapter notebooks, English and Chinese, from notebooks/src; `make notebooks NB=06` for one.
# Each figure also gets a PNG, drawn by kaleido in Debian's chromium (TEACHLLM_STATIC_FIGURES=0 to skip)
notebooks: setup
	$(PINNED) $(PY) scripts/build_notebooks.py $(NB)

# JupyterLab opens on notebooks/: the English chapters, and the Chinese ones in notebooks/zh/
lab: setup
	$(VENV)/bin/jupyter lab notebooks/

# the textbook site: book/_build/html/index.html, the Chinese edition in book/_build/html/zh/. Renders the committed notebooks (never executes them),
# warnings are errors. Needs Graphviz (apt-get install graphviz) and, the first time, npm to fetch MathJax.
book: setup
	@command -v dot >/dev/null 2>&1 || { echo "make book: Graphviz's dot is missing (apt-get install graphviz)" >&2; exit 1; }
	@bash scripts/fetch_book_assets.sh
	$(PY) -m sphinx -b html -W --keep-going -q book book/_build/html
	$(PY) -m sphinx -b html -W --keep-going -q book/zh book/_build/html/zh
	@echo "book: open book/_build/html/index.html (中文版: book/_build/html/zh/index.html)"

# reveal.js decks from the committed notebooks: book/_build/slides/lecture.html (the lecture path in one deck), one per
# chapter beside it, the Chinese ones in book/_build/slides/zh/; speaker notes (key S) from the lecturer's guide
slides: setup
	@bash scripts/fetch_book_assets.sh
	$(PY) scripts/build_slides.py

# the whole book as one PDF per edition, to print or hand out: book/_build/pdf/teachllm.pdf and teachllm-zh.pdf
# (Sphinx's singlehtml page printed by Debian's chromium through the book's print CSS; scripts/build_pdf.py says why)
pdf: setup
	@command -v dot >/dev/null 2>&1 || { echo "make pdf: Graphviz's dot is missing (apt-get install graphviz)" >&2; exit 1; }
	@command -v chromium >/dev/null 2>&1 || { echo "make pdf: Debian's chromium is missing (apt-get install chromium)" >&2; exit 1; }
	@bash scripts/fetch_book_assets.sh
	$(PY) scripts/build_pdf.py

# grade a folder of submitted chapter notebooks, offline (scripts/grade.py): SUBMISSIONS/grades.csv and one feedback
# file per student in SUBMISSIONS/feedback/. A cell running longer than TIMEOUT seconds is interrupted.
TIMEOUT ?= 60

grade: setup
	@test -n "$(SUBMISSIONS)" || { echo "make grade: name the folder of submitted notebooks: make grade SUBMISSIONS=path/to/folder" >&2; exit 1; }
	$(PINNED) $(PY) scripts/grade.py "$(SUBMISSIONS)" --timeout $(TIMEOUT)

# the instructor edition, for course staff only: every graded chapter with its exercise cells solved, the full tests
# (hidden cases included) and the worked solutions, in book/_build/instructor/ (scripts/build_instructor.py)
instructor: setup
	$(PY) scripts/build_instructor.py

lint: setup
	$(VENV)/bin/ruff check conftest.py teachllm tests scripts notebooks/conftest.py notebooks/src notebooks/solutions notebooks/grading notebooks/quizzes book

bench: setup
	$(PY) -m teachllm.bench

bench-serving: setup
	$(PY) -m teachllm.bench.serving

clean-cache:
	$(PY) -c "import teachllm.checkpoints.convert as c; print(*(f'removed {p}' for p in c.clear_cache()), sep='\n')"
