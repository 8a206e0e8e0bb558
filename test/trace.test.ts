/**
 * One /v1/ocr request on an office document makes one trace: edge → billing
 * hold (SQL) → conversion over gRPC → sandbox → extraction over gRPC per
 * page → billing settle (SQL), every span parent-linked to the request's
 * HTTP span. The stack runs in a child process started with the tracing
 * bootstrap (`--import`), because the instrumentations must load before the
 * modules they patch; spans come back from an in-memory exporter.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { databaseUrl, redisUrl } from "./harness.ts";

interface SpanRecord {
  name: string;
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes: Record<string, unknown>;
}

const SERVER = 1;

describe("tracing", () => {
  it("one office-document OCR request yields one parent-linked trace across edge, conversion, sandbox, extraction and billing", async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", "--import", "./test/trace-register.ts", "test/trace-stack.ts"], {
      env: { ...process.env, DATABASE_URL: databaseUrl(), REDIS_URL: redisUrl() },
      maxBuffer: 64 * 1024 * 1024,
      timeout: 240_000,
    });
    const out = JSON.parse(stdout) as { status: number; requestId: string; key: string; spans: SpanRecord[] };
    expect(out.status).toBe(200);
    const names = out.spans.map((s) => s.name);
    // The edge's HTTP server span; its parent is the test client's own fetch span, the trace's root.
    const server = out.spans.find((s) => s.kind === SERVER && s.attributes["url.path"] === "/v1/ocr");
    expect(server, `no HTTP server span for /v1/ocr among ${JSON.stringify(names)}`).toBeDefined();
    const trace = out.spans.filter((s) => s.traceId === server!.traceId);
    const byId = new Map(trace.map((s) => [s.spanId, s]));
    const roots = trace.filter((s) => !byId.has(s.parentSpanId ?? ""));
    expect(roots.map((r) => r.name), "one root").toHaveLength(1);
    // Outside the trace: only background work (the batched last_used_at write), never a step of the request.
    const strays = out.spans.filter((s) => s.traceId !== server!.traceId).map((s) => s.name);
    expect(strays.filter((n) => !/^pg/.test(n)), "request steps outside the request's trace").toEqual([]);

    const ancestorSpans = (s: SpanRecord): SpanRecord[] => {
      const chain: SpanRecord[] = [];
      for (let p = byId.get(s.parentSpanId ?? ""); p; p = byId.get(p.parentSpanId ?? "")) chain.push(p);
      return chain;
    };
    const ancestors = (s: SpanRecord): string[] => ancestorSpans(s).map((a) => a.name);
    // Authentication and the rate limit run inside the request (Redis Lua call, key lookup).
    const ratelimit = trace.find((s) => s.name === "evalsha");
    expect(ratelimit, "the rate-limit call is in the trace").toBeDefined();
    expect(ancestorSpans(ratelimit!)).toContain(server);
    const one = (pattern: RegExp) => {
      const s = trace.find((x) => pattern.test(x.name));
      expect(s, `a span matching ${pattern} among ${JSON.stringify(names)}`).toBeDefined();
      return s!;
    };
    const paid = one(/^folio\.paid_request$/);
    expect(paid.attributes).toMatchObject({ "folio.endpoint": "/v1/ocr", "folio.model": "local/tesseract", "folio.pages": 2, "folio.request_id": out.requestId });
    expect(paid.attributes["folio.cost_cents"]).toBe(2);
    expect(String(paid.attributes["folio.account_id"])).toMatch(/^acc_/);

    const hold = one(/^billing\.hold$/);
    const settle = one(/^billing\.settle$/);
    for (const b of [hold, settle]) {
      expect(ancestors(b)).toContain("folio.paid_request");
      expect(trace.some((s) => s.parentSpanId === b.spanId && s.attributes["db.system"] === "postgresql" || s.parentSpanId === b.spanId && s.attributes["db.system.name"] === "postgresql"), `${b.name} has SQL spans under it`).toBe(true);
    }
    const convertServer = one(/ConversionService\/Convert$/);
    expect(ancestors(convertServer)).toContain("folio.paid_request");
    const sandbox = one(/^sandbox\.run$/);
    expect(ancestors(sandbox)).toContain(convertServer.name);
    expect(sandbox.attributes["folio.backend"]).toBe("runsc");
    expect(Number(sandbox.attributes["folio.compute_ms"])).toBeGreaterThan(0);
    const pages = trace.filter((s) => s.name === "extraction.page");
    expect(pages.map((p) => p.attributes["folio.page"]).sort()).toEqual([1, 2]);
    for (const p of pages) expect(ancestors(p).some((a) => /ExtractionService\/ExtractPage$/.test(a))).toBe(true);

    // No span carries the API key or document content.
    const all = JSON.stringify(out.spans);
    expect(all.includes(out.key)).toBe(false);
    expect(all.includes("quick brown fox")).toBe(false);
  }, 300_000);
});
