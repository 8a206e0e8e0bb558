/**
 * The test tiers, each a vitest project (docs/testing.md). A file is in the
 * first tier that lists it; every other test file is `unit`. Unit files start
 * no process and no service stack (they may use the run's Postgres and Redis);
 * a file that starts tesseract, poppler, bubblewrap, an edge or a gRPC service
 * is `integration`; one that opens documents in runsc sandboxes or LibreOffice
 * is `sandbox`; whole processes, images, browsers, Prometheus, fault injection
 * and fuzzing are `e2e`; the fault suite, whose faults have time bounds (a
 * recovery within seconds), is `faults` and runs alone after the others
 * (vitest.config.ts): beside a loaded run its bounds fail. test/tiers.test.ts
 * holds the unit tier to its rule.
 */
export const TIER_NAMES = ["unit", "integration", "sandbox", "e2e", "faults"] as const;
export type Tier = (typeof TIER_NAMES)[number];

/** Where test files are. */
export const TEST_FILES = ["internal/**/*.test.ts", "test/**/*.test.ts", "cmd/**/*.test.ts"];

export const TIER_FILES: Record<Exclude<Tier, "unit">, readonly string[]> = {
  faults: ["test/fault-suite.test.ts"],
  e2e: [
    "test/images.podman.test.ts",
    "test/jobs.crash.test.ts",
    "test/webhooks.crash.test.ts",
    "test/playground.e2e.test.ts",
    "test/dashboards.prometheus.test.ts",
    "test/alerts.promtool.test.ts",
    "test/trace.test.ts",
    "test/parsers.fuzz.test.ts",
    "test/cli-async.test.ts",
    "test/cli-client.test.ts",
    "test/cli.launcher.test.ts",
  ],
  sandbox: [
    "internal/sandbox/runsc*.test.ts",
    "internal/sandbox/converter.*.test.ts",
    "internal/sandbox/assets.test.ts",
    "internal/sandbox/checkpoint.test.ts",
    "internal/sandbox/imagefile.test.ts",
    "internal/sandbox/owners.test.ts",
    "internal/sandbox/profile.test.ts",
    "internal/sandbox/unsandboxed.test.ts",
    "internal/sandbox/pdfpages.test.ts",
    "internal/sandbox/png.test.ts",
    "internal/sandbox/fonts.test.ts",
    "internal/sandbox/oci.masks.test.ts",
    "internal/sandbox/jobdir.test.ts",
    "internal/sandbox/kubernetes/backend.test.ts",
    "internal/sandbox/kubernetes/backend.pool.test.ts",
    "internal/sandbox/kubernetes/pod.test.ts",
    "internal/conversion/grpc.pdf.test.ts",
    "internal/edge/routes/playground.process.test.ts",
    "test/convert.test.ts",
    "test/pages.test.ts",
    "test/jobs.office.test.ts",
    "test/jobs.pglite.test.ts",
  ],
  integration: [
    "test/chat-stream.test.ts",
    "test/chat.test.ts",
    "test/dependency-down.test.ts",
    "test/deploy.chart.test.ts",
    "test/deploy.checks.test.ts",
    "test/deploy.crd.test.ts",
    "test/deploy.docker.test.ts",
    "test/deploy.docs.test.ts",
    "test/deploy.kustomize.test.ts",
    "test/deploy.observability.test.ts",
    "test/deploy.pool.test.ts",
    "test/deploy.worker.test.ts",
    "test/fake-kube-api.test.ts",
    "test/idempotency.test.ts",
    "test/jobs.api.test.ts",
    "test/jobs.worker.test.ts",
    "test/models.test.ts",
    "test/ocr.test.ts",
    "test/openai-sdk.test.ts",
    "test/output-format.test.ts",
    "test/parsers.security.test.ts",
    "test/pglite.test.ts",
    "test/revocation.test.ts",
    "test/searchable-pdf.test.ts",
    "test/webhooks.api.test.ts",
    "test/webhooks.goal.test.ts",
    "internal/extraction/engines/auto.test.ts",
    "internal/extraction/engines/ppocr.test.ts",
    "internal/extraction/engines/straighten.test.ts",
    "internal/extraction/engines/tesseract.test.ts",
    "internal/extraction/engines/tesseract-server.test.ts",
    "internal/documents/pdf.test.ts",
    "internal/documents/pdf.jail.test.ts",
    "internal/documents/poppler.test.ts",
    "internal/documents/searchable-pdf.test.ts",
    "internal/documents/fetch.security.test.ts",
    "internal/edge/**/*.test.ts",
    "internal/platform/jail/jail.test.ts",
    "internal/platform/decoder/decoder.test.ts",
    "internal/platform/config/config.test.ts",
    "internal/operator/operator.*.test.ts",
    "internal/jobs/queue.test.ts",
    "internal/webhooks/deliverer.test.ts",
    "internal/platform/grpc/grpc.test.ts",
    "internal/ratelimit/ratelimit.test.ts",
  ],
};
