# flowmon — every target runs from a fresh clone; scripts/install-deps.sh
# installs what a target needs beyond Go.
GO      ?= go
BIN     ?= bin/flowmon
PKGS    := ./...
FUZZTIME ?= 20s

.PHONY: all build test lint vet fmt-check bench fuzz-short fuzz-restore generate e2e eval bench-replay bench-live bench-stages pgo report-example clean

all: build test

# Without cgo: only then can the agent narrow every thread's capabilities
# once its sockets are open (a cgo build, -tags pcap, keeps them).
build:
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/flowmon

# The test command of README.md and .ci/run: gofmt, vet, every test but
# the long ones (FLOWMON_LONG=1 runs those, see internal/testutil/testgate), and a
# closing "N passed, N failed, N skipped" line. TESTFLAGS=-short leaves
# out the slower default tests too.
TESTFLAGS ?=
test:
	GO=$(GO) scripts/test.sh $(TESTFLAGS)

fmt-check:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

# gofmt, vet and golangci-lint (.golangci.yml) at the version
# scripts/install-deps.sh pins and installs ("install-deps.sh lint").
GOLANGCI_LINT ?= $(shell $(GO) env GOPATH)/bin/golangci-lint
GOLANGCI_LINT_VERSION := $(shell sed -n 's/^golangci_lint=v//p' scripts/install-deps.sh)
lint: fmt-check vet
	@v=$$($(GOLANGCI_LINT) version --short 2>/dev/null); if [ "$$v" != "$(GOLANGCI_LINT_VERSION)" ]; then \
	  echo "golangci-lint $(GOLANGCI_LINT_VERSION) is not at $(GOLANGCI_LINT) (found: $${v:-none}): run scripts/install-deps.sh lint"; exit 1; fi
	$(GOLANGCI_LINT) run $(PKGS)

# Benchmarks of every package; compare runs with benchstat. The 10M-key
# filters (hundreds of MB, minutes to build) are long: they run only with
# FLOWMON_LONG=1, e.g. FLOWMON_LONG=1 make bench BENCH=/10M.
BENCH ?= .
bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -count 5 $(PKGS) | tee bench.txt

# A short run of every fuzz target (go test -fuzz takes one target at a time).
fuzz-short:
	@set -e; for pkg in $$($(GO) list $(PKGS)); do \
	  dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
	  for t in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/^func //'); do \
	    echo "fuzz $$pkg $$t"; \
	    $(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

# The fuzz targets of the restore paths (a snapshot's file and the states
# it holds), each for RESTORE_FUZZTIME: what a start reads from a disk it
# does not trust. docs/results/fuzz-restore.md has their rates and the
# reasons for the two settings: each new input is minimized for at most
# RESTORE_MINIMIZE executions (the default, 60 s of minimizing a
# kilobyte seed, leaves a short run almost no time to fuzz), and the
# temporary directories (FuzzManifest opens and closes a filter in one
# each run, with its fsyncs) go to a tmpfs, /dev/shm, where there is one.
RESTORE_FUZZTIME ?= 60s
RESTORE_MINIMIZE ?= 100x
RESTORE_TMPDIR ?= $(shell test -d /dev/shm -a -w /dev/shm && echo /dev/shm)
RESTORE_FUZZ := ./acsm:FuzzRestoreState ./pipeline/flowcount:FuzzRestoreState ./pipeline/dedup:FuzzRestoreState \
	./pipeline/flowtable:FuzzFlowTableRestore ./filters/cascade:FuzzManifest ./internal/snapshot:FuzzReadChecksummed
fuzz-restore:
	@set -e; tmp="$(RESTORE_TMPDIR)"; export TMPDIR="$${tmp:-$${TMPDIR:-/tmp}}"; \
	for pt in $(RESTORE_FUZZ); do \
	  echo "fuzz $${pt%%:*} $${pt##*:}"; \
	  $(GO) test -run '^$$' -fuzz "^$${pt##*:}\$$" -fuzztime $(RESTORE_FUZZTIME) \
	    -fuzzminimizetime $(RESTORE_MINIMIZE) $${pt%%:*}; \
	done

# Regenerate generated code: the eBPF objects and their Go bindings in
# bpf/ (needs clang; scripts/install-deps.sh test installs it).
generate:
	$(GO) generate $(PKGS)

# End-to-end tests that need real services or the kernel: long tests
# (FLOWMON_LONG=1) named E2E.
e2e:
	@scripts/install-deps.sh e2e || echo "warning: could not install prometheus, alertmanager or nfdump, or build the OpenTelemetry Collector; the e2e tests will skip, saying so"
	FLOWMON_LONG=1 $(GO) test -count 1 -timeout 20m -run E2E $(PKGS)

# Reproduce the papers' tables under docs/results/.
eval: build
	scripts/eval.sh $(BIN)

# Replay throughput and memory against tcpdump, softflowd, nfpcapd and
# argus on the same generated traces, into docs/benchmarks.md.
bench-replay: build
	scripts/bench-replay.sh $(BIN)

# What each stage of a one-worker replay costs per packet on the eth
# trace, against the whole replay's CPU time: the "Per-stage costs"
# section of docs/benchmarks.md.
bench-stages: build
	GO=$(GO) scripts/bench-stages.sh $(BIN)

# Live capture on a veth pair (root): flowmon run with afpacket (1 and 2
# workers) and pcap beside tcpreplay's own rate; the table for
# docs/benchmarks.md.
bench-live: build
	$(GO) build -tags pcap -o bin/flowmon-pcap ./cmd/flowmon
	scripts/bench-live.sh $(BIN) bin/flowmon-pcap

# The README's example report of the bundled trace and its screenshot
# (headless Chromium).
report-example: build
	$(BIN) replay --no-progress --report docs/report-example.html pcaps/sample.pcap >/dev/null
	chromium --headless --disable-gpu --no-sandbox --hide-scrollbars --window-size=1280,1160 \
		--screenshot=docs/report-example.png "file://$(CURDIR)/docs/report-example.html"

# Refresh cmd/flowmon/default.pgo, the profile every build of flowmon is
# optimized with (profile-guided optimization), from replays of generated
# traces.
pgo:
	GO=$(GO) scripts/pgo.sh

clean:
	rm -rf bin bench.txt
