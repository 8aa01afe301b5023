# codefeedback: `make run` runs the default pipeline with no model and no
# network; `make test` sets up the sandboxes and runs every test.
SHELL := /bin/bash
GO ?= go
BIN := bin/codefeedback
SANDBOX_IMAGE ?= codefeedback-sandbox:bookworm
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)

.PHONY: build run test setup setup-run sandbox-image ctf-image nl2bash-image image vet lint bench bench-all clean

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/codefeedback

setup-run:
	@.ci/setup run

setup:
	@.ci/setup test

# The main job on its embedded defaults: sample problems in data/, no model.
run: setup-run build
	$(BIN) run data/pipeline.yaml

test: setup build vet lint
	CODEFEEDBACK_SANDBOX_IMAGE=$(SANDBOX_IMAGE) CODEFEEDBACK_CTF_IMAGE=$(CTF_IMAGE) $(GO) test -count=1 -timeout 25m ./...

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

# Hygiene kept at zero: staticcheck and the unreachable-code check (tests
# count as callers) fail on any finding not in .ci/lint-allow, where each
# exception stands under a comment line that says why.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
DEADCODE := golang.org/x/tools/cmd/deadcode@v0.50.0
lint:
	@allow=$$(mktemp); grep -v '^#' .ci/lint-allow | grep . > $$allow; \
	out=$$( { $(GO) run $(STATICCHECK) ./... 2>&1; $(GO) run $(DEADCODE) -test ./... 2>&1; } | \
		grep -v -e '^go: downloading' -e '^exit status ' | grep -v -F -f $$allow ); \
	rm -f $$allow; \
	test -z "$$out" || { echo "lint findings (fix them, or add each to .ci/lint-allow with a reason):"; echo "$$out"; exit 1; }

