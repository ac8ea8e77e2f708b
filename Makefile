# steadywatch — developer entry points. The README's two commands are `make demo` and `make test`.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
GO ?= go
STATICCHECK_VERSION ?= v0.8.2
# Extra flags for the e2e suites, e.g. E2E_FLAGS='-ginkgo.label-filter=legacy -ginkgo.v'
E2E_FLAGS ?=
E2E_TIMEOUT ?= 35m
SERVER ?= current

.PHONY: all test lint unit e2e build-apiservers devcluster demo fuzz tidy-check clean-cache

all: test

## test: everything CI runs: lint, unit tests (race), real-apiserver builds, e2e suites.
test: lint unit build-apiservers e2e

## lint: gofmt, go vet and staticcheck on every module.
lint:
	@echo "==> gofmt"; out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@for m in . e2e; do echo "==> go vet ($$m)"; (cd $$m && $(GO) vet ./...); done
	@for m in . e2e; do echo "==> staticcheck ($$m)"; (cd $$m && $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...); done

## unit: the SDK's unit tests with the race detector.
unit:
	$(GO) test -race -count=1 ./...

## build-apiservers: build (or reuse from e2e/.cache) kube-apiserver current and legacy, with progress.
build-apiservers:
	cd e2e && $(GO) run ./cmd/build-apiservers

## e2e: the Ginkgo suites against real kube-apiservers started by the harness (one package at a time).
e2e:
	cd e2e && $(GO) test -count=1 -p 1 -timeout $(E2E_TIMEOUT) ./... $(E2E_FLAGS)

## devcluster: start a real local apiserver (SERVER=current|legacy) and print KUBECONFIG=...
devcluster:
	cd e2e && $(GO) run ./cmd/devcluster --server $(SERVER)

## demo: the README's first command.
demo:
	cd e2e && $(GO) run ./cmd/devcluster --server $(SERVER)

## fuzz: run each fuzz target for FUZZTIME (not part of `make test`).
FUZZTIME ?= 30s
fuzz:
	@for pkg in ./fallback ./compat; do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "==> $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; done; done

## clean-cache: remove built apiservers (the next build is cold).
clean-cache:
	rm -rf e2e/.cache
