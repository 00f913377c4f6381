# podvisor — see README.md. `make demo` and `make test` are the two commands
# a newcomer needs; both install what is missing first (as root).

SHELL := /bin/bash
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/podvisor/podvisor/internal/version.Version=$(VERSION)
CONTAINERD2_VERSION ?= v2.4.2
CONTAINERD2_DIR := $(CURDIR)/.cache/containerd-$(CONTAINERD2_VERSION)
# A runc with idmapped mounts (1.2 or later; Debian 12's is 1.1), built
# from its Go module: the containerd-2 run's TestUserNamespaces runs it as
# a runtime class to mount a pod's volumes in its user namespace. 1.5
# still runs on cgroup v1 (deprecated, not removed).
RUNC_NEW_VERSION ?= v1.5.3
RUNC_NEW_DIR := $(CURDIR)/.cache/runc-$(RUNC_NEW_VERSION)
# The control plane the mirror tests run (test/controlplane), built by
# the test-only module test/controlplane/build; the product never depends on it.
CONTROLPLANE_VERSION := v1.37.2
CONTROLPLANE_DIR := $(CURDIR)/.cache/controlplane-$(CONTROLPLANE_VERSION)
CONTROLPLANE_BINS := kube-apiserver kube-controller-manager kube-scheduler kubeadm kubectl etcd
CONTROLPLANE_IMAGES := kube-apiserver kube-controller-manager kube-scheduler etcd
CONTROLPLANE_LOG := $(CURDIR)/.cache/controlplane-build.log
# What Kubernetes' own build stamps (hack/lib/version.sh): kubeadm and
# the apiserver report v1.37.2, not v0.0.0-master.
CONTROLPLANE_LDFLAGS := -s -w $(foreach p,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
	-X $(p).gitVersion=$(CONTROLPLANE_VERSION) -X $(p).gitMajor=1 -X $(p).gitMinor=37 -X $(p).gitTreeState=clean)
DEBS := containerd runc crun containernetworking-plugins busybox-static iptables iproute2 docker-registry apache2-utils dbus-daemon e2fsprogs btrfs-progs libseccomp-dev pkg-config mount
# make install: PREFIX/bin gets the binaries, UNITDIR the unit, MANDIR/man1
# the man pages, the three *COMPDIR the shells' completion scripts, all
# under DESTDIR when set (for packaging).
PREFIX ?= /usr/local
UNITDIR ?= /etc/systemd/system
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
DESTDIR ?=
DEMO_DIR ?= /var/lib/podvisor-demo
DEMO_RUN ?= /run/podvisor-demo
# The built-in network's bridge (cni.BuiltinBridge).
BUILTIN_BRIDGE := podvisor0
export CGO_ENABLED := 0
comma := ,

.PHONY: install
.PHONY: all build deps image lint test test-unit test-e2e test-containerd2 testsum faults containerd2 runc-new controlplane demo demo-clean bench fuzz clean

all: build

# podvisor and its log driver (which the shims start once per container,
# and which is the pod init of a pod sharing its process namespace;
# podvisor uses it when it sits beside podvisor), and probetarget, the probe
# tests' target (test/probetarget): test/testenv puts it in the test
# image at /bin/probetarget, building its own unless
# PODVISOR_TEST_PROBETARGET names one (e.g. $(CURDIR)/bin/probetarget).
build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/podvisor ./cmd/podvisor
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/podvisor-log-driver ./cmd/podvisor-log-driver
	$(GO) build -trimpath -ldflags '-s -w' -o bin/probetarget ./test/probetarget

