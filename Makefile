# SPDX-License-Identifier: Apache-2.0
# rdmak build. `make` builds build/rdmak and the sample nodes; `make check` runs the
# whole suite under ASan+UBSan; `make bench` prints the benchmarks.
CC       ?= cc
BUILD    ?= build
# Where `make install` puts rdmak, compiled in too: rdmak-ipam execs $(PREFIX)/bin/rdmak for an
# etcd store. `make install PREFIX=/usr` after a plain `make` rebuilds what names it.
PREFIX   ?= /usr/local
CNIDIR   ?= /opt/cni/bin
# The version, from one place (tools/version.sh: git describe, else the VERSION file): the
# binary's --version, bench's pod image, the container image's tag; the chart's appVersion is
# checked against it (tests/cmd/version.sh).
VERSION  := $(shell tools/version.sh)
SAN      ?= 0
PYTHON   ?= python3
# `make V=1` prints whole command lines; by default one short line per step.
ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-6s %s\n' $(1) $(2)
endif

include packages.mk
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
# Two programs, each linked for how often it starts. The per-pod binary (rdmak-cni, rdmak-ipam:
# POD_LIBS below) is exec'd for every CNI command and links only what a request uses. rdmak
# starts far less often, but still once per CNI command of a network whose IPAM store is etcd
# (rdmak-ipam hands those to it): gRPC (the kubelet and etcd transports) and its abseil, upb and
# c-ares, some 55 shared objects, are linked statically into it, so that those execs do not
# spend their start in the dynamic loader (docs/cni.md has the figures). The rest stays shared.
# GRPC_PKGS must name the gRPC of PKGS (grpc, with TLS for etcd): a package left in PKGS is also
# linked shared, ahead of the static group, and then wins (tests/cmd/cni_deploy.sh checks).
# OpenSSL, which gRPC's TLS uses, stays shared (security updates).
GRPC_PKGS  := grpc gpr
GRPC_LIBS  := $(sort $(filter -lgrpc% -lgpr -labsl_% -lupb% -lre2,$(shell pkg-config --static --libs-only-l $(GRPC_PKGS))) \
              -lupb -laddress_sorting -lcares)
# libmicrohttpd and GnuTLS serve only the HTTP servers (webhook, exporter) and the fabric
# manager's client: src/http/dl.c loads them on first use, so that no other start of rdmak pays
# their ten shared objects (src/http/dl.h). Their headers still come from PKGS.
DL_PKGS    := libmicrohttpd gnutls
# OpenSSL and libstdc++ first among the shared objects: the loader looks up each symbol an object
# binds at start in every object ahead of the one that defines it, and those three make 5 800 of
# the start's 6 000 such lookups (libcrypto binds all of its own at load: Debian links it -z
# now), so each then finds its own definition near the head of the list (docs/list-json.md).
PKG_LIBS   := -Wl,--push-state,--no-as-needed -lssl -lcrypto -lstdc++ -Wl,--pop-state \
              $(shell pkg-config --libs $(filter-out $(GRPC_PKGS) $(DL_PKGS),$(PKGS))) \
              -Wl,--start-group -Wl,-Bstatic $(GRPC_LIBS) -Wl,-Bdynamic -Wl,--end-group -lssl -lcrypto -lz -lstdc++ -latomic

WARN     := -Wall -Wextra -Wshadow -Wformat=2 -Wmissing-prototypes -Wstrict-prototypes \
            -Wno-unused-parameter -Werror
CFLAGS   ?= -O2 -g
# -ffile-prefix-map: no absolute path of this clone in the objects (their debug information,
# __FILE__, and so the build ID), so that two clones of one commit build the same binaries.
override CFLAGS += -std=gnu17 -D_GNU_SOURCE -fno-strict-aliasing -pthread $(WARN) \
            -ffile-prefix-map=$(CURDIR)=. \
            -Isrc -I$(BUILD)/gen $(PKG_CFLAGS)
