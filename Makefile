# steadywatch — developer entry points (`make help` lists them). The README's two commands are `make demo` and `make test`.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
GO ?= go
STATICCHECK_VERSION ?= v0.8.2
# Extra flags for the e2e suites, e.g. E2E_FLAGS='-ginkgo.label-filter=legacy -ginkgo.v'
E2E_FLAGS ?=
E2E_TIMEOUT ?= 35m
SERVER ?= current

# Every Go module in the repository: the SDK (with the kubectl plugin, cmd/kubectl-steadywatch), the e2e
# harness and suites, the examples,
# the developer tools of hack/.
MODULES := . e2e examples hack
ACTIONLINT_VERSION ?= v1.7.12
CHAOS_DURATION ?= 75s

.PHONY: all test lint unit e2e build-apiservers devcluster demo fuzz chaos matrix bench clean-cache

all: test

## help: this list: every target a user runs, from the "## target:" comment above it.
.PHONY: help
help:
	@awk 'function flush() { if (name == "") return; printf "  %-17s", name; n = split(text, w, " "); col = 0; \
	    for (i = 1; i <= n; i++) { if (col > 0 && col + length(w[i]) > 80) { printf "\n  %-17s", ""; col = 0 } \
	      printf " %s", w[i]; col += length(w[i]) + 1 } printf "\n"; name = "" } \
	  /^## [a-z][a-z0-9-]*: / { flush(); name = substr($$2, 1, length($$2) - 1); text = substr($$0, length($$2) + 5); next } \
	  /^## / && name != "" { text = text " " substr($$0, 4); next } \
	  { flush() } END { flush() }' $(firstword $(MAKEFILE_LIST))

## test: everything CI runs: lint, unit tests (race), real-apiserver builds, e2e suites.
test: lint unit build-apiservers e2e

