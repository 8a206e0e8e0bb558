/**
 * The revocation fence survives Redis losing its data (issue 12): two edges
 * share a private, real Redis (no persistence) that is restarted empty
 * between the moment edge A cached a key and the moment edge B revokes it.
 * A generation counter restarted from 0 would land on the generation A has
 * cached, and A would keep serving the revoked key until its cache expired;
 * random generations never repeat one.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunningEdge } from "../internal/edge/index.ts";
import { call, createTestAccount, createTestKey, startTestEdge, type Call } from "./harness.ts";
import { PrivateRedis } from "./faults.ts";
import { freePort } from "./support.ts";

function show(r: Call): string {
  return `${r.status} ${JSON.stringify(r.body)}`;
}

async function ready(edge: RunningEdge): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if ((await call(edge, "GET", "/readyz")).status === 200) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("the edge did not become ready again within 10 s");
}

let redis: PrivateRedis;
let a: RunningEdge;
let b: RunningEdge;

beforeAll(async () => {
  redis = new PrivateRedis(await freePort());
  await redis.start();
  [a, b] = await Promise.all([startTestEdge({ env: { REDIS_URL: redis.url } }), startTestEdge({ env: { REDIS_URL: redis.url } })]);
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
  await redis?.stop();
});

describe("revocation after Redis lost its data", () => {
  it("edge A refuses a key revoked on edge B after a Redis restart, on its very next request", async () => {
    const acc = await createTestAccount();
    const k = await createTestKey(acc.accountId, ["admin", "account:read", "keys:write"]);
    // B renames the key: its fence moves once.
    const renamed = await call(b, "PATCH", `/v1/api-keys/${k.id}`, acc.adminKey, { name: "renamed" });
    expect(renamed.status, show(renamed)).toBe(200);
    // A uses the key: it is cached under the fence's current generation.
    expect((await call(a, "GET", "/v1/account", k.key)).status).toBe(200);
    expect((await call(a, "GET", "/v1/account", k.key)).status).toBe(200);

    // Redis restarts with nothing: every fence is forgotten.
    await redis.stop();
    await redis.start();
    await Promise.all([ready(a), ready(b)]);

    // B revokes the key: its fence moves once more, in the empty Redis.
    const del = await call(b, "DELETE", `/v1/api-keys/${k.id}`, acc.adminKey);
    expect(del.status, show(del)).toBe(200);
    const r = await call(a, "GET", "/v1/account", k.key);
    expect(r.status, show(r)).toBe(401);
    expect(r.body.error.message).toMatch(/revoked/);
  });

  it("keeps serving a valid key on both edges across the restart (its cached fence goes stale and is read again)", async () => {
    const acc = await createTestAccount();
    expect((await call(a, "GET", "/v1/account", acc.adminKey)).status).toBe(200);
    await redis.stop();
    await redis.start();
    await Promise.all([ready(a), ready(b)]);
    for (const edge of [a, b]) {
      const r = await call(edge, "GET", "/v1/account", acc.adminKey);
      expect(r.status, show(r)).toBe(200);
    }
  });
});