# podvisor, its log driver and the systemd unit (examples/podvisor.service,
# its ExecStart pointed at $(PREFIX)/bin/podvisor); the man pages
# (podvisor.1 and one per command) and the bash, zsh and fish completion
# scripts, each written by the podvisor just built (the hidden `podvisor
# docs man DIR`, cobra's `podvisor completion SHELL`) into bin/share first;
# systemd is told only when it runs and nothing is staged in DESTDIR.
install: build
	rm -rf bin/share; mkdir -p bin/share/completions
	bin/podvisor docs man bin/share/man1
	for sh in bash zsh fish; do bin/podvisor completion $$sh >bin/share/completions/$$sh || exit 1; done
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(UNITDIR) $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)
	install -m 0755 bin/podvisor bin/podvisor-log-driver $(DESTDIR)$(PREFIX)/bin/
	sed 's|^ExecStart=/usr/local/bin/podvisor |ExecStart=$(PREFIX)/bin/podvisor |' examples/podvisor.service >$(DESTDIR)$(UNITDIR)/podvisor.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/podvisor.service
	install -m 0644 bin/share/man1/*.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 bin/share/completions/bash $(DESTDIR)$(BASHCOMPDIR)/podvisor
	install -m 0644 bin/share/completions/zsh $(DESTDIR)$(ZSHCOMPDIR)/_podvisor
	install -m 0644 bin/share/completions/fish $(DESTDIR)$(FISHCOMPDIR)/podvisor.fish
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload; \
	else echo "not running systemctl daemon-reload (DESTDIR set, or systemd not running)"; fi

# Debian packages the tests and the demo use, installed only when missing.
deps:
	@missing=""; for p in $(DEBS); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
	$(GO) mod download

# The example image: busybox-static in an OCI archive, no registry needed.
image: examples/images/busybox.tar
examples/images/busybox.tar:
	$(GO) run ./test/mkimage -o $@ -ref docker.io/library/busybox:latest

lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Everything: lint, unit tests, fuzz seeds, end-to-end tests against the
# Debian containerd 1.6 and against containerd 2.x built from its module,
# the control-plane tests against the control plane built from the
# Kubernetes and etcd modules. The control plane builds (niced) in the
# background while every test that needs it not runs: the first run, with
# an empty Go build cache, spends most of its time building it.
#
# None of the end-to-end tests may pass by skipping: these targets set
# PODVISOR_E2E_REQUIRED, and a missing root, containerd, runc, CNI plugin,
# busybox or built control plane fails them, naming it (test/prereq; a
# plain go test skips). Each run goes through test/testsum (go test -json):
# go test's own lines, a failed package's full output, every package's
# full output in $(TEST_RESULTS)/logs; at the end the end-to-end packages'
# counts of top-level tests, the skipped tests and, last, "N passed, N
# failed, N skipped" (a skip fails make test).
CONTROLPLANE_TESTS := ^(TestMirror|TestMirrorLocalObjects|TestKubeadmControlPlane|TestControlPlane|TestClientCertificateRotation)$$
# End-to-end tests of podvisor's own logic that no containerd version can
# change (the writes at rest, node shutdown through logind, pressure
# eviction, local volumes, devices, sysctls and seccomp profiles put in
# the spec podvisor writes): they run once, against the Debian containerd, which keeps
# make test inside CI's time.
ONCE_TESTS := ^(TestFlashIdle|TestServiceAccountName|TestMountPropagation|TestImagesArchiveThroughLinkRefused|TestSecretLeak|TestSecretManifestPermissions|TestGracefulNodeShutdown|TestGracefulNodeShutdownForgedSignals|TestFSGroupEscape|TestRolloutUndoRootOnly|TestLogsFollowFastRotation|TestLogsSymlinkRefused|TestAuthHardeningRefusedAtStart|TestAuthHardeningClientCAReload|TestRemoteSessionsLeaveRootsSocket|TestDiskPressureEviction|TestDiskPressureReclaimsFirst|TestMemoryPressureEviction|TestInsecureManifestRefused|TestTLSSelfSignedServing|TestPodWaitFor|TestDescribeStuck|TestDoctor|TestRollout|TestPersistentVolumeClaims|TestActiveDeadline|TestSubPathExpr|TestSetHostnameAsFQDN|TestContainerRestartRules|TestRestartAllContainers|TestCDIDevices|TestSysctls|TestSeccompLocalhost|TestHostnameOverride|TestSELinuxOptions|TestEnvFiles|TestClaimQuotaBtrfs|TestBlockVolumes)$$
# A test binary's bound: the e2e package takes 12-16 minutes on 2 cores
# with the control plane building beside it; a wedged test still ends.
TEST_TIMEOUT := 30m
TEST_RESULTS := $(CURDIR)/.cache/test-results
TESTSUM := $(CURDIR)/.cache/testsum
E2E_PKGS := test/e2e,supervise/containerd,test/controlplane
# test-containerd2 alone starts a fresh $(TEST_RESULTS) and prints its
# summary; make test runs it with TEST_SUMMARY empty and prints one for all.
TEST_SUMMARY := yes
test test-e2e test-containerd2 faults: export PODVISOR_E2E_REQUIRED := 1
# Built each time (go's cache makes it quick), run as a binary: go run
# would add its own "exit status 1" after the summary's last line.
testsum:
	@mkdir -p $(dir $(TESTSUM)); $(GO) build -o $(TESTSUM) ./test/testsum
test: deps lint testsum
	@rm -rf $(TEST_RESULTS); mkdir -p $(TEST_RESULTS)
	@echo "building the control plane in the background (log: $(CONTROLPLANE_LOG))"
	@mkdir -p $(dir $(CONTROLPLANE_LOG)); $(MAKE) --no-print-directory controlplane >$(CONTROLPLANE_LOG) 2>&1 & cp=$$!; \
	set -o pipefail; rc=0; $(MAKE) --no-print-directory test-containerd2 TEST_SUMMARY= || { rc=1; \
		grep -qs '^containerd 2	' $(TEST_RESULTS)/counts.tsv || \
		printf 'containerd 2 (not run)\ttest/e2e\t0\t1\t0\tFAIL\n' >>$(TEST_RESULTS)/counts.tsv; }; \
	echo "== all packages; end-to-end tests against the Debian containerd"; \
	$(GO) test -json -count=1 -timeout $(TEST_TIMEOUT) -skip '$(CONTROLPLANE_TESTS)' ./... \
		| $(TESTSUM) -label 'containerd 1.6' -results $(TEST_RESULTS) || rc=1; \
	echo "waiting for the control plane build"; \
	if wait $$cp; then \
		echo "== control-plane tests against the Debian containerd"; \
		PODVISOR_TEST_CONTROLPLANE=$(CONTROLPLANE_DIR) $(GO) test -json -count=1 -timeout $(TEST_TIMEOUT) -run '$(CONTROLPLANE_TESTS)' ./test/controlplane ./test/e2e \
			| $(TESTSUM) -label 'control plane' -results $(TEST_RESULTS) || rc=1; \
	else \
		cat $(CONTROLPLANE_LOG); rc=1; \
		printf 'control plane (not built)\ttest/controlplane\t0\t1\t0\tFAIL\n' >>$(TEST_RESULTS)/counts.tsv; \
	fi; \
	$(TESTSUM) -summary -results $(TEST_RESULTS) -e2e $(E2E_PKGS) || rc=1; \
	exit $$rc

test-unit:
	$(GO) test -count=1 $$($(GO) list ./... | grep -v /test/e2e)

test-e2e:
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -v ./test/e2e

# The control-plane tests (TestMirror, TestMirrorLocalObjects, TestKubeadmControlPlane) test the
# link to an apiserver, not the runtime: they run once, against the Debian
# containerd, which keeps `make test` well inside CI's time.
test-containerd2: containerd2 runc-new testsum
	@$(if $(TEST_SUMMARY),rm -rf $(TEST_RESULTS);) mkdir -p $(TEST_RESULTS)
	@echo "== end-to-end tests against containerd $(CONTAINERD2_VERSION) ($(CONTAINERD2_DIR))"
	@set -o pipefail; rc=0; \
	PODVISOR_TEST_CONTAINERD=$(CONTAINERD2_DIR) PODVISOR_TEST_RUNC=$(RUNC_NEW_DIR)/runc $(GO) test -json -count=1 -timeout $(TEST_TIMEOUT) -skip '$(CONTROLPLANE_TESTS)|$(ONCE_TESTS)' ./test/e2e ./supervise/containerd \
		| $(TESTSUM) -label 'containerd 2' -results $(TEST_RESULTS) || rc=1; \
	$(if $(TEST_SUMMARY),$(TESTSUM) -summary -results $(TEST_RESULTS) -e2e $(E2E_PKGS) || rc=1;) \
	exit $$rc

# The fault-injection tests (TestFault*: a hanging CNI plugin, podvisor
# stopped in the middle of removals, starts and an import, containerd held
# down), against the Debian containerd 1.6 and then containerd 2.x. It
# prints what each test checked (or why it failed) and its result; the full
# output of a failed run stays in the file it names. Like test-e2e, it fails
# naming what is missing rather than skip (PODVISOR_E2E_REQUIRED).
# TestFaultKillDuringStarts runs FAULT_REPEAT times against each (its
# binary bounded at 8 minutes a run): the shim a kill -9 during starts left
# behind showed in one run of two.
FAULT_REPEAT ?= 5
FAULT_REPEATED := ^TestFaultKillDuringStarts$$
faults: deps containerd2
	@rc=0; for ctrd in "" "$(CONTAINERD2_DIR)"; do \
		for pass in once repeated; do \
		log=$$(mktemp); st=0; \
		if [ $$pass = once ]; then sel="-count=1 -run TestFault -skip $(FAULT_REPEATED) -timeout $(TEST_TIMEOUT)"; what="fault tests"; \
		else sel="-count=$(FAULT_REPEAT) -run $(FAULT_REPEATED) -timeout $$(( $(FAULT_REPEAT) * 8 ))m"; what="TestFaultKillDuringStarts $(FAULT_REPEAT) times"; fi; \
		echo "== $$what against $${ctrd:-the Debian containerd}"; \
		PODVISOR_TEST_CONTAINERD=$$ctrd $(GO) test $$sel -v ./test/e2e >$$log 2>&1 || st=1; \
		grep -E '^testenv: |^end-to-end test environment incomplete|^  - |^ +faults[a-z_]*_test\.go:[0-9]+: |^ *--- (PASS|FAIL|SKIP)|^(ok|FAIL)[[:space:]]' $$log \
			| sed -E 's/^( +)faults[a-z_]*_test\.go:[0-9]+: /\1/'; \
		if [ $$st = 0 ]; then rm -f $$log; else rc=1; echo "full output: $$log"; fi; \
		done; \
	done; exit $$rc

# containerd 2.x and its own shim, built from the Go module (static).
containerd2: $(CONTAINERD2_DIR)/containerd
$(CONTAINERD2_DIR)/containerd:
	mkdir -p $(CONTAINERD2_DIR)
	GOBIN=$(CONTAINERD2_DIR) GOFLAGS= $(GO) install \
		github.com/containerd/containerd/v2/cmd/containerd@$(CONTAINERD2_VERSION) \
		github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$(CONTAINERD2_VERSION)

# runc $(RUNC_NEW_VERSION) from its Go module, as its own Makefile builds it:
# cgo with libseccomp (libseccomp-dev, pkg-config: make deps), build tag
# seccomp; bounded at 10 minutes, built only when missing, and kept only
# when `runc features` lists idmapped mounts.
runc-new: $(RUNC_NEW_DIR)/runc
$(RUNC_NEW_DIR)/runc:
	mkdir -p $(RUNC_NEW_DIR)
	GOBIN=$(RUNC_NEW_DIR) GOFLAGS= CGO_ENABLED=1 timeout 10m $(GO) install -trimpath -tags seccomp \
		github.com/opencontainers/runc@$(RUNC_NEW_VERSION)
	@$@ features | tr -d ' \n' | grep -q '"idmap":{"enabled":true}' \
		|| { echo "$@ features: no idmapped mounts (mountExtensions.idmap.enabled)"; rm -f $@; exit 1; }

# kube-apiserver, kube-controller-manager, kube-scheduler, kubeadm, kubectl
# and etcd, static, from test/controlplane/build in one go build (one shared
# compilation), niced so that tests running beside it keep their timing;
# then their images, named as kubeadm's manifests name them, in
# $(CONTROLPLANE_DIR)/images. Each step runs only when its output is
# missing.
controlplane: $(addprefix $(CONTROLPLANE_DIR)/images/,$(addsuffix .tar,$(CONTROLPLANE_IMAGES)))
$(addprefix $(CONTROLPLANE_DIR)/,$(CONTROLPLANE_BINS)) &:
	@echo "building $(subst $(eval) ,$(comma) ,$(CONTROLPLANE_BINS)) $(CONTROLPLANE_VERSION) into $(CONTROLPLANE_DIR)"
	@echo "(first run, with an empty Go build cache: about 20 CPU-minutes, some 12 minutes on 2 idle cores; later runs reuse the cache and take well under a minute)"
	mkdir -p $(CONTROLPLANE_DIR)
	cd test/controlplane/build && GOWORK=off GOFLAGS=-buildvcs=false nice -n 19 $(GO) build -trimpath \
		-ldflags '$(CONTROLPLANE_LDFLAGS)' -o $(CONTROLPLANE_DIR)/ \
		$(addprefix k8s.io/kubernetes/cmd/,$(filter-out etcd,$(CONTROLPLANE_BINS))) ./cmd/etcd
$(CONTROLPLANE_DIR)/images/etcd.tar: $(CONTROLPLANE_DIR)/etcd
	@echo "image registry.k8s.io/etcd:3.7.0-0 -> $@"
	@nice -n 19 $(GO) run ./test/mkimage -o $@ -ref registry.k8s.io/etcd:3.7.0-0 -file /usr/local/bin/etcd=$<
$(CONTROLPLANE_DIR)/images/kube-%.tar: $(CONTROLPLANE_DIR)/kube-%
	@echo "image registry.k8s.io/kube-$*:$(CONTROLPLANE_VERSION) -> $@"
	@nice -n 19 $(GO) run ./test/mkimage -o $@ -ref registry.k8s.io/kube-$*:$(CONTROLPLANE_VERSION) -file /usr/local/bin/kube-$*=$<

# The demo: podvisor in the foreground on examples/ with a private
# containerd (DEMO_CONTAINERD, default the one in PATH), its own containerd
# namespace and cgroup parent podvisor-demo, and the built-in network
# (bridge podvisor0, 10.88.0.0/16). Ctrl-C stops podvisor, not the pods;
# `make demo-clean` removes them and everything else of the demo.
DEMO_NS := podvisor-demo
DEMO_CONTAINERD ?= containerd
DEMO_SOCK := $(DEMO_RUN)/podvisor.sock
# Where podvisor and podvisor-log-driver are: bin/ (built by make build)
# unless given, as the demo's end-to-end test gives its own build.
DEMO_BIN ?= bin
DEMO_ARGS = --images-dir examples/images --embedded-containerd --containerd-binary $(DEMO_CONTAINERD) \
	--containerd-namespace $(DEMO_NS) --state-dir $(DEMO_DIR)/state --run-dir $(DEMO_RUN) \
	--log-dir $(DEMO_DIR)/logs --cni-conf-dir $(DEMO_DIR)/cni
# How long make demo waits for the web pod, and demo-clean for the removal.
DEMO_WAIT := 180

demo:
	@echo "==> make demo 1/4: Debian packages $(DEBS) (only those missing)"
	@$(MAKE) --no-print-directory deps
ifeq ($(DEMO_BIN),bin)
	@echo "==> make demo 2/4: building bin/podvisor and bin/podvisor-log-driver"
	@echo "    (the first build compiles containerd's client and Kubernetes' API types: several minutes on 2 cores; later builds take seconds)"
	@$(MAKE) --no-print-directory build
else
	@echo "==> make demo 2/4: using the podvisor in $(DEMO_BIN) (DEMO_BIN), not building one"
endif
	@echo "==> make demo 3/4: the example image examples/images/busybox.tar (from Debian's busybox-static, no registry)"
	@$(MAKE) -s --no-print-directory image
	@echo "==> make demo 4/4: podvisor on examples/ with a private containerd; waiting for the web pod"
	@mkdir -p $(DEMO_DIR)/cni
	@$(DEMO_BIN)/podvisor run --manifests examples $(DEMO_ARGS) & pv=$$!; \
	trap 'kill -INT $$pv 2>/dev/null' INT TERM; \
	ip=""; end=$$(( $$(date +%s) + $(DEMO_WAIT) )); \
	while kill -0 $$pv 2>/dev/null && [ $$(date +%s) -lt $$end ]; do \
		json=$$(timeout 10 $(DEMO_BIN)/podvisor get pods web -o json --socket $(DEMO_SOCK) 2>/dev/null); \
		if printf '%s' "$$json" | grep -q '"phase": "Running"'; then \
			ip=$$(printf '%s' "$$json" | sed -n 's/.*"podIP": "\([^"]*\)".*/\1/p' | head -n 1); \
			[ -n "$$ip" ] && break; \
		fi; \
		sleep 0.5; \
	done; \
	if [ -n "$$ip" ]; then \
		echo; \
		echo "==> the web pod runs: curl http://$$ip/"; \
		echo "    $(DEMO_BIN)/podvisor --socket $(DEMO_SOCK) get pods -o wide"; \
		echo "    tail -f $(DEMO_DIR)/logs/default_counter-*/counter/0.log"; \
		echo "    Ctrl-C stops podvisor (the pods keep running); make demo-clean then removes everything of the demo"; \
		echo; \
	elif kill -0 $$pv 2>/dev/null; then \
		echo "==> the web pod is not running after $(DEMO_WAIT)s: $(DEMO_BIN)/podvisor --socket $(DEMO_SOCK) describe pod web says why"; \
	fi; \
	wait $$pv; rc=$$?; \
	while kill -0 $$pv 2>/dev/null; do wait $$pv; rc=$$?; done; \
	[ $$rc = 0 ] || [ $$rc = 130 ] || exit $$rc

