# podvisor — see README.md. `make demo` and `make test` are the two commands
# a newcomer needs; both install what is missing first (as root).

SHELL := /bin/bash
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/podvisor/podvisor/internal/version.Version=$(VERSION)
CONTAINERD2_VERSION ?= v2.4.2
CONTAINERD2_DIR := $(CURDIR)/.cache/containerd-$(CONTAINERD2_VERSION)
# The control plane the mirror tests run (internal/controlplane), built by
# the test-only module test/controlplane; the product never depends on it.
CONTROLPLANE_VERSION := v1.37.2
CONTROLPLANE_DIR := $(CURDIR)/.cache/controlplane-$(CONTROLPLANE_VERSION)
CONTROLPLANE_BINS := kube-apiserver kube-controller-manager kube-scheduler kubeadm kubectl etcd
CONTROLPLANE_IMAGES := kube-apiserver kube-controller-manager kube-scheduler etcd
CONTROLPLANE_LOG := $(CURDIR)/.cache/controlplane-build.log
# What Kubernetes' own build stamps (hack/lib/version.sh): kubeadm and
# the apiserver report v1.37.2, not v0.0.0-master.
CONTROLPLANE_LDFLAGS := -s -w $(foreach p,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
	-X $(p).gitVersion=$(CONTROLPLANE_VERSION) -X $(p).gitMajor=1 -X $(p).gitMinor=37 -X $(p).gitTreeState=clean)
DEBS := containerd runc containernetworking-plugins busybox-static iptables iproute2
# make install: PREFIX/bin gets the binaries, UNITDIR the unit, all under
# DESTDIR when set (for packaging).
PREFIX ?= /usr/local
UNITDIR ?= /etc/systemd/system
DESTDIR ?=
DEMO_DIR ?= /var/lib/podvisor-demo
DEMO_RUN ?= /run/podvisor-demo
export CGO_ENABLED := 0
comma := ,

.PHONY: install
.PHONY: all build deps image lint test test-unit test-e2e test-containerd2 faults containerd2 controlplane demo demo-clean bench fuzz clean

all: build

# podvisor and its log driver (which the shims start once per container;
# podvisor uses it when it sits beside podvisor), and probetarget, the probe
# tests' target (internal/probetarget): internal/testenv puts it in the test
# image at /bin/probetarget, building its own unless
# PODVISOR_TEST_PROBETARGET names one (e.g. $(CURDIR)/bin/probetarget).
build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/podvisor .
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/podvisor-log-driver ./cmd/podvisor-log-driver
	$(GO) build -trimpath -ldflags '-s -w' -o bin/probetarget ./internal/probetarget

# podvisor, its log driver and the systemd unit (examples/podvisor.service,
# its ExecStart pointed at $(PREFIX)/bin/podvisor); systemd is told only
# when it runs and nothing is staged in DESTDIR.
install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(UNITDIR)
	install -m 0755 bin/podvisor bin/podvisor-log-driver $(DESTDIR)$(PREFIX)/bin/
	sed 's|^ExecStart=/usr/local/bin/podvisor |ExecStart=$(PREFIX)/bin/podvisor |' examples/podvisor.service >$(DESTDIR)$(UNITDIR)/podvisor.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/podvisor.service
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
	$(GO) run ./internal/mkimage -o $@ -ref docker.io/library/busybox:latest

lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Everything: lint, unit tests, fuzz seeds, end-to-end tests against the
# Debian containerd 1.6 and against containerd 2.x built from its module,
# the control-plane tests against the control plane built from the
# Kubernetes and etcd modules. The control plane builds (niced) in the
# background while every test that needs it not runs: the first run, with
# an empty Go build cache, spends most of its time building it.
CONTROLPLANE_TESTS := ^(TestMirror|TestKubeadmControlPlane|TestControlPlane)$$
test: deps lint
	@echo "building the control plane in the background (log: $(CONTROLPLANE_LOG))"
	@mkdir -p $(dir $(CONTROLPLANE_LOG)); $(MAKE) --no-print-directory controlplane >$(CONTROLPLANE_LOG) 2>&1 & cp=$$!; \
	rc=0; $(MAKE) --no-print-directory test-containerd2 || rc=1; \
	$(GO) test -count=1 -skip '$(CONTROLPLANE_TESTS)' ./... || rc=1; \
	echo "waiting for the control plane build"; \
	if ! wait $$cp; then cat $(CONTROLPLANE_LOG); exit 1; fi; \
	PODVISOR_TEST_CONTROLPLANE=$(CONTROLPLANE_DIR) $(GO) test -count=1 -run '$(CONTROLPLANE_TESTS)' ./internal/controlplane ./internal/e2e || rc=1; \
	exit $$rc

