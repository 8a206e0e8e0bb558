# Folio. `make run` starts the dev server; `make test` runs the whole suite.
# Every target installs what it needs first (scripts/ensure-deps.sh).
SHELL := /bin/bash
.DEFAULT_GOAL := help
NPX := npx --no-install

.PHONY: help deps run test lint typecheck build web bench clean generate k8s-validate e2e-kind

help:
	@echo "make run    - install what is missing and start folio dev on :8080"
	@echo "make test   - install what is missing, start Postgres/Redis if needed, run every test"
	@echo "make lint   - typecheck + eslint"
	@echo "make build  - compile to dist/ (then: npx folio --help)"
	@echo "make web    - build the playground page (web/playground -> dist/web/playground)"
	@echo "make bench  - benchmarks (docs/benchmarks.md)"
	@echo "make k8s-validate - helm lint/template, kustomize and schema checks of deploy/ (no cluster needed)"
	@echo "make e2e-kind - install on a kind cluster with gVisor and convert a DOCX (docs/e2e-kind.md)"

deps:
	@scripts/ensure-deps.sh run

# The playground page the edge serves at /playground (docs/playground.md):
# typechecked, built by Vite, and rebuilt by run/test when its sources change.
WEB_PAGE := dist/web/playground/index.html
WEB_SRC := $(shell find web/playground -type f -not -path '*/node_modules/*' 2>/dev/null)
WEB_BUILD := $(NPX) tsc -p web/playground/tsconfig.json && $(NPX) vite build web/playground --logLevel warn

web: deps
	$(WEB_BUILD)

$(WEB_PAGE): $(WEB_SRC)
	@$(MAKE) --no-print-directory web

# Tracing registers before the program (internal/platform/telemetry/register.ts); it is idle unless OTEL_* asks for export.
run: deps $(WEB_PAGE)
	$(NPX) tsx --import ./internal/platform/telemetry/register.ts cmd/folio/main.ts dev

test:
	@scripts/ensure-deps.sh test
	@$(MAKE) --no-print-directory $(WEB_PAGE)
	@eval "$$(scripts/test-services.sh)" && scripts/run-tests.sh

lint: deps typecheck
	$(NPX) eslint . --max-warnings=0
	@scripts/gen-proto.sh --check
	@$(NPX) tsx scripts/gen-crd.ts --check

generate: deps
	scripts/gen-proto.sh

typecheck: deps
	$(NPX) tsc -p tsconfig.json --noEmit
	$(NPX) tsc -p web/playground/tsconfig.json

build: deps
	rm -rf dist
	$(NPX) tsc -p tsconfig.build.json
	cp -r proto dist/proto
	chmod +x dist/cmd/folio/main.js
	$(WEB_BUILD)

# The Helm chart, kustomize overlays, CRD, dashboard and Dockerfiles, checked
# without a cluster by test/deploy.test.ts (also part of `make test`); helm and
# kubectl come from scripts/k8s-tools.sh into .tools/ (docs/operations.md).
k8s-validate: deps
	@scripts/k8s-tools.sh >/dev/null
	@eval "$$(scripts/test-services.sh)" && $(NPX) vitest run test/deploy.test.ts

# Folio on a real kind cluster with gVisor sandboxes (docs/e2e-kind.md); needs docker, kind, kubectl, helm and gVisor on the host.
e2e-kind:
	scripts/e2e-kind.sh

bench:
	@scripts/ensure-deps.sh test
	@eval "$$(scripts/test-services.sh)" && $(NPX) tsx bench/run.ts

clean:
	rm -rf dist test-artifacts