# Removes everything of the demo, and only the demo's: refuses while it
# runs; stops and removes its pods (podvisor --exit-when-empty on an empty
# manifests dir), then its containerd; then the podvisor0 bridge (with its
# address and route) unless something else is attached to it, the demo's
# cgroups, mounts and directories.
demo-clean:
	@lock=$(DEMO_DIR)/state/podvisor.lock; \
	if [ -f $$lock ] && ! flock -n $$lock true; then \
		pid=$$(cat $$lock); \
		echo "make demo-clean: the demo is running (podvisor pid $$pid, state dir $(DEMO_DIR)/state)."; \
		echo "Stop it first: Ctrl-C in the terminal of make demo, or kill -INT $$pid; then run make demo-clean again."; \
		exit 1; \
	fi
ifeq ($(DEMO_BIN),bin)
	@$(MAKE) --no-print-directory build >/dev/null
endif
	@if [ -d $(DEMO_DIR)/state ]; then \
		echo "==> stopping and removing the demo's pods"; \
		mkdir -p $(DEMO_DIR)/empty; \
		timeout --signal=INT $(DEMO_WAIT) $(DEMO_BIN)/podvisor run --manifests $(DEMO_DIR)/empty --exit-when-empty $(DEMO_ARGS) --log-level warn \
			|| { echo "make demo-clean: the demo's pods were not all removed (podvisor exited with status $$?); nothing else was touched"; exit 1; }; \
	fi
	@pidf=$(DEMO_RUN)/containerd/containerd.pid; \
	if [ -f $$pidf ] && pid=$$(cat $$pidf) && grep -qa "$(DEMO_RUN)/containerd/config.toml" /proc/$$pid/cmdline 2>/dev/null; then \
		echo "==> stopping the demo's containerd (pid $$pid)"; \
		kill -TERM $$pid; \
		for i in $$(seq 1 100); do [ -d /proc/$$pid ] || break; sleep 0.1; done; \
		if [ -d /proc/$$pid ]; then kill -KILL $$pid; fi; \
	fi
	@# [/]: the pattern must not match this shell's own command line.
	@left=$$(pgrep -f -- "[/]($(patsubst /%,%,$(DEMO_RUN))|$(patsubst /%,%,$(DEMO_DIR)))/" || true); \
	if [ -n "$$left" ]; then echo "==> stopping processes of the demo still running: $$left"; kill -KILL $$left 2>/dev/null || true; fi
	@for m in $$(findmnt -rn -o TARGET | grep -E '^($(DEMO_DIR)|$(DEMO_RUN))(/|$$)' | sort -r); do umount -l "$$m"; done
	@if ip link show $(BUILTIN_BRIDGE) >/dev/null 2>&1; then \
		if [ -n "$$(ip -o link show master $(BUILTIN_BRIDGE))" ]; then \
			echo "==> leaving the bridge $(BUILTIN_BRIDGE): other interfaces are attached to it (not the demo's)"; \
		else \
			echo "==> removing the bridge $(BUILTIN_BRIDGE) with its address and route"; \
			ip link del $(BUILTIN_BRIDGE); \
		fi; \
	fi
	@for cg in /sys/fs/cgroup/$(DEMO_NS) /sys/fs/cgroup/*/$(DEMO_NS) /sys/fs/cgroup/$(DEMO_NS)-containerd /sys/fs/cgroup/*/$(DEMO_NS)-containerd; do \
		[ -d $$cg ] && find $$cg -depth -type d -exec rmdir {} + ; \
	done; true
	@rm -rf $(DEMO_DIR) $(DEMO_RUN)
	@echo "==> nothing of the demo is left: no pods, containerd, bridge, cgroups, mounts, $(DEMO_DIR) or $(DEMO_RUN)"

