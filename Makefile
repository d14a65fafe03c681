# Two commands do all the set-up (see README.md):
#   make lab    create .venv, install everything, open JupyterLab on notebooks/
#   make test   create .venv if needed, install, run every test and every notebook
#   make test-portable   the notebooks again under PyTorch's portable CPU kernels (CI runs it too)
#   make test-busy  the notebooks beside 3 CPU-bound processes (BUSY=3): timing claims must hold on a busy laptop
#   make test-flaky the notebooks with timing asserts, 5 runs x (native, portable kernels) x (quiet, busy):
#                   each timing assert's smallest margin to its bound (FLAKY_K=5)
#   make slides     a reveal.js slide deck per notebook in build/slides/ (opens offline, from file://)
#   make handouts   an HTML hand-out per notebook in build/handouts/ (opens offline, from file://)
#   make test-browser    every notebook run in JupyterLab in Chromium, its explorers and RISE slides checked
#   make student    the student versions (nbgrader's release) in student/
#   make course     an nbgrader course directory in course/ (source -> release, one assignment per notebook)
#   make test-grading    the nbgrader round trip on every notebook, every adversarial submission
#                        (make test runs it on 07 and 10, with a few of the attacks)
#   make test-checks     every notebook's visible checks against the wrong answers in tests/courseware/grading/wrong_answers/
#                        (make test runs 04 and 09)
#   make test-mutants    every exercise's model answer mutated (courseware/measure/mutants.py): per exercise, mutants killed
#                        by a visible check, only by the hidden tests, surviving; MUTANT_NOTEBOOKS="02 04" picks notebooks
#   make test-fuzz       every public door of utils fuzzed from its contract, FUZZ_EXAMPLES=200 valid inputs a door
#                        and every slip of each, and the per-door table (make test runs 2 a door, seed 0)
#   make doctor     what this computer has (OS, Python, PyTorch build, device, JupyterLab, widgets, kernel,
#                   data and model checksums) and what to do about each problem
#   make test-standalone  each notebook alone in an empty folder, in a Colab-like environment, with the
#                   bootstrap cloning this checkout (COURSE_STANDALONE_NOTEBOOKS="04 06" for a subset)
#   make test-oldest     the whole suite at the lowest NumPy and Matplotlib of the ranges (.venv-oldest)
#   make test-oldest-torch   the same at the lowest PyTorch too (a CUDA build from PyPI: 7.3 GB installed; .venv-oldest-torch-*)
#   make test-beside     the package installed beside another PyTorch (BESIDE_TORCH=2.14.1), which stays as it was
#   make constraints     rewrite constraints.txt (the exact tested versions) from what .venv has
#
# Without make (Windows): python -m courseware install|lab|test|doctor does the same (README).
#   make site       the course website in build/site/ (Jupyter Book 1, from the committed notebooks; offline)
#                   make site REPO_URL=https://github.com/OWNER/NAME names the repository (launch buttons, links)
#   make test-site  the built website in Chromium: requests, links, figures, maths, toggles, search, axe-core
#   make book-pdf   the whole course as one PDF, build/course.pdf (Chromium prints the built website)
#   make hub-env    (as root) the class hub's users' environment in $(HUB_ENV), world-readable (classroom/README.md)
#   make hub-proxy  the hub's proxy, configurable-http-proxy, from npm into classroom/node_modules (npm ci)
#   make test-hub   (as root) a JupyterHub on 127.0.0.1 with real accounts: nbgitpuller, nbgrader's exchange,
#                   autograde, feedback, isolation (tests/hub; skipped, saying why, when not root)
#
# Options:  make test PYTHON=python3.12      the interpreter the venv is made from
#           make lab TORCH_INDEX=https://download.pytorch.org/whl/cu128   a CUDA build of torch
#           make test PYTEST_ARGS="-k attention"                         extra pytest arguments
#           make slides VARIANT=instructor   solutions kept (build/slides-instructor/; default: student, stubs)
#           make handouts NOTEBOOKS="04 06"  some notebooks only (numbers, names or paths)
#           make test-browser COURSE_BROWSER_NOTEBOOKS="04 06"             a subset of the notebooks
#           make test-browser COURSE_CHROMIUM=/path/to/chromium              another Chromium

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
KERNEL := attention-course
TORCH_VERSION := 2.13.0
TORCH_INDEX ?=
STAMP := $(VENV)/.installed

