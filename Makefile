# fctlab: every target sets itself up (scripts/setup.sh) on a fresh machine.
.PHONY: setup demo docs docs-site check test test-rust test-python lint fmt fuzz bench screenshots wheel wheel-check clean

VENV := .venv
FCTLAB := $(VENV)/bin/fctlab

setup:
	@scripts/setup.sh

## Run the demo scenario, print its summary and write an HTML report with plots.
demo: setup
	$(FCTLAB) run scenarios/examples/demo.toml --out out/demo
	$(FCTLAB) report out/demo --out out/demo/report
	@echo "report: out/demo/report/report.html"

## Render the reproduction docs (docs/src/reproduce_*.md -> docs/) from the stored full runs
## in docs/results, and the validation matrix (docs/validation.md) from them and the recorded
## crosscheck suites (docs/results/validation); `make test` fails when a doc is not its
## rendering or a stored run is stale.
docs: setup
	$(FCTLAB) reproduce --docs
	$(FCTLAB) validation --docs

## The documentation site (mkdocs.yml) into out/site: fails on a broken link or anchor, on a
## public name without a docstring, and when docs/api.md is not what its docstrings give.
docs-site: setup
	$(VENV)/bin/python -m fctlab.apidoc --check
	$(VENV)/bin/mkdocs build --strict
	@echo "site: out/site/index.html"

## The edit loop, a few minutes at most: ruff's formatter and checks, the Python tests but the
## long ones (marked `long` in tests/python/conftest.py: the kernel testbed, the papers' quick
## runs, sweeps), the golden snapshots among them, and one quick crosscheck beside ns-2.35.
## Sets up only on a fresh machine: after a change to the Rust core, `make setup` rebuilds it.
check:
	@test -x $(VENV)/bin/python || $(MAKE) setup
	$(VENV)/bin/ruff format --check --quiet .
	$(VENV)/bin/ruff check --quiet .
	$(VENV)/bin/python -m pytest -q -m "not slow and not benchmark and not long"
	@if command -v ns >/dev/null 2>&1 || [ -n "$$FCTLAB_NS" ]; then \
		echo '$(FCTLAB) crosscheck scenarios/crosscheck/ns2/lossy_bottleneck.toml --against ns2 --seeds 2'; \
		$(FCTLAB) crosscheck scenarios/crosscheck/ns2/lossy_bottleneck.toml --against ns2 --out out/check/crosscheck --seeds 2 -q; \
	else echo 'check: no ns (ns-2.35): the quick crosscheck is left out'; fi

## Run every test: Rust (cargo) and Python (pytest), and a smoke run of the benchmarks.
test: setup test-rust test-python

test-rust:
	cargo test --profile test-ci --workspace --exclude fctlab-py

test-python:
	$(VENV)/bin/python -m pytest -q
	$(VENV)/bin/python -m pytest -q -m benchmark  # smoke run of `fctlab bench --quick` (not timed)

## The lint contract: rustfmt and clippy (no warnings) on the Rust side, ruff's formatter and
## checks on the Python side. `make fmt` applies both formatters.
lint: setup
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --quiet -- -D warnings
	$(VENV)/bin/ruff format --check --quiet .
	$(VENV)/bin/ruff check --quiet .

## Fuzzing: 10,000 mutated scenario files (the simulator's parser, validator and a 2 ms run of
## each that loads, its outputs checked against the ranges its inputs allow; values past every
## range among the mutations), 10,000 mutated sweep files, 10,000 `validate --set` commands of
## extreme values, and the socket frame and session decoders' property tests. `make test` runs
## a 1,000-case slice of the first two and 300 of the third. FCTLAB_FUZZ_SEED=N explores other cases.
fuzz: setup
	FCTLAB_FUZZ_CASES=10000 cargo test --release -p fctlab-sim --test robustness
	FCTLAB_FUZZ_CASES=10000 $(VENV)/bin/python -m pytest -q tests/python/test_fuzz.py
	cargo test --release -p fctlab-sched-tokio --lib

fmt: setup
	cargo fmt --all
	$(VENV)/bin/ruff format --quiet .

## Benchmarks: events/s, data packets delivered per wall-second, peak memory.
bench: setup
	$(FCTLAB) bench

## The report screenshots in docs/img, from the tutorial's runs in headless Chromium
## (apt-get install chromium).
screenshots: setup
	scripts/screenshots.sh

## A wheel in dist/ (release build, abi3: one wheel for Python 3.9 and newer), which installs
## with `pip install dist/fctlab-*.whl` where there is no Rust and no C compiler. Sets up only
## on a fresh machine; right after `make setup` the build is only the packing.
wheel:
	@test -x $(VENV)/bin/maturin || $(MAKE) setup
	rm -f dist/fctlab-*.whl
	$(VENV)/bin/maturin build --release --quiet --out dist --interpreter $(VENV)/bin/python

## The wheel as a user gets it: installed into a fresh virtual environment, with neither cargo
## nor a C compiler on PATH, it runs the demo scenario, and `import fctlab` loads no extra.
wheel-check: wheel
	scripts/check_wheel.sh

clean:
	rm -rf target out .venv dist
