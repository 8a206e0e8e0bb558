# Folio. `make run` starts the dev server; `make test` runs the whole suite.
# Every target installs what it needs first (scripts/ensure-deps.sh).
SHELL := /bin/bash
.DEFAULT_GOAL := help
NPX := npx --no-install

.PHONY: help deps run test test-fast lint typecheck build web bench eval eval-variants eval-structure eval-office eval-columns clean generate k8s-validate e2e-kind image

# Every target says what it does in a `## ` comment on its line; `make help`
# lists them all, and names a .PHONY target that has none.
help: ## list every target
	@awk -F ':.*## ' '/^[a-zA-Z0-9_-]+:.*## / { printf "make %-13s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)
	@for t in $$(sed -n 's/^\.PHONY: //p' $(MAKEFILE_LIST)); do grep -Eq "^$$t:.*## " $(MAKEFILE_LIST) || echo "make $$t (no description: add a ## comment to its line)"; done

deps: ## install the npm and Debian packages `make run` needs (scripts/ensure-deps.sh)
	@scripts/ensure-deps.sh run

# The playground page the edge serves at /playground (docs/playground.md):
# typechecked, built by Vite, and rebuilt by run/test when its sources change.
WEB_PAGE := dist/web/playground/index.html
# The page also bundles two dependency-free modules of internal/ (money formatting, strategy names).
WEB_SRC := $(shell find web/playground -type f -not -path '*/node_modules/*' 2>/dev/null) internal/billing/format.ts internal/contracts/strategies.ts
WEB_BUILD := $(NPX) tsc -p web/playground/tsconfig.json && $(NPX) vite build web/playground --logLevel warn

web: deps ## build the playground page (web/playground -> dist/web/playground)
	$(WEB_BUILD)

$(WEB_PAGE): $(WEB_SRC)
	@$(MAKE) --no-print-directory web

# Tracing registers before the program (internal/platform/telemetry/register.ts); it is idle unless OTEL_* asks for export.
run: deps $(WEB_PAGE) ## install what is missing and start folio dev on http://127.0.0.1:8080
	$(NPX) tsx --import ./internal/platform/telemetry/register.ts cmd/folio/main.ts dev

# The tiers and what each takes: docs/testing.md. `make test TIER=sandbox` runs one tier,
# `make test FILE=test/ocr.test.ts` one file (or several, space-separated).
TEST_ARGS := $(if $(TIER),--project $(TIER)) $(FILE)

test: ## install what is missing, start Postgres and Redis if needed, run every test (or TIER=…, FILE=…)
	@scripts/ensure-deps.sh test
	@$(MAKE) --no-print-directory $(WEB_PAGE)
	@eval "$$(scripts/test-services.sh)" && scripts/run-tests.sh $(TEST_ARGS)

test-fast: ## the unit tier only: no process started, a minute or two (docs/testing.md)
	@scripts/ensure-deps.sh test
	@eval "$$(scripts/test-services.sh)" && scripts/run-tests.sh --project unit

lint: deps typecheck ## typecheck, eslint (with the boundaries of docs/architecture.md), and every generator's --check
	$(NPX) eslint . --max-warnings=0
	@scripts/generate.sh --check

generate: deps ## run every generator of committed files (scripts/generate.sh)
	scripts/generate.sh

typecheck: deps ## tsc over the project and the playground page
	$(NPX) tsc -p tsconfig.json --noEmit
	$(NPX) tsc -p web/playground/tsconfig.json

build: deps ## compile to dist/ (the `folio` launcher runs the sources either way: docs/cli.md)
	rm -rf dist
	$(NPX) tsc -p tsconfig.build.json
	cp -r proto dist/proto
	chmod +x dist/cmd/folio/main.js
	$(WEB_BUILD)

# The Helm chart, kustomize overlays, CRD, dashboard and Dockerfiles, checked
# without a cluster by test/deploy.*.test.ts (also part of `make test`); helm and
# kubectl come from scripts/k8s-tools.sh into .tools/ (docs/operations.md).
k8s-validate: deps ## helm lint/template, kustomize and schema checks of deploy/ (no cluster needed)
	@scripts/k8s-tools.sh >/dev/null
	@eval "$$(scripts/test-services.sh)" && $(NPX) vitest run $(wildcard test/deploy.*.test.ts)