# Offline sandbox image: debootstrap a minimal Debian with python3, sqlite3
# and the language toolchains (SANDBOX_PACKAGES), then docker import it,
# labelled with a hash of the package list. Skipped when an image with that
# label exists; a changed list rebuilds the image under the same tag.
SANDBOX_PACKAGES := python3,sqlite3,nodejs,node-typescript,gcc,g++,libc6-dev,golang-go,openjdk-17-jdk-headless,rustc,ruby,php-cli,lua5.4
SANDBOX_HASH := $(shell printf '%s' '$(SANDBOX_PACKAGES)' | sha256sum | cut -c1-12)
sandbox-image:
	@if [ "$$(docker image inspect -f '{{index .Config.Labels "codefeedback.packages"}}' $(SANDBOX_IMAGE) 2>/dev/null)" = "$(SANDBOX_HASH)" ]; then echo "sandbox image $(SANDBOX_IMAGE) present ($(SANDBOX_HASH))"; else \
	  set -e; dir=$$(mktemp -d); echo "building $(SANDBOX_IMAGE) with debootstrap (packages $(SANDBOX_HASH); a few minutes)"; \
	  debootstrap --variant=minbase --include=$(SANDBOX_PACKAGES) bookworm $$dir >/tmp/codefeedback-debootstrap.log 2>&1 || { tail -20 /tmp/codefeedback-debootstrap.log; exit 1; }; \
	  rm -rf $$dir/var/cache/apt/archives/*.deb $$dir/var/lib/apt/lists/*; \
	  tar -C $$dir -c . | docker import -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin' -c 'LABEL codefeedback.packages=$(SANDBOX_HASH)' - $(SANDBOX_IMAGE) >/dev/null; rm -rf $$dir; fi
	@# Javascript session kernels start from node's binary without read
	@# permission, which leaves them not dumpable (executors/langs.py,
	@# NODE_KERNEL_EXE). Added to an image built before that, without a new
	@# debootstrap.
	@if [ "$$(docker image inspect -f '{{index .Config.Labels "codefeedback.nodekernel"}}' $(SANDBOX_IMAGE) 2>/dev/null)" != "1" ]; then \
	  set -e; c=$$(docker create --user 0 --network none $(SANDBOX_IMAGE) sh -c 'mkdir -p /opt/codefeedback && cp -L /usr/bin/node /opt/codefeedback/node && chmod 0111 /opt/codefeedback/node'); \
	  docker start -a $$c; docker commit -c 'LABEL codefeedback.nodekernel=1' -c 'CMD ["/bin/sh"]' $$c $(SANDBOX_IMAGE) >/dev/null; docker rm $$c >/dev/null; \
	  echo "sandbox image $(SANDBOX_IMAGE): execute-only node for session kernels added"; fi

# The InterCode CTF environment's image on the docker driver: the sandbox
# image plus the tools CTF tasks use, derived without a new debootstrap (the
# base image's list stays as it is, so CI does not rebuild it): apt in a
# container of the base image resolves the packages against the host's
# package lists (bind-mounted, no network), the host downloads exactly those
# versions (apt-get download), dpkg installs them in a second container,
# which is committed, labelled with a hash of both lists. Debian names
# pycryptodome's package Cryptodome; CTF solutions import Crypto, so the
# image links one to the other. bwrap uses the host's tools (.ci/setup).
CTF_IMAGE ?= codefeedback-sandbox:ctf
CTF_PACKAGES := file xxd binutils unzip libimage-exiftool-perl sleuthkit gdb python3-pycryptodome netcat-openbsd poppler-utils bsdextrautils
CTF_HASH := $(shell printf '%s|%s' '$(SANDBOX_HASH)' '$(CTF_PACKAGES)' | sha256sum | cut -c1-12)
ctf-image: sandbox-image
	@if [ "$$(docker image inspect -f '{{index .Config.Labels "codefeedback.ctf"}}' $(CTF_IMAGE) 2>/dev/null)" = "$(CTF_HASH)" ]; then echo "ctf image $(CTF_IMAGE) present ($(CTF_HASH))"; else \
	  set -e; dir=$$(mktemp -d); trap 'rm -rf $$dir' EXIT; echo "building $(CTF_IMAGE) from $(SANDBOX_IMAGE) (packages $(CTF_HASH))"; \
	  docker run --rm --network none -u 0 -v /var/lib/apt/lists:/var/lib/apt/lists:ro $(SANDBOX_IMAGE) \
	    apt-get install -s -q --no-install-recommends $(CTF_PACKAGES) 2>/dev/null | awk '/^Inst /{print $$2 "=" substr($$3, 2)}' >$$dir/pkgs; \
	  test -s $$dir/pkgs || { echo "ctf-image: apt resolved nothing (run apt-get update?)"; exit 1; }; \
	  mkdir $$dir/debs; (cd $$dir/debs && xargs -a ../pkgs apt-get download -q >../download.log 2>&1) || { tail -5 $$dir/download.log; exit 1; }; \
	  cid=$$(docker create --network none -u 0 -v $$dir/debs:/debs:ro $(SANDBOX_IMAGE) sh -c 'export PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive; \
	    dpkg -i /debs/*.deb && ln -s Cryptodome /usr/lib/python3/dist-packages/Crypto && python3 -c "from Crypto.Cipher import AES"'); \
	  docker start -a $$cid >$$dir/install.log 2>&1 || { tail -20 $$dir/install.log; docker rm $$cid >/dev/null; exit 1; }; \
	  docker commit -c 'LABEL codefeedback.ctf=$(CTF_HASH)' $$cid $(CTF_IMAGE) >/dev/null; docker rm $$cid >/dev/null; \
	  docker run --rm --network none $(CTF_IMAGE) sh -c 'for t in file xxd strings objdump unzip exiftool fls gdb nc pdftotext hexdump; do command -v $$t >/dev/null || { echo "ctf-image: $$t missing"; exit 1; }; done'; \
	  echo "ctf image $(CTF_IMAGE) built"; fi

# The system InterCode's Bash (NL2Bash) tasks ran on: its image's package
# list (docker/nl2bash.Dockerfile: Ubuntu + bash python3 psmisc bsdmainutils
# cron imagemagick dnsutils git tree net-tools iputils-ping coreutils curl
# cpio jq; no compiler; plus procps, which its apt pulled in: its trajectories
# ran uptime and w) on Debian bookworm minbase, debootstrapped into
# NL2BASH_ROOT (the bwrap driver's system directories for the bash
# environment: its /usr, /etc, /var; for root under /var/cache, which the
# sandbox's slot uids can reach, else the user cache) and imported as
# NL2BASH_IMAGE (the docker driver's), both labelled with a hash of the
# list; skipped when present. Its system files are made readable by all:
# InterCode's tasks ran as root and read them (`find /` printed no
# permission error), while the sandbox's root has no capability.
NL2BASH_IMAGE ?= codefeedback-sandbox:nl2bash
NL2BASH_ROOT ?= $(or $(CODEFEEDBACK_NL2BASH_ROOT),$(if $(filter 0,$(shell id -u)),/var/cache,$(or $(XDG_CACHE_HOME),$(HOME)/.cache))/codefeedback/nl2bash/root)
NL2BASH_PACKAGES := bash,python3,psmisc,bsdmainutils,cron,imagemagick,dnsutils,git,tree,net-tools,iputils-ping,coreutils,curl,cpio,jq,procps
NL2BASH_SUITE ?= bookworm
# bash from this suite replaces the base suite's: Ubuntu 22.04's bash is 5.1
# (bullseye's), whose messages InterCode logged; bookworm's 5.2 words syntax
# errors differently and skips . and .. in globs (.* matched them there).
# Empty keeps the base suite's; where the suite cannot be reached the build
# says so and keeps it too.
NL2BASH_BASH_SUITE ?= bullseye
# Every time in the root is clamped to this one (as reproducible builds
# clamp to SOURCE_DATE_EPOCH): the root's times no longer depend on when it
# was built, and its logs are as old as an image's are by the time it runs
# (`find /var/log -mtime +1` found them in InterCode's). 2023-04-25 14:06
# UTC is the date `ls -l /` showed in InterCode's Ubuntu image.
NL2BASH_EPOCH := 1682431560
NL2BASH_HASH := $(shell printf '%s' '$(NL2BASH_SUITE):$(NL2BASH_BASH_SUITE):$(NL2BASH_EPOCH):$(NL2BASH_PACKAGES)' | sha256sum | cut -c1-12)
nl2bash-image:
	@if [ "$$(cat $(NL2BASH_ROOT)/.codefeedback-nl2bash 2>/dev/null)" = "$(NL2BASH_HASH)" ]; then echo "nl2bash root $(NL2BASH_ROOT) present ($(NL2BASH_HASH))"; else \
	  set -e; mkdir -p $$(dirname $(NL2BASH_ROOT)); dir=$$(mktemp -d -p $$(dirname $(NL2BASH_ROOT))); \
	  echo "building the nl2bash root $(NL2BASH_ROOT) with debootstrap (packages $(NL2BASH_HASH); a few minutes)"; \
	  debootstrap --variant=minbase --include=$(NL2BASH_PACKAGES) $(NL2BASH_SUITE) $$dir >/tmp/codefeedback-nl2bash.log 2>&1 || { tail -20 /tmp/codefeedback-nl2bash.log; rm -rf $$dir; exit 1; }; \
	  if [ -n "$(NL2BASH_BASH_SUITE)" ]; then \
	    sed -n 's/^deb \([^ ]*\) $(NL2BASH_SUITE) main$$/deb \1 $(NL2BASH_BASH_SUITE) main/p' $$dir/etc/apt/sources.list > $$dir/etc/apt/sources.list.d/bash.list; \
	    cp -L /etc/resolv.conf $$dir/etc/resolv.conf 2>/dev/null || true; \
	    if chroot $$dir apt-get -qq update >>/tmp/codefeedback-nl2bash.log 2>&1 && chroot $$dir apt-get -qq install -y --allow-downgrades bash/$(NL2BASH_BASH_SUITE) >>/tmp/codefeedback-nl2bash.log 2>&1; \
	    then echo "nl2bash-image: bash $$(chroot $$dir dpkg-query -W -f '$${Version}' bash) from $(NL2BASH_BASH_SUITE)"; \
	    else echo "nl2bash-image: no bash from $(NL2BASH_BASH_SUITE) (see /tmp/codefeedback-nl2bash.log); keeping $(NL2BASH_SUITE)'s, whose messages differ from InterCode's"; fi; \
	    rm -f $$dir/etc/apt/sources.list.d/bash.list; \
	  fi; \
	  rm -rf $$dir/var/cache/apt/archives/*.deb $$dir/var/lib/apt/lists/* $$dir/etc/resolv.conf; \
	  for t in bash python3 git tree convert dig ping jq curl cpio killall cal crontab ifconfig uptime w ps; do chroot $$dir sh -c "command -v $$t" >/dev/null || { echo "nl2bash-image: $$t missing"; rm -rf $$dir; exit 1; }; done; \
	  ! chroot $$dir sh -c 'command -v cc || command -v c++ || command -v gcc' >/dev/null || { echo "nl2bash-image: a compiler slipped in"; rm -rf $$dir; exit 1; }; \
	  printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' > $$dir/etc/hosts; \
	  chmod -R go+rX $$dir/usr $$dir/etc $$dir/var; \
	  find $$dir -xdev -newermt @$(NL2BASH_EPOCH) -exec touch -h -d @$(NL2BASH_EPOCH) {} +; \
	  echo $(NL2BASH_HASH) > $$dir/.codefeedback-nl2bash; chmod 755 $$dir; \
	  rm -rf $(NL2BASH_ROOT).old; [ ! -e $(NL2BASH_ROOT) ] || mv $(NL2BASH_ROOT) $(NL2BASH_ROOT).old; mv $$dir $(NL2BASH_ROOT); rm -rf $(NL2BASH_ROOT).old; \
	  echo "nl2bash root $(NL2BASH_ROOT) built"; fi
	@if ! docker info >/dev/null 2>&1; then echo "nl2bash-image: no docker engine; $(NL2BASH_IMAGE) not built (bwrap uses $(NL2BASH_ROOT))"; \
	elif [ "$$(docker image inspect -f '{{index .Config.Labels "codefeedback.nl2bash"}}' $(NL2BASH_IMAGE) 2>/dev/null)" = "$(NL2BASH_HASH)" ]; then echo "nl2bash image $(NL2BASH_IMAGE) present ($(NL2BASH_HASH))"; else \
	  tar -C $(NL2BASH_ROOT) --exclude=./.codefeedback-nl2bash -c . | docker import -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' -c 'LABEL codefeedback.nl2bash=$(NL2BASH_HASH)' - $(NL2BASH_IMAGE) >/dev/null; \
	  echo "nl2bash image $(NL2BASH_IMAGE) built"; fi

# codefeedback itself as an image (for the Kubernetes and Slurm examples),
# built offline like the sandbox image: debootstrap of Debian minbase with
# bubblewrap, python3 and sqlite3 (what the bwrap driver runs) and CA
# certificates (hosted model APIs), plus a static bin/codefeedback.
IMAGE ?= codefeedback:latest
image:
	CGO_ENABLED=0 $(GO) build -ldflags "-X main.version=$(VERSION)" -o bin/codefeedback-static ./cmd/codefeedback
	@set -e; dir=$$(mktemp -d); echo "building $(IMAGE) with debootstrap (about a minute)"; \
	  debootstrap --variant=minbase --include=bubblewrap,python3,sqlite3,ca-certificates bookworm $$dir >/tmp/codefeedback-image.log 2>&1 || { tail -20 /tmp/codefeedback-image.log; exit 1; }; \
	  install -m 0755 bin/codefeedback-static $$dir/usr/local/bin/codefeedback; \
	  rm -rf $$dir/var/cache/apt/archives/*.deb $$dir/var/lib/apt/lists/*; \
	  tar -C $$dir -c . | docker import -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin' -c 'WORKDIR /work' \
	    -c 'ENTRYPOINT ["/usr/local/bin/codefeedback"]' -c 'LABEL org.opencontainers.image.version=$(VERSION)' - $(IMAGE) >/dev/null; \
	  rm -rf $$dir; docker run --rm --network none $(IMAGE) --version

# A small set of representative measurements, each against a baseline
# measured back to back in the same process (cmd/perfbench): one table of
# CPU-second and wall ratios with the load average. A few minutes on a quiet
# machine; BENCH_SCALE=0.2 for a smoke run, BENCH_ONLY=rerun,pool for some.
# BENCH_CELLS_DATA is a directory with the Code-Feedback sample for the
# session-cells row on real cells (a development checkout's ../shared/data
# when it is there; the row is skipped without it).
BENCH_SCALE ?= 1
BENCH_ONLY ?=
BENCH_CELLS_DATA ?= $(wildcard ../shared/data)
bench: build
	$(GO) run ./cmd/perfbench -bin $(BIN) -scale $(BENCH_SCALE) -only '$(BENCH_ONLY)' -cells-data '$(BENCH_CELLS_DATA)'

# Every Go benchmark in the repository once (long: tens of minutes under
# load), figures and ratios in one table (raw output: bench.out).
bench-all:
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./... | tee bench.out | $(GO) run ./cmd/benchtable

clean:
	rm -rf bin
