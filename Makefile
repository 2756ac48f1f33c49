# The Makefile is what CI runs. `make test` is the gate.
GO        ?= go
FUZZTIME  ?= 10s
PKGS      := ./...

.PHONY: all test lint fmt-check vet tidy-check unit fuzz bench gobench build install clean crashtest crashreplay

all: test

build:
	$(GO) build -o bin/seglog ./cmd/seglog

install:
	$(GO) install ./cmd/seglog

## test: formatting, vet, tidy check, and every test under the race detector.
test: lint
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

lint: fmt-check vet tidy-check

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

tidy-check:
	@bak=$$(mktemp -d); cp go.mod go.sum $$bak/; \
	$(GO) mod tidy; \
	if ! cmp -s go.mod $$bak/go.mod || ! cmp -s go.sum $$bak/go.sum; then \
		cp $$bak/go.mod $$bak/go.sum .; rm -rf $$bak; \
		echo "go mod tidy changes go.mod or go.sum: run it and commit"; exit 1; fi; \
	rm -rf $$bak

## crashtest: the power-loss sweeps at every crash point of every workload (strict, lazy and kill crashes); prints the points and records each covered.
crashtest:
	@out=$$(mktemp); SEGLOG_CRASHTEST=long $(GO) test -count=1 -timeout 90m -v -run 'Crashes$$' ./internal/crashtest/ >$$out 2>&1; rc=$$?; \
	grep -vE '^=== (RUN|PAUSE|CONT)' $$out; rm -f $$out; exit $$rc

## crashreplay: replay one crash point of the power-loss sweeps with its whole history, to study a failure:
## POINT=<workload>/<mode>@<point> (a sweep's failure names the workload, the mode and "crash at operation N"),
## e.g. make crashreplay POINT=log/truncate/lazy@384. Prints the operations, what survived and the check;
## exits 0 when the check passes.
crashreplay:
	@if [ -z "$(POINT)" ]; then echo "usage: make crashreplay POINT=<workload>/<mode>@<point>, e.g. POINT=log/truncate/lazy@384"; exit 2; fi
	$(GO) test -count=1 -v ./internal/crashtest/ -replay '$(POINT)'

## fuzz: every fuzz target, each for FUZZTIME.
fuzz:
	FUZZTIME=$(FUZZTIME) ./.ci/fuzz

## bench: the benchmark suite a user runs first (seglog bench), in a temp dir.
bench:
	$(GO) run ./cmd/seglog bench

## gobench: the Go micro-benchmarks of every package.
gobench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

clean:
	rm -rf bin
