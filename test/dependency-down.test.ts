/**
 * A dependency down or timed out (DESIGN.md): Postgres frozen (accepts
 * connections, never answers), refused, or frozen mid-flight behind a proxy,
 * and the extraction service gone. Every such answer is 503
 * service_unavailable with Retry-After, in bounded time, never a 500; /readyz
 * answers 503 within about a second. Times are bounds on a loaded machine,
 * not benchmarks; the measured figures are printed.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunningEdge } from "../internal/edge/index.ts";
import { balanceOf, call, createTestAccount, databaseUrl, redisUrl, startStack, startTestEdge, usageRows, type Call, type TestStack } from "./harness.ts";
import { closedPort, frozenListener, proxyFor, viaPort, type Fault, type FreezableProxy } from "./faults.ts";
import { startFakeUpstream, type FakeUpstream } from "./fake-upstream.ts";

const png = () => readFileSync(new URL("./fixtures/ocr/english.png", import.meta.url)).toString("base64");
const ocrBody = () => ({ base64: png(), mime_type: "image/png", model: "local/tesseract" });

function show(r: Call): string {
  return `${r.status} ${JSON.stringify(r.body)} headers=${JSON.stringify(Object.fromEntries(r.headers))}`;
}

async function timed(f: () => Promise<Call>): Promise<{ r: Call; ms: number }> {
  const started = performance.now();
  const r = await f();
  return { r, ms: Math.round(performance.now() - started) };
}

function expect503(r: Call, message?: RegExp): void {
  expect(r.status, show(r)).toBe(503);
  expect(r.body?.error?.code, show(r)).toBe("service_unavailable");
  if (message) expect(r.body.error.message, show(r)).toMatch(message);
  expect(r.headers.get("retry-after"), show(r)).toMatch(/^[1-9]\d*$/);
}

describe("a frozen database (accepts connections, never answers), on a fresh edge", () => {
  let frozen: Fault;
  let edge: RunningEdge;
  beforeAll(async () => {
    frozen = await frozenListener();
    edge = await startTestEdge({ env: { DATABASE_URL: viaPort(databaseUrl(), frozen.port) } });
  });
  afterAll(async () => {
    // The listener goes first: closing the pool waits for connections it holds open.
    await frozen?.close();
    await edge?.close();
  });

  it("/readyz answers 503 with Retry-After within about a second", async () => {
    const { r, ms } = await timed(() => call(edge, "GET", "/readyz"));
    console.log(`frozen database, fresh edge: /readyz ${r.status} in ${ms} ms`);
    expect503(r, /database/);
    expect(ms, show(r)).toBeLessThan(1500);
  });

  it("a paid request with a real key answers 503 service_unavailable with Retry-After within about 2 s", async () => {
    const acc = await createTestAccount();
    const { r, ms } = await timed(() => call(edge, "POST", "/v1/ocr", acc.adminKey, ocrBody()));
    console.log(`frozen database, fresh edge: POST /v1/ocr ${r.status} in ${ms} ms`);
    expect503(r, /database/);
    expect(r.headers.get("retry-after")).toBe("2");
    expect(ms, show(r)).toBeLessThan(4000);
  });
});

describe("a refused database connection (nothing listens)", () => {
  let edge: RunningEdge;
  beforeAll(async () => {
    edge = await startTestEdge({ env: { DATABASE_URL: viaPort(databaseUrl(), await closedPort()) } });
  });
  afterAll(async () => edge?.close());

  it("answers 503 with Retry-After, not 500, on /readyz and on paid and management requests", async () => {
    const acc = await createTestAccount();
    expect503(await call(edge, "GET", "/readyz"), /database/);
    for (const r of [await call(edge, "POST", "/v1/ocr", acc.adminKey, ocrBody()), await call(edge, "GET", "/v1/account/balance", acc.adminKey)]) {
      expect503(r, /database is unavailable/);
    }
  });
});

describe("a database that freezes while the edge is serving, then recovers", () => {
  let proxy: FreezableProxy;
  let stack: TestStack;
  beforeAll(async () => {
    proxy = await proxyFor(databaseUrl(), 5432);
    stack = await startStack({ edgeEnv: { DATABASE_URL: viaPort(databaseUrl(), proxy.port) } });
  });
  afterAll(async () => {
    proxy?.thaw();
    await stack?.close();
    await proxy?.close();
  });

  it("503s within the query timeout while frozen, with nothing charged, and serves again once it thaws", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    // Warm: the key is cached and the pool holds open connections.
    const first = await call(stack.edge, "POST", "/v1/ocr", acc.adminKey, ocrBody());
    expect(first.status, show(first)).toBe(200);
    const before = await balanceOf(stack.edge, acc.adminKey);

    proxy.freeze();
    try {
      const ready = await timed(() => call(stack.edge, "GET", "/readyz"));
      console.log(`database frozen mid-flight: /readyz ${ready.r.status} in ${ready.ms} ms`);
      expect503(ready.r, /database/);
      expect(ready.ms, show(ready.r)).toBeLessThan(1500);

      const paid = await timed(() => call(stack.edge, "POST", "/v1/ocr", acc.adminKey, ocrBody()));
      console.log(`database frozen mid-flight: POST /v1/ocr ${paid.r.status} in ${paid.ms} ms`);
      expect503(paid.r, /database/);
      expect(paid.ms, show(paid.r)).toBeLessThan(4000);
    } finally {
      proxy.thaw();
    }

    // Recovery without a restart: the connections that timed out were dropped.
    const again = await call(stack.edge, "POST", "/v1/ocr", acc.adminKey, ocrBody());
    expect(again.status, show(again)).toBe(200);
    expect((await call(stack.edge, "GET", "/readyz")).status).toBe(200);
    // The 503 charged nothing and left no hold: one usage row and one debit per 200.
    const after = await balanceOf(stack.edge, acc.adminKey);
    expect(after.held_cents).toBe(0);
    const rows = await usageRows(acc.accountId);
    expect(rows.filter((u) => u.status === "success").map((u) => u.id).sort()).toEqual([first.body.id, again.body.id].sort());
    const charged = rows.reduce((sum, u) => sum + Number(u.cost_cents), 0);
    expect(after.balance_cents).toBe(before.balance_cents - Number(rows.find((u) => u.id === again.body.id)!.cost_cents));
    expect(after.balance_cents).toBe(100 - charged);
  });
});

describe("a frozen Redis (accepts connections, never answers)", () => {
  let frozen: Fault;
  let deny: RunningEdge;
  let local: RunningEdge;
  beforeAll(async () => {
    frozen = await frozenListener();
    const REDIS_URL = `redis://127.0.0.1:${frozen.port}`;
    [deny, local] = await Promise.all([
      startTestEdge({ env: { REDIS_URL, FOLIO_RATELIMIT_ON_REDIS_ERROR: "deny" } }),
      startTestEdge({ env: { REDIS_URL, FOLIO_RATELIMIT_ON_REDIS_ERROR: "local" } }),
    ]);
  });
  afterAll(async () => {
    await frozen?.close();
    await Promise.all([deny?.close(), local?.close()]);
  });

  it("/readyz answers 503 with Retry-After within about a second", async () => {
    const { r, ms } = await timed(() => call(deny, "GET", "/readyz"));
    console.log(`frozen Redis: /readyz ${r.status} in ${ms} ms`);
    expect503(r, /ratelimit/);
    expect(ms, show(r)).toBeLessThan(1500);
  });

  it("where rate limits need Redis (deny) a request answers 503 with Retry-After in bounded time; with the local fallback it is served", async () => {
    const acc = await createTestAccount();
    const denied = await timed(() => call(deny, "GET", "/v1/account", acc.adminKey));
    console.log(`frozen Redis, deny: GET /v1/account ${denied.r.status} in ${denied.ms} ms`);
    expect503(denied.r, /rate-limit store/);
    expect(denied.ms, show(denied.r)).toBeLessThan(4000);
    const served = await timed(() => call(local, "GET", "/v1/account", acc.adminKey));
    console.log(`frozen Redis, local: GET /v1/account ${served.r.status} in ${served.ms} ms`);
    expect(served.r.status, show(served.r)).toBe(200);
    expect(served.ms, show(served.r)).toBeLessThan(4000);
  });
});

describe("a Redis that freezes while the edge is serving (rate limits need it: deny)", () => {
  let proxy: FreezableProxy;
  let edge: RunningEdge;
  beforeAll(async () => {
    proxy = await proxyFor(redisUrl(), 6379);
    edge = await startTestEdge({ env: { REDIS_URL: `redis://127.0.0.1:${proxy.port}`, FOLIO_RATELIMIT_ON_REDIS_ERROR: "deny" } });
  });
  afterAll(async () => {
    proxy?.thaw();
    await edge?.close();
    await proxy?.close();
  });

  it("503 with Retry-After within the command timeout, /readyz 503 within about a second, served again once it thaws", async () => {
    const acc = await createTestAccount();
    expect((await call(edge, "GET", "/v1/account", acc.adminKey)).status).toBe(200);
    proxy.freeze();
    try {
      const ready = await timed(() => call(edge, "GET", "/readyz"));
      console.log(`Redis frozen mid-flight: /readyz ${ready.r.status} in ${ready.ms} ms`);
      expect503(ready.r, /ratelimit/);
      expect(ready.ms, show(ready.r)).toBeLessThan(1500);
      const denied = await timed(() => call(edge, "GET", "/v1/account", acc.adminKey));
      console.log(`Redis frozen mid-flight, deny: GET /v1/account ${denied.r.status} in ${denied.ms} ms`);
      expect503(denied.r, /rate-limit store/);
      expect(denied.ms, show(denied.r)).toBeLessThan(3000);
    } finally {
      proxy.thaw();
    }
    await expect.poll(async () => (await call(edge, "GET", "/v1/account", acc.adminKey)).status, { timeout: 5000 }).toBe(200);
  });
});

describe("the extraction service gone", () => {
  let stack: TestStack;
  let extractionClosed = false;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await stack?.edge.close();
    if (!extractionClosed) await stack?.extraction.close();
  });

  it("a paid request answers 503 service_unavailable with Retry-After (gRPC UNAVAILABLE), charging nothing", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    extractionClosed = true;
    await stack.extraction.close();
    const r = await call(stack.edge, "POST", "/v1/ocr", acc.adminKey, ocrBody());
    expect503(r);
    expect(await balanceOf(stack.edge, acc.adminKey)).toEqual({ balance_cents: 100, held_cents: 0 });
  });
});

describe("work that finishes while the database is frozen (docs/billing.md)", () => {
  let proxy: FreezableProxy;
  let upstream: FakeUpstream;
  let stack: TestStack;
  beforeAll(async () => {
    proxy = await proxyFor(databaseUrl(), 5432);
    upstream = await startFakeUpstream();
    stack = await startStack({ upstream, edgeEnv: { DATABASE_URL: viaPort(databaseUrl(), proxy.port) } });
  });
  afterAll(async () => {
    proxy?.thaw();
    await stack?.close();
    await upstream?.close();
    await proxy?.close();
  });

  it("is not charged: the client gets a 503, and the hold and the Idempotency-Key are given back once the database answers", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const model = "openai/gpt-4.1-mini";
    upstream.script(model, { kind: "delay", ms: 1000, then: { kind: "text", text: "read while the database was frozen" } }, { times: 1 });
    const body = JSON.stringify({ base64: png(), model });
    const headers = { authorization: `Bearer ${acc.adminKey}`, "content-type": "application/json", "idempotency-key": "frozen-settle" };
    const pending = fetch(stack.edge.url + "/v1/ocr", { method: "POST", headers, body });
    await new Promise((r) => setTimeout(r, 500));
    proxy.freeze();
    const res = await pending;
    const text = await res.text();
    expect(res.status, text).toBe(503);
    proxy.thaw();
    // Given back within a few tries of the background release (every 2 s).
    let account = await balanceOf(stack.edge, acc.adminKey);
    for (let i = 0; i < 30 && account.held_cents !== 0; i++) {
      await new Promise((r) => setTimeout(r, 500));
      account = await balanceOf(stack.edge, acc.adminKey);
    }
    expect(account).toMatchObject({ balance_cents: 100, held_cents: 0 });
    expect(await usageRows(acc.accountId)).toEqual([]);
    // The key was given back too: the retry runs (and is charged once).
    upstream.script(model, { kind: "text", text: "second try" }, { times: 1 });
    let retry = await fetch(stack.edge.url + "/v1/ocr", { method: "POST", headers, body });
    for (let i = 0; i < 10 && retry.status === 409; i++) {
      await new Promise((r) => setTimeout(r, 1000));
      retry = await fetch(stack.edge.url + "/v1/ocr", { method: "POST", headers, body });
    }
    expect(retry.status, await retry.clone().text()).toBe(200);
    expect(((await retry.json()) as { result: { text: string } }).result.text).toBe("second try");
  });
});