# Build-time values go to every object, as wireguard-tools passes its RUNSTATEDIR, so that no
# rule names the file that uses one (a rename would orphan it). The objects whose source names
# one are rebuilt when it changes ($(BUILD)/build.vars, below).
override CFLAGS += -DRDMAK_PREFIX='"$(PREFIX)"' -DRDMAK_VERSION='"$(VERSION)"'
LDLIBS   += $(PKG_LIBS) -pthread -lm
# Every program but the per-pod binary links the etcd store, which src/ipam/store.c names weakly.
ETCD_LINK  := -Wl,--undefined=ipam_store_etcd_driver
override LDFLAGS += $(ETCD_LINK)
# The per-pod binary (src/pod.c: rdmak-cni and rdmak-ipam as the runtime execs them) links only
# what a CNI request uses, jansson, libnl and libc, and all of them statically, as a static PIE:
# an exec then maps one file and runs no dynamic loader (docs/cni.md, "One binary per pod
# start"). What needs a shared library at run time (GnuTLS, for a fabric manager) it hands to
# the full rdmak. No gRPC, C++ runtime, OpenSSL or YAML. The sanitizers' runtimes cannot be
# linked statically: the sanitizer build links it as before, libc shared.
ifeq ($(SAN),0)
POD_PIE    := -static-pie
POD_LIBS   := -ljansson -lnl-route-3 -lnl-3 -lm
else
POD_PIE    := -pie
POD_LIBS   := -Wl,-Bstatic -ljansson -lnl-route-3 -lnl-3 -Wl,-Bdynamic -Wl,--as-needed -lm
endif
# What a root-run plugin deserves, checked by tests/cmd/cni_deploy.sh: PIE, full RELRO (the GOT
# read-only after start: BIND_NOW), no executable stack, stack protector, fortified libc calls.
HARDEN_LD  := -pie -Wl,-z,relro -Wl,-z,now -Wl,-z,noexecstack
HARDEN_CC  := -fPIE -fstack-protector-strong -fstack-clash-protection

override CFLAGS += $(HARDEN_CC)
# FORTIFY needs optimisation and is ASan's job in the sanitizer build.
ifeq ($(SAN),0)
override CFLAGS += -D_FORTIFY_SOURCE=2
endif
ifeq ($(SAN),1)
override CFLAGS  += -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
override LDFLAGS += -fsanitize=address,undefined
endif

# Generated protobuf-c sources (one .proto per module that speaks protobuf).
PROTOS   := $(shell find src -name '*.proto' 2>/dev/null)
PROTO_C  := $(patsubst src/%.proto,$(BUILD)/gen/%.pb-c.c,$(PROTOS))
PROTO_H  := $(PROTO_C:.c=.h)

