/**
 * GET /playground: the built page and its assets, public, with the security
 * and cache headers; where the built files are looked for; and the answer
 * when they were never built.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import Fastify from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestEdge } from "../../../test/harness.ts";
import type { RunningEdge } from "../index.ts";
import { toHttpError } from "../../platform/errors/index.ts";
import type { App } from "../types.ts";
import register, { builtPageDir } from "./playground.page.ts";

let edge: RunningEdge;
beforeAll(async () => {
  edge = await startTestEdge();
});
afterAll(async () => edge?.close());

describe("the playground page route", () => {
  it("looks for dist/web/playground from the source tree and from the compiled tree alike", () => {
    expect(builtPageDir("/repo/internal/edge/routes")).toBe("/repo/dist/web/playground");
    expect(builtPageDir("/repo/dist/internal/edge/routes")).toBe("/repo/dist/web/playground");
  });

  it("serves the built page without a key, with a strict CSP, at /playground and /playground/", async () => {
    for (const path of ["/playground", "/playground/"]) {
      const res = await fetch(edge.url + path);
      const body = await res.text();
      expect(res.status, `${path}: ${body.slice(0, 300)} (run \`make web\` if the page is not built)`).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^text\/html/);
      expect(body).toContain("<title>Folio playground</title>");
      expect(res.headers.get("cache-control")).toBe("no-cache");
      const csp = res.headers.get("content-security-policy") ?? "";
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    }
  });

  it("serves the hashed assets as immutable and answers unknown ones with the one error shape", async () => {
    const assets = readdirSync(join(builtPageDir(), "assets"));
    const js = assets.find((a) => a.endsWith(".js"));
    expect(js, assets.join(", ")).toBeDefined();
    const res = await fetch(`${edge.url}/playground/assets/${js}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/javascript/);
    expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    const missing = await fetch(`${edge.url}/playground/assets/nope.js`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe("not_found");
    const outside = await fetch(`${edge.url}/playground/..%2f..%2fpackage.json`);
    expect(outside.status).toBe(404);
  });

  it("says how to build the page when it was not built (503, the one error shape)", async () => {
    const app = Fastify();
    app.setErrorHandler((err, _req, reply) => {
      const mapped = toHttpError(err);
      return reply.status(mapped.status).send(mapped.body);
    });
    register(app as unknown as App, undefined, "/nonexistent/folio-playground");
    const res = await app.inject({ method: "GET", url: "/playground" });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ error: { code: "service_unavailable" } });
    expect(res.json().error.message).toMatch(/make web/);
    await app.close();
  });
});