## lint: gofmt, tidy go.mod files, go vet and staticcheck on every module; actionlint on the workflows;
## the SDK's API size against its ratchet (hack/apicount.sh, limits in hack/api-budget.txt: fails when
## the exported names or option fields grow); the SDK's API against the last release (hack/apidiff.sh:
## fails on incompatible changes).
lint:
	@echo "==> gofmt"; out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@for m in $(MODULES); do echo "==> go mod tidy -diff ($$m)"; (cd $$m && $(GO) mod tidy -diff); done
	@for m in $(MODULES); do echo "==> go vet ($$m)"; (cd $$m && $(GO) vet ./...); done
	@for m in $(MODULES); do echo "==> staticcheck ($$m)"; (cd $$m && $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...); done
	@echo "==> actionlint"; $(GO) run github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION) .github/workflows/*.yaml
	@echo "==> apicount"; GO=$(GO) hack/apicount.sh
	@echo "==> apidiff"; GO=$(GO) hack/apidiff.sh

## unit: unit tests with the race detector (SDK, examples, plugin, hack's tools; e2e's pure packages run in `e2e`).
unit:
	@for m in . examples hack; do echo "==> unit ($$m)"; (cd $$m && $(GO) test -race -count=1 ./...); done

## build-apiservers: build (or reuse from e2e/.cache) kube-apiserver current and legacy, with progress.
build-apiservers:
	cd e2e && $(GO) run ./cmd/build-apiservers

## e2e: the Ginkgo suites against real kube-apiservers started by the harness, one package at a time,
## with a line as each starts and ends (E2E_PKGS picks packages, e.g. E2E_PKGS=./plugin; E2E_TIMEOUT
## bounds each package; E2E_FLAGS' -ginkgo.* flags go only to packages with a Ginkgo suite). Exits
## non-zero if any package failed, after running them all.
E2E_PKGS ?= ./...
e2e:
	@cd e2e && pkgs=$$($(GO) list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}:{{range .TestImports}}{{if eq . "github.com/onsi/ginkgo/v2"}}ginkgo{{end}}{{end}}{{range .XTestImports}}{{if eq . "github.com/onsi/ginkgo/v2"}}ginkgo{{end}}{{end}}{{end}}' $(E2E_PKGS)); \
	  all=( $(E2E_FLAGS) ); plain=(); for f in "$${all[@]}"; do case "$$f" in -ginkgo.*|--ginkgo.*) ;; *) plain+=("$$f");; esac; done; \
	  n=$$(echo "$$pkgs" | grep -c . || true); i=0; failed=""; t0=$$(date +%s); \
	  for entry in $$pkgs; do i=$$((i+1)); pkg=$${entry%%:*}; short=$${pkg#github.com/steadywatch/steadywatch/e2e/}; s=$$(date +%s); \
	    if [ -n "$${entry#*:}" ]; then flags=("$${all[@]}"); else flags=("$${plain[@]}"); fi; \
	    echo "==> e2e [$$i/$$n] $$short: started $$(date +%H:%M:%S)"; \
	    if $(GO) test -count=1 -timeout $(E2E_TIMEOUT) $$pkg "$${flags[@]}"; then res=ok; else res=FAILED; failed="$$failed $$short"; fi; \
	    echo "==> e2e [$$i/$$n] $$short: $$res at $$(date +%H:%M:%S) after $$(( $$(date +%s) - s ))s"; \
	  done; \
	  echo "==> e2e: $$n package(s) in $$(( $$(date +%s) - t0 ))s"; \
	  if [ -n "$$failed" ]; then echo "==> e2e FAILED:$$failed"; exit 1; fi

## e2e-slow: the specs labelled "slow" (skipped by `make e2e`): 50k-object streaming lists through a
## 10s mid-stream pause and with bookmarks dropped (LARGELIST_OBJECTS, LARGELIST_PAUSE change the size).
LARGELIST_OBJECTS ?= 50000
LARGELIST_PAUSE ?= 10s
.PHONY: e2e-slow
e2e-slow:
	cd e2e && $(GO) test -count=1 -timeout 40m ./largelist -ginkgo.label-filter=slow -ginkgo.v \
	  -largelist.objects=$(LARGELIST_OBJECTS) -largelist.pause=$(LARGELIST_PAUSE) $(E2E_FLAGS)

## devcluster: start a real local apiserver (SERVER=current|previous|legacy|floor|v1.Y.Z) and print KUBECONFIG=...
devcluster:
	cd e2e && $(GO) run ./cmd/devcluster --server $(SERVER)

## demo: the README's first command: stock client-go vs steadywatch through real faults on real servers
## (SCENE=name runs one scene, or a comma-separated list; SCENE=help lists them).
SCENE ?=
demo:
	cd e2e && $(GO) run ./cmd/demo $(if $(SCENE),--scenes $(SCENE))

## chaos: a longer chaos run (CHAOS_DURATION=10m, CHAOS_SCHEDULE=N replays schedule N; 0 = a new one;
## CHAOS_CONFIG=ha|floor|legacy|cache-off|mixed-ha|ha-cache-off-member picks the control plane).
CHAOS_SCHEDULE ?= 0
CHAOS_CONFIG ?= ha
chaos:
	cd e2e && $(GO) test -count=1 -timeout 60m ./chaos -chaos.config=$(CHAOS_CONFIG) -chaos.duration=$(CHAOS_DURATION) -chaos.schedule=$(CHAOS_SCHEDULE) -ginkgo.v

## soak: the model test (internal/modeltest) for longer: random histories of writes and faults against
## stock client-go, the drop-in informer and reflector.New (in memory, and over HTTP through FromClientset)
## (MODEL_HISTORIES, or MODEL_DURATION=30m; MODEL_STREAM=N replays a run, random by default).
MODEL_HISTORIES ?= 100000
MODEL_STREAM ?= random
.PHONY: soak
soak:
	MODEL_HISTORIES=$(MODEL_HISTORIES) MODEL_STREAM=$(MODEL_STREAM) MODEL_DURATION=$(MODEL_DURATION) \
	  $(GO) test -count=1 -timeout 0 ./internal/modeltest -run 'TestModel$$' -v

## soak-faults: hold each persistent fault of the fault proxy (e2e/soak) against a real v1.37.2 for
## SOAK_DURATION, stock client-go beside steadywatch's adoption paths; rewrites the generated section of
## docs/bad-server-data.md; fails on a violated guarantee (SOAK_FAULTS=id,id picks faults; not in `make test`).
SOAK_DURATION ?= 60s
SOAK_RECOVERY ?= 60s
SOAK_FAULTS ?=
.PHONY: soak-faults
soak-faults:
	cd e2e && $(GO) run ./cmd/soak-faults -duration $(SOAK_DURATION) -recovery $(SOAK_RECOVERY) -faults '$(SOAK_FAULTS)' \
	  -out ../docs/bad-server-data.md -command 'make soak-faults$(if $(filter-out 60s,$(SOAK_DURATION)), SOAK_DURATION=$(SOAK_DURATION))$(if $(filter-out 60s,$(SOAK_RECOVERY)), SOAK_RECOVERY=$(SOAK_RECOVERY))$(if $(SOAK_FAULTS), SOAK_FAULTS=$(SOAK_FAULTS))'

## matrix: regenerate docs/compatibility.md from real runs (MATRIX_VERSIONS: servers; MATRIX_MIXED:
## mixed-version HA pairs "old+new"); missing kube-apiservers are built first, one at a time, cached.
MATRIX_VERSIONS ?= v1.16.15,v1.17.17,v1.18.19,v1.19.16,v1.26.15,v1.27.16,v1.30.14,v1.32.13,v1.33.13,v1.34.12,v1.35.8,v1.36.3,v1.37.2
MATRIX_MIXED ?= v1.18.19+v1.19.16,v1.18.19+v1.37.2,v1.33.13+v1.34.12,v1.36.3+v1.37.2
matrix:
	cd e2e && $(GO) run ./cmd/matrix -versions $(MATRIX_VERSIONS) -mixed $(MATRIX_MIXED) -out ../docs/compatibility.md

## field-failures: every reported list/watch failure, stock client-go beside steadywatch; writes docs/field-failures.{json,md} (also when a spec fails).
.PHONY: field-failures
field-failures:
	cd e2e && { $(GO) test -count=1 -timeout 20m ./fieldfailures -fieldfailures.results=$(CURDIR)/docs/field-failures.json $(E2E_FLAGS) || rc=$$?; \
	  $(GO) run ./cmd/fieldfailures -in ../docs/field-failures.json -out ../docs/field-failures.md; exit $${rc:-0}; }

## fuzz: run each fuzz target for FUZZTIME (not part of `make test`). A target fails only with a
## failing input written to testdata/fuzz; Go 1.26's coordinator can end a clean run with
## "context deadline exceeded" and no input (golang/go#75804, fixed in Go 1.27): reported, not failed.
FUZZTIME ?= 30s
fuzz:
	@for pkg in ./fallback ./compat ./lister ./internal/decode; do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "==> $$pkg $$f"; before=$$(find $$pkg/testdata/fuzz/$$f -type f 2>/dev/null | wc -l || true); log=$$(mktemp); \
	    if ! $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg 2>&1 | tee $$log; then \
	      after=$$(find $$pkg/testdata/fuzz/$$f -type f 2>/dev/null | wc -l || true); \
	      if [ "$$after" -gt "$$before" ] || ! grep -q 'context deadline exceeded' $$log; then rm -f $$log; echo "FAIL: $$f"; exit 1; fi; \
	      echo "NOTE: $$f ended with 'context deadline exceeded' and wrote no failing input (golang/go#75804): not a failure"; \
	    fi; rm -f $$log; done; done

## bench: steadywatch vs stock client-go on real apiservers; writes docs/benchmarks.md (BENCH_SIZE=full: 4 servers, 10k/50k, scaling to 100k, the apiserver cost of a herd start).
BENCH_SIZE ?= small
bench:
	cd e2e && $(GO) run ./bench -size $(BENCH_SIZE) -out ../docs

## bench-relist: only relist memory (peak heap while every watch gets 410, steadywatch's adoption paths vs stock); adds its section to docs/benchmarks.md (BENCH_SIZE=full: 10k and 50k, streaming lists off and on, 3 repetitions).
.PHONY: bench-relist
bench-relist:
	cd e2e && $(GO) run ./bench -only relist -size $(BENCH_SIZE) -out ../docs

## bench-shard: only sharding (1, 2 and 4 shard.Wrap replicas vs stock unsharded, v1.37.2 with ShardedListAndWatch on and off); adds its section to docs/benchmarks.md (SHARDING_OBJECTS=20000 for a quick run).
SHARDING_OBJECTS ?= 100000
.PHONY: bench-shard
bench-shard:
	cd e2e && $(GO) run ./bench -only sharding -sharding-objects $(SHARDING_OBJECTS) -out ../docs

## clean-cache: remove built apiservers (the next build is cold).
clean-cache:
	rm -rf e2e/.cache

## release: VERSION=vX.Y.Z: tag the commit that dated that version's CHANGELOG.md section (or fail
## saying why; nothing is pushed), prove the tag takeable (check-release), then build the kubectl plugin
## from it for linux/darwin x amd64/arm64 in dist/, with SHA256SUMS and a krew manifest.
VERSION ?=
.PHONY: release
release:
	scripts/release.sh $(VERSION)

## check-release: VERSION=vX.Y.Z: a module outside the repository resolves the SDK at that tag (served
## from a local module proxy built from the tag) and builds the README's quick start without Prometheus'
## client, cobra or cli-runtime; where the plugin is in the SDK module, go install ...@VERSION installs it.
.PHONY: check-release
check-release:
	scripts/check-release.sh $(VERSION)