# Tests and CI read data from the shared mirror next to the repo when there is one,
# never from the network; elsewhere the loaders download and cache under data/.
COURSE_DATA_MIRROR ?= $(if $(wildcard ../shared/data/SOURCES.md),$(abspath ../shared/data),)
export COURSE_DATA_MIRROR
NBVAL_ARGS := --nbval-lax --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout 900
PYTEST_ARGS ?=
# Two notebooks at a time (each kernel uses one thread on a 2-core machine: utils.training.set_cpu_threads);
# --dist loadscope keeps every cell of a notebook in one worker, in order. JOBS=1 runs them one by one.
JOBS ?= 2
XDIST := $(if $(filter-out 1,$(JOBS)),-n $(JOBS) --dist loadscope,)
VARIANT ?= student
NOTEBOOKS ?=

.PHONY: test-flaky test-fuzz test-mutants test-busy sandbox-tools test-oldest test-oldest-torch test-beside install lab test test-portable test-browser test-utils test-notebooks student course test-grading test-checks slides handouts clean doctor test-standalone constraints site test-site book-pdf hub-env hub-proxy test-hub

install: $(STAMP)

# pyproject.toml states ranges; constraints.txt pins every package to the version the course is tested
# with. courseware/setup/install.py does the same install for `python -m courseware` (tests/courseware/setup/test_course.py checks
# that the two agree).
$(STAMP): pyproject.toml constraints.txt
	@start=$$(date +%s); \
	$(PYTHON) -m venv $(VENV) && \
	$(BIN)/python -m pip install --quiet -c constraints.txt $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) torch==$(TORCH_VERSION) && \
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[lab,test]' && \
	$(BIN)/python -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python 3 (attention-course)" >/dev/null && \
	touch $(STAMP) && \
	echo "install: done in $$(( $$(date +%s) - start )) s"

# (--allow-root only when run as root, e.g. in a container, where Jupyter refuses to start otherwise)
lab: $(STAMP)
	$(BIN)/jupyter lab notebooks/ $(if $(filter 0,$(shell id -u)),--allow-root)

test: $(STAMP)
	@start=$$(date +%s); \
	$(BIN)/python -m pytest $(XDIST) $(NBVAL_ARGS) tests notebooks $(PYTEST_ARGS); rc=$$?; \
	echo "test suite wall time: $$(( $$(date +%s) - start )) s"; exit $$rc

# The notebooks again on another floating-point path: PyTorch's portable CPU kernels instead of
# this CPU's vectorised ones. Every assert must hold and every compared output (cells marked
# NBVAL_CHECK_OUTPUT) must match there too. PORTABLE_THREADS=2 also changes the thread count
# (then one notebook at a time, as 2 kernels of 2 threads would oversubscribe 2 cores).
PORTABLE_THREADS ?= 1
PORTABLE_XDIST := $(if $(filter 1,$(PORTABLE_THREADS)),$(XDIST),)
test-portable: $(STAMP)
	@start=$$(date +%s); \
	ATEN_CPU_CAPABILITY=default COURSE_THREADS=$(PORTABLE_THREADS) $(BIN)/python -m pytest $(PORTABLE_XDIST) $(NBVAL_ARGS) notebooks $(PYTEST_ARGS); rc=$$?; \
	echo "portable notebook run (ATEN_CPU_CAPABILITY=default, $(PORTABLE_THREADS) thread(s) per notebook) wall time: $$(( $$(date +%s) - start )) s"; exit $$rc

# The notebooks on a busy computer: each run beside BUSY CPU-bound processes (default 3, on top of the
# two notebooks at a time), as on a laptop that is also doing other work. Every assert must hold
# there too: what a notebook asserts about time is what load cannot change. CI runs one notebook;
# BUSY_NOTEBOOKS="notebooks/02_rnn_seq2seq.ipynb notebooks/06_positional_encoding.ipynb" for some.
BUSY ?= 3
BUSY_NOTEBOOKS ?= notebooks
test-busy: $(STAMP)
	@start=$$(date +%s); pids=""; \
	for i in $$(seq $(BUSY)); do $(BIN)/python -c "while True: pass" & pids="$$pids $$!"; done; \
	trap 'kill $$pids 2>/dev/null' EXIT; \
	echo "test-busy: $(BUSY) CPU-bound processes beside the notebooks (pids$$pids)"; \
	$(BIN)/python -m pytest $(XDIST) $(NBVAL_ARGS) $(BUSY_NOTEBOOKS) $(PYTEST_ARGS); rc=$$?; \
	echo "busy notebook run (beside $(BUSY) CPU-bound processes) wall time: $$(( $$(date +%s) - start )) s"; exit $$rc