LIB_SRC  := $(filter-out src/main.c src/pod.c,$(shell find src -name '*.c' | sort))
LIB_OBJ  := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(LIB_SRC)) $(PROTO_C:.c=.o)
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
# Helper programs the tests drive (stand-in servers and the like), linked like the unit tests.
HELPER_SRC := $(sort $(wildcard tests/helpers/*.c))
HELPER_BIN := $(patsubst tests/helpers/%.c,$(BUILD)/tests/helpers/%,$(HELPER_SRC))
# The fuzz harnesses linked with tests/fuzz/replay.c: their corpora replayed by make check.
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BIN := $(patsubst tests/fuzz/%.c,$(BUILD)/tests/fuzz/%,$(FUZZ_SRC))

all: $(BUILD)/rdmak $(BUILD)/cni/rdmak-cni $(BUILD)/cni/rdmak-ipam $(BUILD)/man/.stamp examples/nodes/.stamp

$(BUILD)/gen/%.pb-c.c $(BUILD)/gen/%.pb-c.h: src/%.proto
	@mkdir -p $(dir $@)
	$(call msg,PROTO,$<)
	$(Q)protoc-c --proto_path=$(dir $<) --c_out=$(dir $@) $<

$(BUILD)/gen/%.pb-c.o: $(BUILD)/gen/%.pb-c.c
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -Wno-missing-prototypes -c -o $@ $<

# The build-time values this build was made with, rewritten only when they change: the objects
# whose source names one depend on it (found by name, so a rename keeps the dependency).
BUILD_VARS := PREFIX=$(PREFIX) VERSION=$(VERSION)
VAR_USERS  := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(shell grep -rlE --include='*.c' 'RDMAK_(PREFIX|VERSION)' src))
$(VAR_USERS): $(BUILD)/build.vars
$(BUILD)/build.vars: FORCE
	@mkdir -p $(dir $@)
	@v='$(BUILD_VARS)'; [ "$$(cat $@ 2>/dev/null)" = "$$v" ] || echo "$$v" >$@
$(BUILD)/obj/%.o: src/%.c $(PROTO_H)
	@mkdir -p $(dir $@)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/librdmak.a: $(LIB_OBJ)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/rdmak: $(BUILD)/obj/main.o $(BUILD)/librdmak.a
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The CNI plugins: the per-pod binary under the two names a runtime execs from CNI_PATH. Linked
# against the archive without ETCD_LINK, so only the objects its roles reach come in.
POD_LINK = $(CC) $(CFLAGS) $(filter-out $(ETCD_LINK),$(LDFLAGS)) $(filter-out -pie,$(HARDEN_LD)) $(POD_PIE)
$(BUILD)/cni/rdmak-cni: $(BUILD)/obj/pod.o $(BUILD)/librdmak.a
	@mkdir -p $(dir $@)
	$(call msg,LD,$@)
	$(Q)$(POD_LINK) -o $@ $^ $(POD_LIBS)
$(BUILD)/cni/rdmak-ipam: $(BUILD)/cni/rdmak-cni
	$(Q)ln -sf rdmak-cni $@

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/librdmak.a
	@mkdir -p $(dir $@)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) -Itests $(LDFLAGS) -o $@ $< $(filter %.o,$^) $(BUILD)/librdmak.a $(LDLIBS) $(shell pkg-config --libs $(TEST_PKGS))

# apply's rtnetlink requests go to the test's recorder instead of the socket (no SR-IOV NIC here)
$(BUILD)/tests/test_vf_apply: LDFLAGS += -Wl,--wrap=nl_rt_talk
# src/nl's socket connects nowhere and its traffic goes to the test's stand-in kernel, which
# answers what no kernel here can be made to (an interrupted dump, RDMA netlink)
$(BUILD)/tests/test_nl_dump: LDFLAGS += -Wl,--wrap=nl_connect -Wl,--wrap=nl_send_auto \
				       -Wl,--wrap=nl_recvmsgs
# the same stand-in kernel for the exporter's RDMA netlink (off unless a test turns it on)
$(BUILD)/tests/test_exporter: LDFLAGS += -Wl,--wrap=nl_connect -Wl,--wrap=nl_send_auto \
					-Wl,--wrap=nl_recvmsgs
# convert's lookups and comparisons counted, to show they grow linearly with the input
$(BUILD)/tests/test_convert_scale: LDFLAGS += -Wl,--wrap=json_object_get -Wl,--wrap=json_equal

# The test build: rdmak and the per-pod binary linked with tests/seams/, link-time seams
# (-Wl,--wrap=SYMBOL) through which the tests stand in for what no machine here has (an SR-IOV
# PF's VF table), hold a plugin's rescan open, or count an exec'd plugin's etcd requests. Its
# rdmak-ipam execs the rdmak beside its cni/ folder, this one. Never installed: what `make install`
# and the image ship reads none of the seams' variables (tests/cmd/environment.sh checks, and
# docs/environment.md lists what they do read).
SEAMS    := $(BUILD)/tests/seams
SEAM_WRAP_vf_standin  := -Wl,--wrap=nl_rt_talk_vf
SEAM_WRAP_rescan_gate := -Wl,--wrap=pool_set_build
SEAM_WRAP_etcd_calls  := -Wl,--wrap=etcd_client_free
SEAM_ALL := vf_standin rescan_gate etcd_calls
$(SEAMS)/obj/%.o: tests/seams/%.c $(PROTO_H)
	@mkdir -p $(dir $@)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -Itests -c -o $@ $<
$(SEAMS)/rdmak: $(BUILD)/obj/main.o $(patsubst %,$(SEAMS)/obj/%.o,$(SEAM_ALL)) $(BUILD)/librdmak.a
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $(foreach s,$(SEAM_ALL),$(SEAM_WRAP_$(s))) -o $@ $^ $(LDLIBS)
$(SEAMS)/cni/rdmak-cni: $(BUILD)/obj/pod.o $(SEAMS)/obj/vf_standin.o $(BUILD)/librdmak.a
	@mkdir -p $(dir $@)
	$(call msg,LD,$@)
	$(Q)$(POD_LINK) $(SEAM_WRAP_vf_standin) -o $@ $^ $(POD_LIBS)
$(SEAMS)/cni/rdmak-ipam: $(SEAMS)/cni/rdmak-cni
	$(Q)ln -sf rdmak-cni $@
# the VF table's requests go to the PF stand-in, which the test checks too
$(BUILD)/tests/test_nl_vf: LDFLAGS += $(SEAM_WRAP_vf_standin)
$(BUILD)/tests/test_nl_vf: $(SEAMS)/obj/vf_standin.o

$(BUILD)/tests/helpers/%: tests/helpers/%.c $(BUILD)/librdmak.a
	@mkdir -p $(dir $@)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) -Itests $(LDFLAGS) -o $@ $< $(BUILD)/librdmak.a $(LDLIBS)

# The sysfs stand-in with the kernel's SR-IOV behaviour is a FUSE file system (libfuse3).
$(BUILD)/tests/helpers/sysfs_fuse: override CFLAGS += $(shell pkg-config --cflags fuse3)
$(BUILD)/tests/helpers/sysfs_fuse: LDLIBS += $(shell pkg-config --libs fuse3)
$(BUILD)/tests/helpers/hold_fuse: override CFLAGS += $(shell pkg-config --cflags fuse3)
$(BUILD)/tests/helpers/hold_fuse: LDLIBS += $(shell pkg-config --libs fuse3)

$(BUILD)/tests/fuzz/%: tests/fuzz/%.c tests/fuzz/replay.c $(BUILD)/librdmak.a
	@mkdir -p $(dir $@)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) -Wno-missing-prototypes -Itests $(LDFLAGS) -o $@ $< tests/fuzz/replay.c $(BUILD)/librdmak.a $(LDLIBS)

# Man pages, rdmak(1) and rdmak-ROLE(1), from the one source of each command's usage: its --help
# (tools/man.py; no dependency beyond the Python the sample nodes need). tests/cmd/man.sh checks
# that every role has one and that groff reads them without a warning.
$(BUILD)/man/.stamp: $(BUILD)/rdmak tools/man.py
	@mkdir -p $(dir $@)
	$(call msg,MAN,$(dir $@))
	$(Q)rm -f $(dir $@)*.1 && $(PYTHON) tools/man.py $(BUILD)/rdmak $(dir $@) $(VERSION) && touch $@

# Sample nodes (also the fixtures) are generated: see tools/gen-nodes.py.
examples/nodes/.stamp: tools/gen-nodes.py $(wildcard tools/nodes/*.py)
	$(PYTHON) tools/gen-nodes.py examples/nodes
	@touch $@

# rdmak as the host runs it from the rdmak-cni DaemonSet's bundle (deploy/bundle.sh): its loader
# and libraries under $(RELOC)/lib, found through DT_RPATH (which, unlike RUNPATH, also serves
# the libraries' own dependencies), because runtimes exec CNI plugins in the host's mount
# namespace, where Debian 12's libgrpc, abseil and jansson may not be.
RELOC    ?= /opt/rdmak
LOADER   := $(notdir $(shell readelf -lW /bin/sh 2>/dev/null | sed -n 's/.*interpreter: \(.*\)\]/\1/p'))
$(BUILD)/reloc/rdmak: $(BUILD)/obj/main.o $(BUILD)/librdmak.a
	@mkdir -p $(dir $@)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -Wl,--dynamic-linker=$(RELOC)/lib/$(LOADER) -Wl,-rpath,$(RELOC)/lib \
		-Wl,--disable-new-dtags -o $@ $^ $(LDLIBS)
# The per-pod binary needs no loader or library of the bundle's: static, it runs as built (and a
# static PIE with a DT_RPATH does not start: glibc's _dl_relocate_static_pie asserts).
ifeq ($(SAN),0)
$(BUILD)/reloc/rdmak-cni: $(BUILD)/cni/rdmak-cni
	@mkdir -p $(dir $@)
	$(Q)cp $< $@
else
$(BUILD)/reloc/rdmak-cni: $(BUILD)/obj/pod.o $(BUILD)/librdmak.a
	@mkdir -p $(dir $@)
	$(call msg,LD,$@)
	$(Q)$(POD_LINK) -Wl,--dynamic-linker=$(RELOC)/lib/$(LOADER) -Wl,-rpath,$(RELOC)/lib \
		-Wl,--disable-new-dtags -o $@ $^ $(POD_LIBS)
endif

# The image, FROM scratch, built by podman without any registry (deploy/image.sh; docs/deploy.md
# says why scratch): rdmak:VERSION in podman's store, and $(BUILD)/image/*.oci.tar for
# `ctr images import` or `podman load` on nodes that no registry reaches.
IMAGE    ?= rdmak:$(VERSION)
PODMAN   ?= podman
# Reproducible: one commit gives one image digest (deploy/image.sh; SOURCE_DATE_EPOCH defaults to
# the commit's time), which needs binaries that do not name the folder they were built in
# (-ffile-prefix-map, in CFLAGS).
IMAGE_REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
IMAGE_SOURCE   ?= $(shell git config --get remote.origin.url 2>/dev/null)
image: $(BUILD)/reloc/rdmak $(BUILD)/reloc/rdmak-cni
	PODMAN='$(PODMAN)' IMAGE_VERSION='$(VERSION)' IMAGE_REVISION='$(IMAGE_REVISION)' \
		IMAGE_SOURCE='$(IMAGE_SOURCE)' \
		deploy/image.sh $(BUILD)/reloc/rdmak $(BUILD)/image $(IMAGE) $(BUILD)/reloc/rdmak-cni
.PHONY: image

# The libcni driver of the CNI tests and benchmarks (tests/cni-driver): Debian's Go and libcni
# (golang-github-appc-cni-dev) in GOPATH mode, offline, no cgo. Without Go, the CNI tests skip.
GO       ?= go
GO_ENV   := GOPATH=/usr/share/gocode GO111MODULE=off GOFLAGS= CGO_ENABLED=0 GOCACHE=$(abspath $(BUILD))/go-cache
DRIVER   := $(if $(shell command -v $(GO) 2>/dev/null),$(BUILD)/tests/cni-driver)
$(BUILD)/tests/cni-driver: $(wildcard tests/cni-driver/*.go)
	@mkdir -p $(dir $@)
	$(call msg,GO,$@)
	$(Q)$(GO_ENV) $(GO) build -o $@ ./tests/cni-driver

# What the suites run, by kind: tests/run.sh builds only the kinds its selected suites use (one
# unit test builds its own binary; a command or js suite gets what its files name: helpers,
# seams, the driver, the relocated binaries, the fuzz harnesses) and `tests` for the whole suite.
tests-base: $(BUILD)/rdmak $(BUILD)/cni/rdmak-cni $(BUILD)/cni/rdmak-ipam $(BUILD)/man/.stamp \
            $(BUILD)/make.vars examples/nodes/.stamp
tests-unit: $(UNIT_BIN)
tests-helpers: $(HELPER_BIN) $(BUILD)/tools/read_floor $(BUILD)/tools/replay_floor
tests-fuzz: $(FUZZ_BIN)
tests-driver: $(DRIVER)
tests-seams: $(SEAMS)/rdmak $(SEAMS)/cni/rdmak-cni $(SEAMS)/cni/rdmak-ipam
tests-reloc: $(BUILD)/reloc/rdmak $(BUILD)/reloc/rdmak-cni
tests: tests-base tests-unit tests-helpers tests-fuzz tests-driver tests-seams tests-reloc
.PHONY: tests-base tests-unit tests-helpers tests-fuzz tests-driver tests-seams tests-reloc

# How this build directory was made, so that tests/run.sh can bring it up to date with the same
# compiler and sanitizers before running one test (`tests/run.sh build/san-gcc cmd/list`).
$(BUILD)/make.vars: FORCE
	@mkdir -p $(dir $@)
	@v='CC=$(CC) SAN=$(SAN)'; [ "$$(cat $@ 2>/dev/null)" = "$$v" ] || echo "$$v" >$@
FORCE:

# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer. The plain build is made
# too: the CNI reliability test runs its exec'd ADD/DEL cycles on it (PLAIN_BUILD), where the
# sanitizers' start-up of four processes per cycle would take tens of minutes (tests/cmd/cni_reliability.sh).
# make check runs 2 000 of them (~3 min of two cores); make soak runs that test alone with the
# 10 000 cycles of issue 7 (~13 min), which would put each make check past 30 minutes.
# The builds use every CPU unless make was given -j itself (its jobserver then serves them); the
# suites run side by side, JOBS at a time (tests/run.sh: default the number of CPUs).
NPROC    := $(shell nproc 2>/dev/null || echo 2)
SUBJ     := $(if $(findstring -j,$(MAKEFLAGS))$(findstring --jobserver,$(MAKEFLAGS)),,-j$(NPROC))
check: examples/nodes/.stamp
	$(MAKE) $(SUBJ) all
	$(MAKE) $(SUBJ) SAN=1 BUILD=build/san-$(notdir $(CC)) tests
	PLAIN_BUILD=$(abspath $(BUILD)) tests/run.sh build/san-$(notdir $(CC))

# The live-kernel tests alone (tests/vm: Debian's kernel under qemu with soft-RoCE, one boot for
# all of them), on the plain build; make check runs them too, on the sanitized one.
check-vm: all $(BUILD)/tests/helpers/nl_rdma_cli
	tests/run.sh $(BUILD) vm/

soak: examples/nodes/.stamp
	$(MAKE) all
	$(MAKE) SAN=1 BUILD=build/san-$(notdir $(CC)) tests
	CNI_CYCLES=10000 PLAIN_BUILD=$(abspath $(BUILD)) tests/run.sh build/san-$(notdir $(CC)) cmd/cni_reliability

# Issue 21's 1000 partition churns (ADD/DEL with kill -9 and a UFM outage, tests/cmd/cni_fabric_churn.sh)
# on the plain build: make check runs the same test on the sanitizer build for 35 s (docs/fabric.md).
soak-fabric: examples/nodes/.stamp
	$(MAKE) all
	CHURN_MAX=1000 CHURN_MIN=1000 CHURN_SECONDS=3600 tests/run.sh $(BUILD) cmd/cni_fabric_churn
.PHONY: soak-fabric

# The README's first command ends here: the main job on the bundled A100 sample node.
demo: all
	@echo '$$ rdmak list --root examples/nodes/a100-ib-bond'
	@$(BUILD)/rdmak list --root examples/nodes/a100-ib-bond
	@echo
	@echo '$$ rdmak list --root examples/nodes/a100-ib-bond --format ibdev2netdev'
	@$(BUILD)/rdmak list --root examples/nodes/a100-ib-bond --format ibdev2netdev
	@echo
	@echo '$$ rdmak plugin --dry-run --root examples/nodes/a100-ib-bond --config examples/plugin/shared-seed003.json'
	@$(BUILD)/rdmak plugin --dry-run --root examples/nodes/a100-ib-bond --config examples/plugin/shared-seed003.json
	@echo
	@echo '$$ rdmak doctor --root examples/nodes/a100-ib-bond'
	@$(BUILD)/rdmak doctor --root examples/nodes/a100-ib-bond || true

# The floor `rdmak list` is measured against in make bench: it links the C library only.
$(BUILD)/tools/read_floor: tools/read_floor.c
	@mkdir -p $(dir $@)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $<

# Its second floor: rdmak list's own file system calls, replayed by one process (tools/bench.py).
$(BUILD)/tools/replay_floor: tools/replay_floor.c
	@mkdir -p $(dir $@)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $<

# The runtime's side of the exec'd IPAM benchmark (tools/bench-ipam-etcd.sh): spawn, pipe, wait.
$(BUILD)/tools/exec_loop: tools/exec_loop.c
	@mkdir -p $(dir $@)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -pthread -o $@ $<

# The floor of the exporter's per-namespace work (tools/bench-exporter.sh): the same system calls.
$(BUILD)/tools/netns_floor: tools/netns_floor.c
	@mkdir -p $(dir $@)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $<

bench: all $(DRIVER) $(BUILD)/tests/helpers/ipam_stress $(BUILD)/tests/helpers/nl_floor $(BUILD)/tools/read_floor \
       $(BUILD)/tools/replay_floor $(BUILD)/tools/exec_loop $(BUILD)/tools/netns_floor
	tools/bench.sh $(BUILD)

# rdmak in $(PREFIX)/bin; the CNI plugins (the per-pod binary) as hard links of one copy in
# $(CNIDIR), which runtimes exec by name and which a DaemonSet copies as files (symlinks would
# dangle there). Their rdmak-ipam execs $(PREFIX)/bin/rdmak for an etcd store (tests/cmd/install.sh).
install: $(BUILD)/rdmak $(BUILD)/cni/rdmak-cni $(BUILD)/man/.stamp
	install -D -m 0755 $(BUILD)/rdmak $(DESTDIR)$(PREFIX)/bin/rdmak
	install -D -m 0755 $(BUILD)/cni/rdmak-cni $(DESTDIR)$(CNIDIR)/rdmak-cni
	ln -f $(DESTDIR)$(CNIDIR)/rdmak-cni $(DESTDIR)$(CNIDIR)/rdmak-ipam
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0644 $(BUILD)/man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/

fuzz:
	$(MAKE) -C tests/fuzz BUILD=../../build/fuzz

# compile_commands.json, for clangd and clang-tidy: bear records a build of every object of src/
# in $(BUILD)/cc (the build you have is left alone; the generated headers the commands name stay
# there). Made again when the Makefile or the list of sources changes.
$(BUILD)/sources.list: FORCE
	@mkdir -p $(dir $@)
	@v='$(sort $(LIB_SRC) $(PROTOS))'; [ "$$(cat $@ 2>/dev/null)" = "$$v" ] || echo "$$v" >$@
compile_commands.json: Makefile $(BUILD)/sources.list
	$(call msg,BEAR,$@)
	$(Q)rm -rf $(BUILD)/cc && bear --output $@ -- $(MAKE) --no-print-directory -s BUILD=$(BUILD)/cc \
		$(BUILD)/cc/librdmak.a $(BUILD)/cc/obj/main.o $(BUILD)/cc/obj/pod.o

# The clang static analyzer over src/ (tools/analyze.sh: the checks in .clang-tidy, the findings
# that are not faults in tools/analyze.supp, each with its reason). Fails on any other finding.
analyze: compile_commands.json
	tools/analyze.sh $<

clean:
	rm -rf build examples/nodes compile_commands.json

.PHONY: all tests check check-vm soak demo bench fuzz clean install analyze FORCE
# generated sources are not intermediates to delete: every object depends on their headers
.SECONDARY: $(PROTO_C) $(PROTO_H)
-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