test-unit:
	$(GO) test -count=1 $$($(GO) list ./... | grep -v /internal/e2e)

test-e2e:
	$(GO) test -count=1 -v ./internal/e2e

# The control-plane tests (TestMirror, TestKubeadmControlPlane) test the
# link to an apiserver, not the runtime: they run once, against the Debian
# containerd, which keeps `make test` well inside CI's time.
test-containerd2: containerd2
	PODVISOR_TEST_CONTAINERD=$(CONTAINERD2_DIR) $(GO) test -count=1 -skip '$(CONTROLPLANE_TESTS)' ./internal/e2e ./supervise/containerd

# The fault-injection tests (TestFault*: a hanging CNI plugin, podvisor
# stopped in the middle of removals, starts and an import, containerd held
# down), against the Debian containerd 1.6 and then containerd 2.x. It
# prints what each test checked (or why it failed) and its result; the full
# output of a failed run stays in the file it names.
faults: deps containerd2
	@rc=0; for ctrd in "" "$(CONTAINERD2_DIR)"; do \
		log=$$(mktemp); st=0; \
		echo "== fault tests against $${ctrd:-the Debian containerd}"; \
		PODVISOR_TEST_CONTAINERD=$$ctrd $(GO) test -count=1 -run 'TestFault' -v ./internal/e2e >$$log 2>&1 || st=1; \
		grep -E '^testenv: |^ +faults[a-z_]*_test\.go:[0-9]+: |^ *--- (PASS|FAIL|SKIP)|^(ok|FAIL)[[:space:]]' $$log \
			| sed -E 's/^( +)faults[a-z_]*_test\.go:[0-9]+: /\1/'; \
		if [ $$st = 0 ]; then rm -f $$log; else rc=1; echo "full output: $$log"; fi; \
	done; exit $$rc

# containerd 2.x and its own shim, built from the Go module (static).
containerd2: $(CONTAINERD2_DIR)/containerd
$(CONTAINERD2_DIR)/containerd:
	mkdir -p $(CONTAINERD2_DIR)
	GOBIN=$(CONTAINERD2_DIR) GOFLAGS= $(GO) install \
		github.com/containerd/containerd/v2/cmd/containerd@$(CONTAINERD2_VERSION) \
		github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$(CONTAINERD2_VERSION)

# kube-apiserver, kube-controller-manager, kube-scheduler, kubeadm, kubectl
# and etcd, static, from test/controlplane in one go build (one shared
# compilation), niced so that tests running beside it keep their timing;
# then their images, named as kubeadm's manifests name them, in
# $(CONTROLPLANE_DIR)/images. Each step runs only when its output is
# missing.
controlplane: $(addprefix $(CONTROLPLANE_DIR)/images/,$(addsuffix .tar,$(CONTROLPLANE_IMAGES)))
$(addprefix $(CONTROLPLANE_DIR)/,$(CONTROLPLANE_BINS)) &:
	@echo "building $(subst $(eval) ,$(comma) ,$(CONTROLPLANE_BINS)) $(CONTROLPLANE_VERSION) into $(CONTROLPLANE_DIR)"
	@echo "(first run, with an empty Go build cache: about 20 CPU-minutes, some 12 minutes on 2 idle cores; later runs reuse the cache and take well under a minute)"
	mkdir -p $(CONTROLPLANE_DIR)
	cd test/controlplane && GOWORK=off GOFLAGS=-buildvcs=false nice -n 19 $(GO) build -trimpath \
		-ldflags '$(CONTROLPLANE_LDFLAGS)' -o $(CONTROLPLANE_DIR)/ \
		$(addprefix k8s.io/kubernetes/cmd/,$(filter-out etcd,$(CONTROLPLANE_BINS))) ./cmd/etcd
