# Vigil — build, lint, test, bench.
#
#   make build   the binary in ./bin/vigil
#   make test    installs what the tests need (Debian packages, staticcheck), lints, runs all tests
#   make lint    gofmt, go vet, staticcheck
#   make bench   benchmarks (see bench targets below)
#   make reliability  the hardening suite against the real binary, with its tables
#   make image   the container image (deploy/Dockerfile), where a container engine runs

GO          ?= go
STATICCHECK_MODULE  := honnef.co/go/tools/cmd/staticcheck@v0.8.2
GOBIN       := $(shell $(GO) env GOPATH)/bin
DEB_PACKAGES := prometheus prometheus-alertmanager victoria-metrics prometheus-node-exporter prometheus-pushgateway chromium
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -X github.com/vigil-obs/vigil/internal/buildinfo.Version=$(VERSION)
TEST_TIMEOUT ?= 30m

.PHONY: all build test lint deps deb-deps tools bench fuzz reliability clean image

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/vigil ./cmd/vigil

# The container image: docker (or IMAGE_ENGINE=podman) builds deploy/Dockerfile
# from the repository root. Without a running engine it says so and stops.
IMAGE        ?= vigil:$(VERSION)
IMAGE_ENGINE ?= docker
image:
	@if ! $(IMAGE_ENGINE) info >/dev/null 2>&1; then \
		echo "make image: no container engine answers ($(IMAGE_ENGINE) info failed): start one, or set IMAGE_ENGINE=podman"; exit 1; \
	fi
	$(IMAGE_ENGINE) build -f deploy/Dockerfile --build-arg VERSION=$(VERSION) -t $(IMAGE) .

deps: deb-deps tools
	$(GO) mod download

# Installs the real components the tests run against, when missing.
deb-deps:
	@missing=""; for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:$$missing"; \
		SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi

tools:
	@test -x $(GOBIN)/staticcheck || $(GO) install $(STATICCHECK_MODULE)

lint: tools
	@out=$$(gofmt -l cmd internal test deploy); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GOBIN)/staticcheck ./...

test: deps lint
	$(GO) test -timeout $(TEST_TIMEOUT) ./...

# Short fuzzing of every parser of outside input. A short minimisation time
# keeps slow inputs (FuzzRead writes blocks) from stalling the run.
FUZZTIME ?= 60s
fuzz:
	$(GO) test ./cmd/vigil -run '^$$' -fuzz '^FuzzDiagnoseInput$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/catalog -run '^$$' -fuzz '^FuzzResolve$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/catalog -run '^$$' -fuzz '^FuzzClockReasons$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/config -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/cost -run '^$$' -fuzz '^FuzzParsePrices$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/manifests -run '^$$' -fuzz '^FuzzValues$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/store -run '^$$' -fuzz '^FuzzDecodeMatrix$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/api -run '^$$' -fuzz '^FuzzCheckQuery$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/detect -run '^$$' -fuzz '^FuzzOnset$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/detect -run '^$$' -fuzz '^FuzzPeerZ$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/realdata/nezha -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/detect -run '^$$' -fuzz '^FuzzChangeProb$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/drift -run '^$$' -fuzz '^FuzzReadCSV$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/drift -run '^$$' -fuzz '^FuzzCSVMatchesStdlib$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/drift -run '^$$' -fuzz '^FuzzParseDecimal$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/hops -run '^$$' -fuzz '^FuzzBreakdown$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/ingest/otlp -run '^$$' -fuzz '^FuzzParseHtpasswd$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/ingest/otlp -run '^$$' -fuzz '^FuzzParseTokens$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/ingest/otlp -run '^$$' -fuzz '^FuzzAuthenticate$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/ingest/fileimport -run '^$$' -fuzz '^FuzzRead$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/ingest/fileimport -run '^$$' -fuzz '^FuzzReadOTLPDerived$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/ingest/otlp -run '^$$' -fuzz '^FuzzHTTPProto$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/ingest/otlp -run '^$$' -fuzz '^FuzzHTTPJSON$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/ingest/push -run '^$$' -fuzz '^FuzzPushBody$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/ingest/remotewrite -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/ingest/remotewrite -run '^$$' -fuzz '^FuzzWireSamplesV1$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/logsignals -run '^$$' -fuzz '^FuzzMatchText$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/logsignals -run '^$$' -fuzz '^FuzzSeverityOf$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/logtemplates -run '^$$' -fuzz '^FuzzAdd$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/logtemplates -run '^$$' -fuzz '^FuzzMask$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/logtemplates -run '^$$' -fuzz '^FuzzLocation$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/redact -run '^$$' -fuzz '^FuzzString$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/redact -run '^$$' -fuzz '^FuzzValueJSON$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/redact -run '^$$' -fuzz '^FuzzJSONParser$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/sim -run '^$$' -fuzz '^FuzzParseScenario$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/slo -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/tenant -run '^$$' -fuzz '^FuzzParseIDs$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/tenant/limits -run '^$$' -fuzz '^FuzzRuntimeFile$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/traces -run '^$$' -fuzz '^FuzzCorrelationBody$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x
	$(GO) test ./internal/traces -run '^$$' -fuzz '^FuzzParseTraceID$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10x