# The notebooks that still assert anything about time (found by courseware/measure/timing_asserts.py), run
# FLAKY_K times in each of four conditions: native and portable CPU kernels, quiet and beside BUSY CPU-bound
# processes. Prints each timing assert's smallest margin to its bound; fails if any run fails.
#   make test-flaky FLAKY_K=1 FLAKY_CONDITIONS=portable-busy FLAKY_NOTEBOOKS="10"
FLAKY_K ?= 5
FLAKY_CONDITIONS ?= native-quiet,native-busy,portable-quiet,portable-busy
FLAKY_NOTEBOOKS ?=
test-flaky: $(STAMP)
	$(BIN)/python -m courseware flaky --runs $(FLAKY_K) --conditions $(FLAKY_CONDITIONS) --jobs $(JOBS) \
		--busy $(BUSY) $(if $(FLAKY_NOTEBOOKS),--notebooks $(FLAKY_NOTEBOOKS))

# JupyterLab driven by Playwright in the system's Chromium (Debian: apt-get install chromium);
# skipped, saying so, without one. Not part of `make test` (pytest marker `browser`).
BROWSER_STAMP := $(VENV)/.installed-browser
$(BROWSER_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[lab,test,browser]' && touch $(BROWSER_STAMP)

test-browser: $(BROWSER_STAMP)
	@start=$$(date +%s); \
	$(BIN)/python -m pytest -m browser tests/browser $(PYTEST_ARGS); rc=$$?; \
	echo "browser test wall time: $$(( $$(date +%s) - start )) s"; exit $$rc

test-utils: $(STAMP)
	$(BIN)/python -m pytest tests $(PYTEST_ARGS)

test-notebooks: $(STAMP)
	$(BIN)/python -m pytest $(NBVAL_ARGS) notebooks $(PYTEST_ARGS)

# Student versions of the notebooks in student/: nbgrader's release (generate_assignment with
# nbgrader_config.py), solutions replaced by stubs, hidden tests removed, graded cells locked.
student: $(STAMP)
	$(BIN)/python -m courseware student notebooks student

# An nbgrader course directory (course/source -> course/release), one assignment per notebook;
# then run nbgrader from the repository root (INSTRUCTORS.md). NOTEBOOKS="04 06" for some only.
course: $(STAMP)
	$(BIN)/python -m courseware course course $(if $(NOTEBOOKS),--notebooks $(NOTEBOOKS))

# The round trip (release, submit stubs / solutions / known shortcuts / adversarial submissions from
# tests/courseware/grading/grading_attacks, autograde with the judge) on every notebook; `make test` runs it on a subset
# (tests/courseware/grading/test_nbgrader_roundtrip.py).
# Debian's bubblewrap: autograde runs each student's kernel in its sandbox (courseware/grading/sandbox.py). Installed
# with apt-get as root when missing; otherwise says what to do (the round trip then skips the sandbox's attacks).
sandbox-tools:
	@if command -v bwrap >/dev/null || [ -x /usr/bin/bwrap ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null && echo "sandbox-tools: installed bubblewrap"; \
	else echo "sandbox-tools: no bwrap; install Debian's bubblewrap (apt-get install bubblewrap) for autograde's sandbox"; fi

test-grading: $(STAMP) sandbox-tools
	@start=$$(date +%s); \
	COURSE_GRADING_NOTEBOOKS=all COURSE_GRADING_ATTACKS=all $(BIN)/python -m pytest -s tests/courseware/grading/test_nbgrader_roundtrip.py $(PYTEST_ARGS); rc=$$?; \
	echo "grading round trip wall time: $$(( $$(date +%s) - start )) s"; exit $$rc

test-checks: $(STAMP)
	@start=$$(date +%s); \
	COURSE_WRONG_NOTEBOOKS=all $(BIN)/python -m pytest -s tests/courseware/grading/test_wrong_answers.py $(PYTEST_ARGS); rc=$$?; \
	echo "wrong-answer run wall time: $$(( $$(date +%s) - start )) s"; exit $$rc

# Issue 50: the checks measured by mutation; one kernel at a time, niced (tests/courseware/measure/test_mutants.py runs two notebooks in make test).
MUTANT_NOTEBOOKS ?=
test-mutants: $(STAMP)
	@start=$$(date +%s); \
	MUTANT_NOTEBOOKS="$(MUTANT_NOTEBOOKS)" nice -n 10 $(BIN)/python -m courseware mutants --survivors; rc=$$?; \
	echo "mutation run wall time: $$(( $$(date +%s) - start )) s"; exit $$rc

# Issue 51: the doors fuzzed from their contracts (tests/utils/fuzz_doors.py) with a large budget; exits 1 on a valid
# input refused, a result that disagrees with its reference, or a slip that is silent or obscure.
FUZZ_EXAMPLES ?= 200
FUZZ_SEED ?= 0
test-fuzz: $(STAMP)
	@start=$$(date +%s); \
	$(BIN)/python tests/utils/fuzz_doors.py --examples $(FUZZ_EXAMPLES) --seed $(FUZZ_SEED) --verbose --strict; rc=$$?; \
	echo "fuzz wall time: $$(( $$(date +%s) - start )) s"; exit $$rc

# Lecture companion: slide decks and hand-outs built from the committed notebooks with nbconvert,
# solutions stubbed (VARIANT=student) or kept (VARIANT=instructor); see courseware/editions/build_decks.py.
slides: $(STAMP)
	$(BIN)/python -m courseware decks slides --variant $(VARIANT) $(NOTEBOOKS)

handouts: $(STAMP)
	$(BIN)/python -m courseware decks handouts --variant $(VARIANT) $(NOTEBOOKS)

# Works before the install too (then with $(PYTHON), and says what is missing); exit status 1 on a problem.
doctor:
	@$(if $(wildcard $(BIN)/python),$(BIN)/python,$(PYTHON)) -m courseware doctor

# One notebook at a time, each copied alone into an empty folder with the bootstrap cell applied, run
# under nbval in a fresh virtual environment holding only what Colab preinstalls (torch, numpy 2.0.2,
# matplotlib 3.10.0, ipykernel, ipywidgets 7.7.1, tqdm: tests/notebooks/test_standalone.py, built once in
# .venv-colab/); the bootstrap clones this checkout's committed HEAD (COURSE_REPO_URL=file://...).
COURSE_STANDALONE_NOTEBOOKS ?=
export COURSE_STANDALONE_NOTEBOOKS
test-standalone: $(STAMP)
	@start=$$(date +%s); \
	$(BIN)/python -m pytest -m standalone -s tests/notebooks/test_standalone.py $(PYTEST_ARGS); rc=$$?; \
	echo "standalone run wall time: $$(( $$(date +%s) - start )) s"; exit $$rc

# The whole suite (tests and notebooks, as `make test`) at the lowest NumPy and Matplotlib that
# pyproject.toml's ranges allow, in its own .venv-oldest (constraints.txt with those two lowered).
# OLDEST may lower torch too (torch==X.Y.Z): a version other than TORCH_VERSION then comes from PyPI's
# default index, whose Linux wheels are CUDA builds (several GB with their nvidia-* packages; they run on
# a CPU). `make test-oldest-torch` does that with the range's lower end.
OLDEST ?= numpy==2.0.2 matplotlib==3.10.0
OLDEST_VENV ?= .venv-oldest
OLDEST_TORCH = $(or $(patsubst torch==%,%,$(filter torch==%,$(OLDEST))),$(TORCH_VERSION))
test-oldest:
	@start=$$(date +%s); mkdir -p build && \
	grep -v -E '^($(subst $(eval) ,|,$(foreach p,$(OLDEST),$(firstword $(subst ==, ,$(p))))))==' constraints.txt > build/constraints-$(patsubst .venv-%,%,$(notdir $(OLDEST_VENV))).txt && \
	printf '%s\n' $(OLDEST) >> build/constraints-$(patsubst .venv-%,%,$(notdir $(OLDEST_VENV))).txt && \
	{ test -f $(OLDEST_VENV)/.installed || { $(PYTHON) -m venv $(OLDEST_VENV) && \
	  $(OLDEST_VENV)/bin/python -m pip install --quiet -c build/constraints-$(patsubst .venv-%,%,$(notdir $(OLDEST_VENV))).txt torch==$(OLDEST_TORCH) && \
	  $(OLDEST_VENV)/bin/python -m pip install --quiet -c build/constraints-$(patsubst .venv-%,%,$(notdir $(OLDEST_VENV))).txt -e '.[lab,test]' && \
	  $(OLDEST_VENV)/bin/python -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python 3 (attention-course)" >/dev/null && \
	  touch $(OLDEST_VENV)/.installed; }; } && \
	$(OLDEST_VENV)/bin/python -c "import torch, numpy, matplotlib; print('oldest: torch', torch.__version__, 'numpy', numpy.__version__, 'matplotlib', matplotlib.__version__)" && \
	PATH="$(abspath $(OLDEST_VENV))/bin:$$PATH" $(OLDEST_VENV)/bin/python -m pytest $(XDIST) $(NBVAL_ARGS) tests notebooks $(PYTEST_ARGS); rc=$$?; \
	echo "oldest-versions suite wall time: $$(( $$(date +%s) - start )) s"; exit $$rc

# The same at the lowest PyTorch of the range as well, in .venv-oldest-torch-<version> (5.8 GB installed
# for 2.6.0 with its nvidia-* packages, 7.3 GB for 2.9.1; not run by CI). torch 2.6.0 requires sympy 1.13.1,
# older than constraints.txt's. Others: e.g. OLDEST_TORCH_SET="torch==2.9.1 numpy==2.0.2 matplotlib==3.10.0".
OLDEST_TORCH_SET ?= torch==2.6.0 sympy==1.13.1 numpy==2.0.2 matplotlib==3.10.0
test-oldest-torch:
	@$(MAKE) --no-print-directory test-oldest OLDEST="$(OLDEST_TORCH_SET)" \
	  OLDEST_VENV=.venv-oldest-torch-$(patsubst torch==%,%,$(filter torch==%,$(OLDEST_TORCH_SET)))

# The package installed beside a PyTorch other than the tested one, which it must leave alone
# (tests/courseware/setup/test_install_beside.py): .venv-beside-$(BESIDE_TORCH) holds only that PyTorch (from PyPI's default
# index when not on this machine: a CUDA build, several GB); not run by CI.
BESIDE_TORCH ?= 2.14.1
BESIDE_VENV := .venv-beside-$(BESIDE_TORCH)
test-beside: $(STAMP)
	@start=$$(date +%s); \
	{ test -f $(BESIDE_VENV)/.installed || { $(PYTHON) -m venv $(BESIDE_VENV) && \
	  $(BESIDE_VENV)/bin/python -m pip install --quiet torch==$(BESIDE_TORCH) && touch $(BESIDE_VENV)/.installed; }; } && \
	COURSE_BESIDE_VENV=$(abspath $(BESIDE_VENV)) $(BIN)/python -m pytest -m beside -s -p no:cacheprovider tests/courseware/setup/test_install_beside.py $(PYTEST_ARGS); rc=$$?; \
	echo "install-beside test wall time: $$(( $$(date +%s) - start )) s"; exit $$rc

# The lock: every package in .venv at its installed version (torch without its build suffix, so a
# CUDA or CPU build of the same version satisfies it), the browser tests' and the class hub's included.
HUB_VENV_STAMP := $(VENV)/.installed-hub
$(HUB_VENV_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[lab,test,hub]' && touch $(HUB_VENV_STAMP)

constraints: $(BROWSER_STAMP) $(HUB_VENV_STAMP)
	@{ sed -n '/^#/p' constraints.txt; $(BIN)/python -m pip freeze --exclude-editable | sed -E 's/^(torch==[^+]*)\+.*/\1/'; } > constraints.txt.new && \
	mv constraints.txt.new constraints.txt && echo "constraints.txt: $$(grep -vc '^#' constraints.txt) packages"

# The course website (Jupyter Book 1, see courseware/editions/build_site.py) in its own environment, .venv-site,
# from pyproject.toml's `site` group only (no torch): build/site/index.html, served or opened as files.
SITE_VENV ?= .venv-site
SITE_BIN := $(SITE_VENV)/bin
SITE_STAMP := $(SITE_VENV)/.installed

$(SITE_STAMP): pyproject.toml
	@start=$$(date +%s); \
	$(PYTHON) -m venv $(SITE_VENV) && \
	$(PYTHON) -m courseware site-requirements | $(SITE_BIN)/python -m pip install --quiet -r /dev/stdin && \
	touch $(SITE_STAMP) && \
	echo "site environment ($(SITE_VENV)): done in $$(( $$(date +%s) - start )) s"

# REPO_URL: the published repository; unset, the site has no Colab launch or repository buttons (the log says so).
REPO_URL ?=
site: $(SITE_STAMP)
	REPO_URL="$(REPO_URL)" $(SITE_BIN)/python -m courseware site

# The built site served from 127.0.0.1 in the system's Chromium (COURSE_CHROMIUM overrides), nothing
# else reachable (pytest marker `site`; not part of `make test`). Builds the site first.
test-site: site
	@start=$$(date +%s); \
	$(SITE_BIN)/python -m pytest -m site -s -p no:cacheprovider tests/site $(PYTEST_ARGS); rc=$$?; \
	echo "site test wall time: $$(( $$(date +%s) - start )) s"; exit $$rc

# The whole course as one PDF (contents page, bookmarks, links inside the book): build/course.pdf, and a copy in
# build/site/course.pdf, which the site's landing page links (tests/site/test_book_pdf.py, under test-site, prints it too).
book-pdf: site
	$(SITE_BIN)/python -m courseware book-pdf

# The class hub (classroom/README.md). Its users' servers run the course's environment as themselves, so
# it is built from a Python every user can run (Debian's; the default python3 may live under /root) in a
# world-readable folder, with the tested versions, the package copied in (not editable: students need not
# read this checkout), the kernel registered and classroom/jupyter/ as its Jupyter configuration.
# classroom/Dockerfile runs the same install commands (tests/courseware/editions/test_classroom.py checks it).
HUB_ENV ?= /opt/attention-course/hub-env
HUB_PYTHON ?= /usr/bin/python3.11
HUB_STAMP := $(HUB_ENV)/.installed

$(HUB_STAMP): pyproject.toml constraints.txt $(wildcard utils/*.py) $(shell find courseware -name "*.py" -o -name "*.json" 2>/dev/null) $(shell find classroom/jupyter -type f 2>/dev/null)
	@start=$$(date +%s); \
	if [ "$$(id -u)" = 0 ] && ! runuser -u nobody -- $(HUB_PYTHON) -c pass 2>/dev/null; then \
		echo "hub-env: other users cannot run $(HUB_PYTHON): set HUB_PYTHON to a Python 3.10+ outside /root" \
		     "(Debian's /usr/bin/python3.11)"; exit 1; fi; \
	$(HUB_PYTHON) -m venv --clear $(HUB_ENV) && \
	$(HUB_ENV)/bin/python -m pip install --quiet -c constraints.txt $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) torch==$(TORCH_VERSION) && \
	$(HUB_ENV)/bin/python -m pip install --quiet -c constraints.txt '.[lab,test,hub]' && \
	$(HUB_ENV)/bin/python -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python 3 (attention-course)" >/dev/null && \
	cp -r classroom/jupyter/. $(HUB_ENV)/etc/jupyter/ && \
	chmod -R a+rX $(HUB_ENV) && \
	{ [ "$$(id -u)" != 0 ] || runuser -u nobody -- $(HUB_ENV)/bin/python -I -c "import utils, jupyterhub, nbgitpuller" || \
	  { echo "hub-env: other users cannot use $(HUB_ENV) (is a folder above it private?)"; exit 1; }; } && \
	touch $(HUB_STAMP) && \
	echo "hub environment ($(HUB_ENV)): done in $$(( $$(date +%s) - start )) s"

hub-env: $(HUB_STAMP)

classroom/node_modules/.package-lock.json: classroom/package.json classroom/package-lock.json
	cd classroom && npm ci --no-audit --no-fund --loglevel=error

hub-proxy: classroom/node_modules/.package-lock.json

# As root, on a machine whose accounts the test may add and remove (CI's is); skipped otherwise.
# (Not as root, the test only reports why it is skipped, from .venv.)
IS_ROOT := $(filter 0,$(shell id -u))
test-hub: hub-proxy sandbox-tools $(if $(IS_ROOT),$(HUB_STAMP),$(STAMP))
	@start=$$(date +%s); \
	COURSE_HUB_ENV=$(HUB_ENV) $(if $(IS_ROOT),$(HUB_ENV)/bin/python,$(BIN)/python) -m pytest -m hub -s -p no:cacheprovider tests/hub $(PYTEST_ARGS); rc=$$?; \
	echo "hub test wall time: $$(( $$(date +%s) - start )) s"; exit $$rc

clean:
	rm -rf $(VENV) $(SITE_VENV) .venv-colab student course build .pytest_cache classroom/node_modules