# Both images of deploy/docker with buildah, tagged by a hash of their inputs: a
# rerun with nothing changed builds nothing; where the public base images cannot
# be pulled, equivalents are built from Debian's packages and npm (docs/operations-images.md).
image: ## build the service and sandbox images with buildah (scripts/build-images.sh)
	@scripts/build-images.sh

# Folio on a real kind cluster with gVisor sandboxes (docs/e2e-kind.md); needs docker, kind, kubectl, helm and gVisor on the host.
e2e-kind: ## install on a kind cluster with gVisor and convert a DOCX (docs/e2e-kind.md)
	scripts/e2e-kind.sh

bench: ## benchmarks (docs/benchmarks.md)
	@scripts/ensure-deps.sh test
	@eval "$$(scripts/test-services.sh)" && $(NPX) tsx bench/run.ts

# Reading quality of the local models against the tesseract CLI on a corpus of
# real pages with ground truth (FOLIO_EVAL_CORPUS, default ../shared/corpus/ocr);
# figures in docs/benchmarks/reading-quality.md ("Reading quality").
eval: deps ## score local models' reading (CER, word F1) against the tesseract CLI (docs/benchmarks.md)
	$(NPX) tsx bench/eval-ocr.ts

# The corpus's pages turned 90/180/270, skewed ±4° and at half size (issue 26), apart from
# `make eval`: eight readings a page, about half an hour for its 15 pages here
# (`make eval-variants EVAL_ARGS="--only a,b"` picks pages); figures in docs/benchmarks/turned-pages.md ("Turned and skewed pages").
eval-variants: deps ## score local/auto on turned, skewed and half-size variants of the corpus pages against upright, and the check's cost
	$(NPX) tsx bench/eval-variants.ts $(EVAL_ARGS)

# Structure kept by output_format markdown (issues 26 and 45): the public office files
# (against `pandoc -t gfm` of each) and 120 generated ones whose structure is known
# (bench/structure-corpus.ts, seeded; a quarter held out, never tuned on), rendered to
# 200-DPI pages, a quarter degraded as scans, read by local/auto; figures in
# docs/benchmarks/structure.md ("Structure"). Needs pandoc (the eval profile installs it).
eval-structure: ## score local/auto's markdown of office files (public: against pandoc's; generated: against their own truth, dev and held out apart)
	@scripts/ensure-deps.sh eval
	@test -f test-artifacts/structure-corpus/gen_000.docx || $(NPX) tsx bench/structure-corpus.ts test-artifacts/structure-corpus
	$(NPX) tsx bench/eval-structure.ts $(EVAL_ARGS)

# Reading on pages nothing was fitted to (issue 26's last goal, as far as it can be
# measured here): the office files' pages rendered by LibreOffice, their PDF text as
# truth (bench/office-pages.ts), scored as `make eval` scores; figures in
# docs/benchmarks/reading-quality.md ("Office pages as unseen pages").
eval-office: deps ## score local/auto against the tesseract CLI on the office files' rendered pages (their PDF text as truth)
	$(NPX) tsx bench/office-pages.ts test-artifacts/office-pages
	FOLIO_EVAL_CORPUS=test-artifacts/office-pages $(NPX) tsx bench/eval-ocr.ts --models local/auto

# Pages of two and three columns nothing was fitted to (issue 26's unseen-page goal where the
# CLI reads columns best): HTML of the docs' prose printed by chromium, rendered at 200 DPI,
# each also as a noisy JPEG "scan" (bench/column-pages.ts); figures in docs/benchmarks/reading-quality.md
# ("Pages of columns"). Needs chromium (the test profile installs it).
eval-columns: deps ## score local/auto against the tesseract CLI on generated pages of columns, clean and scanned
	@scripts/ensure-deps.sh test
	$(NPX) tsx bench/column-pages.ts test-artifacts/column-pages --scanned
	FOLIO_EVAL_CORPUS=test-artifacts/column-pages $(NPX) tsx bench/eval-ocr.ts --models local/auto,local/tesseract

clean: ## remove dist/ and test-artifacts/
	rm -rf dist test-artifacts