# Start-up latency and footprint beside a direct-containerd baseline and
# the floor (a new container alone), for 1, 30 and 110 pods, run twice:
# against a baseline that logs its containers' output through the same log
# driver (the same work), then against one that discards it; each run also
# times the first restart after kill -9 against the floor's new container,
# and the first podvisor at rest with 110 pods (30 s). Then the probes'
# cost: podvisor's CPU with 30 pods probed every second by httpGet and by
# exec, beside the same pods without probes (30 s each). Then, against the
# control plane `make controlplane` builds: manifest written → mirror pod
# Ready in the apiserver, and the kubeadm control plane from cold →
# /readyz and → four mirror pods Running 1/1 against the floor its
# manifests set. Then 30 pods at rest, a minute after they are Ready, over
# 2-minute windows: without an apiserver (podvisor's writes to disk, CPU,
# memory and wake-ups) and with --kubeconfig against a live apiserver (its
# requests, CPU, memory and wake-ups, lease renewals included). About 20
# minutes on 2 idle cores (an estimate from its phases; it prints its time).
BENCH_T0 := $(CURDIR)/.cache/bench-t0
bench: export PODVISOR_TEST_PROBETARGET := $(CURDIR)/bin/probetarget
bench: export PODVISOR_TEST_CONTROLPLANE := $(CONTROLPLANE_DIR)
bench: deps build controlplane
	@mkdir -p $(dir $(BENCH_T0)); date +%s >$(BENCH_T0)
	$(GO) run ./test/bench -podvisor bin/podvisor -baseline-log-driver -ctr ctr -sizes 1,30,110 -idle 30s
	$(GO) run ./test/bench -podvisor bin/podvisor -ctr ctr -idle 0
	$(GO) run ./test/bench -podvisor bin/podvisor -start=false -probes 30s
	$(GO) run ./test/bench -podvisor bin/podvisor -start=false -mirror
	$(GO) run ./test/bench -podvisor bin/podvisor -start=false -flash 2m
	$(GO) run ./test/bench -podvisor bin/podvisor -start=false -requests 2m -request-pods 30
	@echo "make bench took $$(( ($$(date +%s) - $$(cat $(BENCH_T0))) / 60 )) min $$(( ($$(date +%s) - $$(cat $(BENCH_T0))) % 60 )) s"

# Bounded fuzzing of the manifest decoder (make test runs the seeds).
fuzz:
	$(GO) test ./manifest -run '^$$' -fuzz FuzzParseFile -fuzztime 60s

clean:
	rm -rf bin examples/images .cache
