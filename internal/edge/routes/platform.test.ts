/**
 * Health, readiness, OpenAPI, docs, metrics and logging hygiene of the edge.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEdge, type RunningEdge } from "../index.ts";
import { edgeSchema, parseConfig, type Env } from "../../platform/config/index.ts";
import { createLogger } from "../../platform/log/index.ts";
import { call, createTestAccount, databaseUrl, expectRefused, redisUrl, startTestEdge } from "../../../test/harness.ts";

let edge: RunningEdge;
beforeAll(async () => {
  edge = await startTestEdge();
});
afterAll(async () => edge?.close());

/** An edge of the test's own (no metrics listener) on the run's database with `env`, logging at `level` into `lines`. */
async function edgeLoggingInto(lines: string[], level: "info" | "trace", env: Env): Promise<RunningEdge> {
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const config = parseConfig(edgeSchema, { DATABASE_URL: databaseUrl(), FOLIO_HTTP_HOST: "127.0.0.1", FOLIO_HTTP_PORT: "0", FOLIO_METRICS_ENABLED: "false", ...env });
  return startEdge({ config, log: createLogger(level, sink) });
}

describe("edge platform routes", () => {
  it("answers /healthz and /readyz when Postgres and Redis are up", async () => {
    expect((await call(edge, "GET", "/healthz")).body).toEqual({ status: "ok" });
    const ready = await call(edge, "GET", "/readyz");
    expect(ready.status).toBe(200);
    expect(ready.body.checks).toEqual({ database: "ok", ratelimit: "ok" });
  });

  it("reports not ready (503) when Redis is unreachable", async () => {
    const broken = await startTestEdge({ env: { REDIS_URL: "redis://127.0.0.1:1" } });
    try {
      const r = await call(broken, "GET", "/readyz");
      expect(r.status).toBe(503);
      expect(r.body.error.code).toBe("service_unavailable");
      // It names the dependency, not its error: no address, no driver message.
      expect(r.body.error.message, JSON.stringify(r.body)).toBe("not ready: ratelimit unavailable");
    } finally {
      await broken.close();
    }
  });

  it("keeps the dependency's error out of /readyz's answer and in the log, once while it stays down", async () => {
    const lines: string[] = [];
    const broken = await edgeLoggingInto(lines, "info", { REDIS_URL: "redis://127.0.0.1:1" });
    try {
      for (let i = 0; i < 3; i++) {
        const r = await call(broken, "GET", "/readyz");
        expect(r.status).toBe(503);
        expect(JSON.stringify(r.body), "no address in the answer").not.toMatch(/127\.0\.0\.1|:1\b|ECONNREFUSED/);
      }
    } finally {
      await broken.close();
    }
    const logged = lines.filter((l) => l.includes("not ready: a dependency is down"));
    expect(logged, lines.join("")).toHaveLength(1);
    expect(JSON.parse(logged[0]!).down.ratelimit, "the error is in the log").toEqual(expect.any(String));
  });

  it("serves every route the docs name (docs/*.md, README), as its OpenAPI document lists them", async () => {
    const doc = await call(edge, "GET", "/v1/openapi.json");
    const served = new Set(Object.entries(doc.body.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path.replace(/\{\w+\}/g, "{}")}`)));
    const root = fileURLToPath(new URL("../../../", import.meta.url));
    const files = ["README.md", ...readdirSync(join(root, "docs"), { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];
    const unknown: string[] = [];
    for (const f of files) {
      for (const m of readFileSync(join(root, f), "utf8").matchAll(/`(GET|POST|DELETE|PATCH|PUT) (\/v1\/[^`?\s]*)/g)) {
        // Docs write a path parameter as {id} or :id.
        const route = `${m[1]!} ${m[2]!.replace(/\/$/, "").replace(/\{\w+\}|:\w+/g, "{}")}`;
        if (!served.has(route)) unknown.push(`${f}: ${m[1]} ${m[2]}`);
      }
    }
    expect(served.size).toBeGreaterThan(20);
    expect([...new Set(unknown)]).toEqual([]);
  });

  it("serves an OpenAPI 3.1 document covering every management route, and /docs", async () => {
    const doc = await call(edge, "GET", "/v1/openapi.json");
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toBe("3.1.0");
    for (const p of ["/v1/api-keys", "/v1/api-keys/{id}", "/v1/usage", "/v1/usage/summary", "/v1/account", "/v1/account/balance"]) {
      expect(Object.keys(doc.body.paths), p).toContain(p);
    }
    expect(doc.body.paths["/v1/api-keys"].post.requestBody).toBeDefined();
    const page = await fetch(edge.url + "/docs");
    expect([200, 302]).toContain(page.status);
    expect(await page.text()).toMatch(/swagger|openapi/i);
  });

  it("returns the one error shape for unknown routes", async () => {
    expectRefused(await call(edge, "GET", "/v1/nope"), 404, "not_found");
  });

  it("refuses a non-JSON body with 415 and bad JSON with 400", async () => {
    const acc = await createTestAccount();
    const text = await fetch(edge.url + "/v1/api-keys", { method: "POST", headers: { authorization: `Bearer ${acc.adminKey}`, "content-type": "text/plain" }, body: "name=x" });
    expect(text.status).toBe(415);
    const bad = await call(edge, "POST", "/v1/api-keys", acc.adminKey, "{name:");
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe("invalid_request");
  });

  it("exports Prometheus metrics on its own port with request counts", async () => {
    const acc = await createTestAccount();
    await call(edge, "GET", "/v1/account", acc.adminKey);
    const text = await (await fetch(edge.metricsUrl!)).text();
    expect(text).toMatch(/folio_http_requests_total\{[^}]*route="\/v1\/account"[^}]*status="200"/);
    expect(text).toContain("folio_key_cache_total");
    expect(text).not.toContain(acc.accountId);
  });
});

describe("logs", () => {
  it("never contain a key secret, even at trace level", async () => {
    const lines: string[] = [];
    const logged = await edgeLoggingInto(lines, "trace", { REDIS_URL: redisUrl(), LOG_LEVEL: "trace" });
    try {
      const acc = await createTestAccount();
      const created = await call(logged, "POST", "/v1/api-keys", acc.adminKey, { name: "secret-test" });
      expect(created.status).toBe(200);
      await call(logged, "GET", "/v1/account", created.body.key);
      await call(logged, "GET", "/v1/account", "folio_sk_" + "Z".repeat(40));
    } finally {
      await logged.close();
    }
    const all = lines.join("");
    expect(lines.length).toBeGreaterThan(3);
    expect(all).not.toMatch(/folio_sk_[0-9A-Za-z]{32,}/);
  });
});