$(CONTROLPLANE_DIR)/images/etcd.tar: $(CONTROLPLANE_DIR)/etcd
	@echo "image registry.k8s.io/etcd:3.7.0-0 -> $@"
	@nice -n 19 $(GO) run ./internal/mkimage -o $@ -ref registry.k8s.io/etcd:3.7.0-0 -file /usr/local/bin/etcd=$<
$(CONTROLPLANE_DIR)/images/kube-%.tar: $(CONTROLPLANE_DIR)/kube-%
	@echo "image registry.k8s.io/kube-$*:$(CONTROLPLANE_VERSION) -> $@"
	@nice -n 19 $(GO) run ./internal/mkimage -o $@ -ref registry.k8s.io/kube-$*:$(CONTROLPLANE_VERSION) -file /usr/local/bin/kube-$*=$<

# Runs podvisor in the foreground on examples/ with a private containerd.
# Ctrl-C stops podvisor, not the pods; `make demo-clean` removes them.
demo: deps build image
	@mkdir -p $(DEMO_DIR)/cni
	@echo
	@echo "podvisor is starting on examples/ (Ctrl-C stops podvisor; the pods keep running)."
	@echo "In another terminal:"
	@echo "  bin/podvisor get pods --socket $(DEMO_RUN)/podvisor.sock -o wide"
	@echo "  curl http://<IP of web-$$(hostname | tr A-Z a-z)>/"
	@echo "  tail -f $(DEMO_DIR)/logs/default_counter-*/counter/0.log"
	@echo
	bin/podvisor run --manifests examples --images-dir examples/images \
		--embedded-containerd --state-dir $(DEMO_DIR)/state --run-dir $(DEMO_RUN) \
		--log-dir $(DEMO_DIR)/logs --cni-conf-dir $(DEMO_DIR)/cni

# Stops the demo's pods (podvisor on an empty manifests dir), then its
# containerd.
demo-clean: build
	@mkdir -p $(DEMO_DIR)/empty
	bin/podvisor run --manifests $(DEMO_DIR)/empty --images-dir examples/images \
		--embedded-containerd --state-dir $(DEMO_DIR)/state --run-dir $(DEMO_RUN) \
		--log-dir $(DEMO_DIR)/logs --cni-conf-dir $(DEMO_DIR)/cni & pid=$$!; \
	for i in $$(seq 1 120); do \
		sleep 1; out=$$(bin/podvisor get pods --socket $(DEMO_RUN)/podvisor.sock 2>&1); \
		[ "$$out" = "No resources found" ] && break; \
	done; kill $$pid; wait $$pid
	-@[ -f $(DEMO_RUN)/containerd/containerd.pid ] && kill $$(cat $(DEMO_RUN)/containerd/containerd.pid)

# Start-up latency and footprint beside a direct-containerd baseline, run
# twice: against a baseline that logs its containers' output through the
# same log driver (the same work), then against one that discards it. Then
# the probes' cost: podvisor's CPU with 30 pods probed every second by
# httpGet and by exec, beside the same pods without probes (30 s each).
# Then, against the control plane `make controlplane` builds: manifest
# written → mirror pod Ready in the apiserver, and the kubeadm control
# plane from cold → /readyz and → four mirror pods Running 1/1.
bench: export PODVISOR_TEST_PROBETARGET := $(CURDIR)/bin/probetarget
bench: export PODVISOR_TEST_CONTROLPLANE := $(CONTROLPLANE_DIR)
bench: deps build controlplane
	$(GO) run ./internal/bench -podvisor bin/podvisor -baseline-log-driver
	$(GO) run ./internal/bench -podvisor bin/podvisor -idle 0
	$(GO) run ./internal/bench -podvisor bin/podvisor -start=false -probes 30s
	$(GO) run ./internal/bench -podvisor bin/podvisor -start=false -mirror

# Bounded fuzzing of the manifest decoder (make test runs the seeds).
fuzz:
	$(GO) test ./manifest -run '^$$' -fuzz FuzzParseFile -fuzztime 60s

clean:
	rm -rf bin examples/images .cache
