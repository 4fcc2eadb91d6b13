# cordon — see README.md. `make help` lists the targets.
GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)
# netgo and osusergo keep glibc's NSS out of the binary, which then links
# statically, libseccomp included (cmd/cordon/static_linux.go): neither of a
# run's two cordon processes pays the dynamic loader. tests/main_test.go
# builds the binary it tests with the same tags.
TAGS     := netgo,osusergo
TESTFLAGS ?=
# staticcheck is run with `go run` at a pinned version rather than as a tool
# dependency: its current releases need a newer go directive than the
# module's (Go 1.24+ builds cordon).
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

.PHONY: deps
deps: ## install bubblewrap and libseccomp-dev when missing (apt-get)
	@./scripts/deps.sh

.PHONY: build
build: deps ## build bin/cordon
	CGO_ENABLED=1 $(GO) build -trimpath -tags '$(TAGS)' -ldflags '$(LDFLAGS)' -o bin/cordon ./cmd/cordon

.PHONY: demo
demo: build ## build, then show an allowed and a denied nested exec on the default policy
	@./scripts/demo.sh

.PHONY: test
test: build ## install deps, build, run every test (race detector on), then the exec adversarial suite again in the landlock tier
	@./scripts/deps.sh --test
	$(GO) test -race -count=1 -timeout 12m $(TESTFLAGS) ./...
	$(MAKE) --no-print-directory test-landlock-only

.PHONY: bench
.PHONY: test-landlock
test-landlock: build ## the exec adversarial and security suites again, in the landlock tier (part of make test)
	@$(MAKE) --no-print-directory test-landlock-only

.PHONY: test-landlock-only
test-landlock-only:
	CORDON_IT_ISOLATION=landlock $(GO) test -race -count=1 -timeout 12m -run 'TestAdv|TestSecurity|TestIsolation' ./tests

bench: build ## measure cordon's costs as ratios (several minutes): table on stdout, bench/results.json, bench/overhead.svg
	@./scripts/deps.sh --bench || echo "make bench: hyperfine could not be installed; its startup cross-check is skipped" >&2
	CGO_ENABLED=1 $(GO) build -trimpath -o bin/cordon-bench ./bench/cmd/cordon-bench
	bin/cordon-bench -go $(GO) -cordon bin/cordon -out bench

.PHONY: bench-quick
bench-quick: build ## the same ratios with small counts (under a minute); reports, never fails on noise
	CGO_ENABLED=1 $(GO) build -trimpath -o bin/cordon-bench ./bench/cmd/cordon-bench
	bin/cordon-bench -quick -go $(GO) -cordon bin/cordon -out bench/quick

# What a program that only talks to the daemon links: it must build without
# cgo and on any OS, and api must stay a leaf (the standard library only).
NOCGO_PKGS := ./api ./service ./client ./policy ./agent
MODULE     := github.com/cordon-sandbox/cordon

.PHONY: lint
lint: deps ## gofmt, go vet, staticcheck, the cgo-free client builds (linux, darwin), api's and client's dependencies (run by CI)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	CGO_ENABLED=0 $(GO) build $(NOCGO_PKGS)
	GOOS=darwin CGO_ENABLED=0 $(GO) build $(NOCGO_PKGS)
	@bad=$$($(GO) list -deps -f '{{.ImportPath}}' ./api | grep '^$(MODULE)/' | grep -vx '$(MODULE)/api'); \
	 if [ -n "$$bad" ]; then echo "api may import the standard library only; it depends on:"; echo "$$bad"; exit 1; fi
	@bad=$$($(GO) list -deps -f '{{.ImportPath}}' ./client | grep '^$(MODULE)/' | grep -vxE '$(MODULE)/(client|api|service|internal/apiconv)'); \
	 if [ -n "$$bad" ]; then echo "client may import only api, service and internal/apiconv of cordon; it depends on:"; echo "$$bad"; exit 1; fi

.PHONY: verify
verify: ## check that go.mod/go.sum are tidy
	$(GO) mod tidy -diff

.PHONY: clean
clean: ## remove build output
	rm -rf bin