# Benchmarks, one package at a time (go test runs benchmarks serially), each
# printing its own summary table. The peer comparisons start Vigil, Prometheus
# 2.42 and VictoriaMetrics 1.79 as processes on this machine, alternating them:
#   test/ingestbench  remote-write throughput (vs Prometheus, VictoriaMetrics)
#                     and RSS per active series at 100k and 1M (vs Prometheus)
#   test/promcompat   query latency over the PromQL compatibility battery
#   test/rulebench    SLO preset rule evaluation over 1,000 GPUs and 50 models
#                     vs Prometheus 2.42 (alternating fresh processes)
#   test/otlpbench    OTLP/gRPC receiver + redaction + trace store vs the store
#   test/tenancybench tenancy on vs off; a victim's p99 beside a 10×-rate abuser
#   test/authbench    remote-write throughput and query latency with
#                     --web.config.file (TLS 1.3, bcrypt basic auth) vs none
#   internal/drift    drift from CSV at 10 and 50 features vs a two-pass baseline
#   test/driftflow    vigil drift on 2 × 5 GB under GOMEMLIMIT=256MiB (only with
#                     VIGIL_DRIFT_5GB=1; writes 10 GB, ~4–10 min)
#   test/costbench    vigil cost --prometheus (wall, peak RSS) over 30 days at
#                     5m and 24h at 30s, 100 nodes of 8 GPUs (1,000 with
#                     VIGIL_COSTBENCH_NODES=1000, the second line below)
#   test/diagnosebench  diagnosis wall time and peak RSS from 16 to 1,000 nodes
#                     and over 15m to 3h windows, and the import of the dump;
#                     its 1,000-node case (2 min to simulate) runs on its own
# They take about 45 minutes on 2 cores.
bench: deps
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 90m ./...
	VIGIL_DIAGNOSEBENCH_LARGE=1 $(GO) test -run '^$$' -bench 'DiagnoseNodes/nodes=1000$$' -benchtime 1x -timeout 30m ./test/diagnosebench
	VIGIL_COSTBENCH_NODES=1000 $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 120m ./test/costbench

# The hardening suite (test/reliability) against the real binary: the
# bad-input catalogue (66 inputs: status, server up, data lost), the abuse
# scenarios (a victim client's p99 under abuse against idle) and the memory
# bursts under memory.budget 2GiB against Prometheus 2.42 (minutes of load;
# only here). It prints the tables it writes to $(RELIABILITY_OUT).
RELIABILITY_OUT ?= $(CURDIR)/bin/reliability
reliability: deps
	rm -rf $(RELIABILITY_OUT) && mkdir -p $(RELIABILITY_OUT)
	VIGIL_RELIABILITY_OUT=$(RELIABILITY_OUT) $(GO) test -count=1 -timeout 60m ./test/reliability
	@for f in catalogue abuse memory; do echo; echo "## $$f"; echo; cat $(RELIABILITY_OUT)/$$f.md; done

clean:
	rm -rf bin
