# codefeedback: `make run` runs the default pipeline with no model and no
# network; `make test` sets up the sandboxes and runs every test.
SHELL := /bin/bash
GO ?= go
BIN := bin/codefeedback
SANDBOX_IMAGE ?= codefeedback-sandbox:bookworm
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)

.PHONY: build run test setup setup-run sandbox-image vet bench clean

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/codefeedback

setup-run:
	@.ci/setup run

setup:
	@.ci/setup test

# The main job on its embedded defaults: sample problems in data/, no model.
run: setup-run build
	$(BIN) run data/pipeline.yaml

test: setup build vet
	CODEFEEDBACK_SANDBOX_IMAGE=$(SANDBOX_IMAGE) $(GO) test -count=1 -timeout 25m ./...

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

# Offline sandbox image: debootstrap a minimal Debian with python3 and sqlite3,
# then docker import it. Skipped when the image exists.
sandbox-image:
	@if docker image inspect $(SANDBOX_IMAGE) >/dev/null 2>&1; then echo "sandbox image $(SANDBOX_IMAGE) present"; else \
	  set -e; dir=$$(mktemp -d); echo "building $(SANDBOX_IMAGE) with debootstrap (about a minute)"; \
	  debootstrap --variant=minbase --include=python3,sqlite3 bookworm $$dir >/tmp/codefeedback-debootstrap.log 2>&1 || { tail -20 /tmp/codefeedback-debootstrap.log; exit 1; }; \
	  tar -C $$dir -c . | docker import -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin' - $(SANDBOX_IMAGE) >/dev/null; rm -rf $$dir; fi

# Every Go benchmark once; one table of figures and of ratios to the
# baseline each benchmark measures in the same run (raw output: bench.out).
bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./... | tee bench.out | $(GO) run ./cmd/benchtable

clean:
	rm -rf bin
