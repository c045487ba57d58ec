# maka: build and test.  `make test` runs the unit tests, then the integration
# tests (bats), in a throw-away QEMU guest unless this host is cgroup v2 only.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -ec
export PATH := /usr/local/go/bin:$(PATH)
export CGO_ENABLED := 1

GO ?= go
BATS ?= bats
VERSION := $(shell cat $(CURDIR)/VERSION 2>/dev/null || echo unknown)
COMMIT := $(shell git -C $(CURDIR) rev-parse --verify -q HEAD 2>/dev/null || echo unknown)
LDFLAGS := -X main.version=$(VERSION) -X main.gitCommit=$(COMMIT)
BUILDTAGS ?= seccomp
STATIC_BUILDTAGS ?= seccomp netgo osusergo static_build

FIXTURES := $(CURDIR)/build/fixtures
ROOTFS_STAMP := $(FIXTURES)/.rootfs.stamp
# Subset of the integration tests: make integration TESTS=tests/integration/foo.bats
TESTS ?= tests/integration
# Extra bats flags, e.g. BATS_FLAGS='--filter "exec"'
BATS_FLAGS ?=
BATS_DEFAULT_FLAGS := --timing --print-output-on-failure
INTEGRATION_LOG := $(CURDIR)/build/integration.tap
# A hung test fails alone instead of stalling the suite; the guest as a whole
# is bounded too (CI stops at 90 minutes).
export BATS_TEST_TIMEOUT ?= 240
export VM_TIMEOUT ?= 3000

DEPS_PKGS := gcc libc6-dev make git pkg-config libseccomp-dev bats jq \
	qemu-system-x86 busybox-static cpio kmod xz-utils zstd iproute2 \
	util-linux procps runc crun python3 socat

.PHONY: all build maka static fixtures unit integration test demo deps lint clean

all: build

build maka:
	$(GO) build -tags "$(BUILDTAGS)" -trimpath -ldflags "$(LDFLAGS)" -o maka .

static:
	$(GO) build -tags "$(STATIC_BUILDTAGS)" -trimpath \
		-ldflags "$(LDFLAGS) -extldflags -static" -o maka.static .

fixtures: $(ROOTFS_STAMP) $(FIXTURES)/escape

# The escape attempts of violations.bats, copied into the test rootfs there.
$(FIXTURES)/escape: tests/integration/fixtures/escape.c
	mkdir -p $(FIXTURES)
	$${CC:-gcc} -static -O2 -Wall -o $@ $<

$(ROOTFS_STAMP): tests/integration/fixtures/make-rootfs.sh $(wildcard /bin/busybox)
	mkdir -p $(FIXTURES)
	tests/integration/fixtures/make-rootfs.sh $(FIXTURES)/rootfs
	touch $@

unit:
	$(GO) test -tags "$(BUILDTAGS)" ./...

# One guest boot for the whole suite (or subset) when the host is not
# cgroup v2 only.  The TAP output is kept in build/integration.tap.
integration: build fixtures
	@export MAKA_BINARY=$(CURDIR)/maka MAKA_FIXTURES=$(FIXTURES) MAKA_RUNC=$$(command -v runc || true) MAKA_CRUN=$$(command -v crun || true); \
	if [ "$$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then \
		runner=(); echo "integration: cgroup v2 host, running bats directly"; \
	else \
		runner=(tests/vm/run.sh); echo "integration: cgroup v1/hybrid host, running bats in a QEMU guest"; \
	fi; \
	rc=0; \
	"$${runner[@]}" $(BATS) --formatter tap $(BATS_DEFAULT_FLAGS) $(BATS_FLAGS) $(TESTS) \
		| tee $(INTEGRATION_LOG) || rc=$$?; \
	pass=$$(grep -cE '^ok ' $(INTEGRATION_LOG) || true); \
	skip=$$(grep -cE '^ok .* # skip' $(INTEGRATION_LOG) || true); \
	fail=$$(grep -cE '^not ok ' $(INTEGRATION_LOG) || true); \
	echo "integration: $$((pass - skip)) passed, $$fail failed, $$skip skipped"; \
	if [ $$rc -eq 0 ] && [ $$((pass + fail)) -eq 0 ]; then echo "integration: no test ran" >&2; rc=1; fi; \
	exit $$rc

# One real container, end to end (in the guest unless this host is cgroup v2).
demo: build fixtures
	@export MAKA_BINARY=$(CURDIR)/maka MAKA_FIXTURES=$(FIXTURES); \
	if [ "$$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then scripts/demo.sh; \
	else tests/vm/run.sh scripts/demo.sh; fi

test: unit
	$(MAKE) --no-print-directory integration

deps:
	@missing=; for p in $(DEPS_PKGS); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then echo "deps: all installed"; exit 0; fi; \
	echo "deps: installing$$missing"; \
	export DEBIAN_FRONTEND=noninteractive; \
	apt-get update -qq; \
	apt-get install -y -qq --no-install-recommends $$missing

lint:
	@files=$$(find . -name '*.go' -not -path './build/*' -not -path './vendor/*' -not -path './.git/*'); \
	bad=$$([ -z "$$files" ] || gofmt -l $$files); \
	if [ -n "$$bad" ]; then echo "gofmt needed:"; echo "$$bad"; exit 1; fi
	$(GO) vet -tags "$(BUILDTAGS)" ./...

clean:
	rm -f maka maka.static
	rm -rf build
