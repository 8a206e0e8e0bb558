/**
 * API key lifecycle against real Postgres and Redis: create (secret once),
 * list, patch, revoke, expiry, and revocation seen by a second edge at once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunningEdge } from "../index.ts";
import { call, createTestAccount, createTestKey, startTestEdge, testDb } from "../../../test/harness.ts";

let a: RunningEdge;
let b: RunningEdge;

beforeAll(async () => {
  a = await startTestEdge();
  b = await startTestEdge();
});
afterAll(async () => {
  await a?.close();
  await b?.close();
});

describe("key lifecycle", () => {
  it("creates a key whose secret is shown once, listed by prefix only", async () => {
    const acc = await createTestAccount();
    const created = await call(a, "POST", "/v1/api-keys", acc.adminKey, { name: "ci" });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body.id).toMatch(/^apk_/);
    expect(created.body.key).toMatch(/^folio_sk_[0-9A-Za-z]{40}$/);
    expect(created.body.prefix.startsWith("folio_sk_")).toBe(true);
    expect(created.body.key.startsWith(created.body.prefix.replace("…", ""))).toBe(true);
    expect(created.body.permissions).not.toContain("admin");
    expect(created.body.permissions).toContain("ocr:write");

    const list = await call(a, "GET", "/v1/api-keys", acc.adminKey);
    expect(list.status).toBe(200);
    expect(list.body.object).toBe("list");
    const entry = list.body.data.find((k: { id: string }) => k.id === created.body.id);
    expect(entry).toMatchObject({ name: "ci", prefix: created.body.prefix });
    expect(JSON.stringify(list.body)).not.toContain(created.body.key);
    expect(Object.keys(entry)).toEqual(expect.arrayContaining(["id", "name", "prefix", "created_at", "last_used_at"]));

    const { db } = await testDb();
    const row = await db.selectFrom("api_keys").selectAll().where("id", "=", created.body.id).executeTakeFirstOrThrow();
    expect(JSON.stringify(row)).not.toContain(created.body.key);
    expect(row.key_hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it("keeps last_used_at current without a write per request", async () => {
    const acc = await createTestAccount();
    const before = Math.floor(Date.now() / 1000);
    await call(a, "GET", "/v1/account", acc.adminKey);
    const list = await call(a, "GET", "/v1/api-keys", acc.adminKey);
    const me = list.body.data.find((k: { id: string }) => k.id === acc.adminKeyId);
    expect(me.last_used_at).toBeGreaterThanOrEqual(before);
  });

  it("patches name and permissions and returns id, name, prefix, updated_at", async () => {
    const acc = await createTestAccount();
    const k = await createTestKey(acc.accountId, ["ocr:write", "models:read"]);
    const res = await call(a, "PATCH", `/v1/api-keys/${k.id}`, acc.adminKey, { name: "renamed", permissions: ["ocr:write"] });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ id: k.id, name: "renamed" });
    expect(typeof res.body.updated_at).toBe("number");
    expect(res.body.prefix.startsWith("folio_sk_")).toBe(true);
    const empty = await call(a, "PATCH", `/v1/api-keys/${k.id}`, acc.adminKey, {});
    expect(empty.status).toBe(400);
  });

  it("revokes immediately on every edge: the next request on another replica gets 401", async () => {
    const acc = await createTestAccount();
    const k = await createTestKey(acc.accountId);
    // Warm both replicas' caches with the key.
    for (const edge of [a, b]) expect((await call(edge, "GET", "/v1/account", k.key)).status).toBe(403);
    const del = await call(a, "DELETE", `/v1/api-keys/${k.id}`, acc.adminKey);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ id: k.id, deleted: true });
    for (const edge of [b, a]) {
      const r = await call(edge, "GET", "/v1/account", k.key);
      expect(r.status, `${edge.url}: ${JSON.stringify(r.body)}`).toBe(401);
      expect(r.body.error.code).toBe("invalid_api_key");
      expect(r.body.error.message).toMatch(/revoked/);
    }
    const again = await call(a, "DELETE", `/v1/api-keys/${k.id}`, acc.adminKey);
    expect(again.status).toBe(404);
  });

  it("applies a permission change made on one replica to the next request on another", async () => {
    const acc = await createTestAccount();
    const k = await createTestKey(acc.accountId, ["admin", "account:read", "keys:read"]);
    expect((await call(b, "GET", "/v1/account", k.key)).status).toBe(200);
    const patched = await call(a, "PATCH", `/v1/api-keys/${k.id}`, acc.adminKey, { permissions: ["admin", "keys:read"] });
    expect(patched.status).toBe(200);
    const r = await call(b, "GET", "/v1/account", k.key);
    expect(r.status, JSON.stringify(r.body)).toBe(403);
    expect(r.body.error.code).toBe("permission_denied");
  });

  it("refuses an expired key with 401 saying it expired, and keeps it listed", async () => {
    const acc = await createTestAccount();
    const exp = Math.floor(Date.now() / 1000) + 2;
    const created = await call(a, "POST", "/v1/api-keys", acc.adminKey, { name: "short", expires_at: exp, permissions: ["admin", "account:read"] });
    expect(created.status).toBe(200);
    expect(created.body.expires_at).toBe(exp);
    expect((await call(a, "GET", "/v1/account", created.body.key)).status).toBe(200);
    await new Promise((r) => setTimeout(r, (exp + 1) * 1000 - Date.now()));
    const r = await call(a, "GET", "/v1/account", created.body.key);
    expect(r.status).toBe(401);
    expect(r.body.error.message).toMatch(/expired/);
    const list = await call(a, "GET", "/v1/api-keys", acc.adminKey);
    expect(list.body.data.map((k: { id: string }) => k.id)).toContain(created.body.id);
  });

  it("refuses expires_at in the past", async () => {
    const acc = await createTestAccount();
    const r = await call(a, "POST", "/v1/api-keys", acc.adminKey, { name: "x", expires_at: 1000 });
    expect(r.status).toBe(400);
    expect(r.body.error.param).toBe("expires_at");
  });
});

describe("authentication", () => {
  it("answers 401 invalid_api_key for a missing, malformed or unknown key", async () => {
    for (const header of [undefined, "Basic abc", "Bearer nope", "Bearer folio_sk_" + "A".repeat(40)]) {
      const res = await fetch(a.url + "/v1/account", { headers: header ? { authorization: header } : {} });
      const body = (await res.json()) as { error: { code: string } };
      expect(res.status, String(header)).toBe(401);
      expect(body.error.code).toBe("invalid_api_key");
    }
  });
});

describe("escalation and tenancy", () => {
  it("a key cannot create a key with permissions it does not hold", async () => {
    const acc = await createTestAccount();
    const limited = await createTestKey(acc.accountId, ["admin", "keys:write", "keys:read"]);
    const up = await call(a, "POST", "/v1/api-keys", limited.key, { name: "x", permissions: ["admin", "keys:write", "usage:read"] });
    expect(up.status).toBe(403);
    expect(up.body.error.missing_permissions).toEqual(["usage:read"]);
    // Omitting permissions asks for every non-admin permission, which this key lacks too.
    expect((await call(a, "POST", "/v1/api-keys", limited.key, { name: "y" })).status).toBe(403);
    const ok = await call(a, "POST", "/v1/api-keys", limited.key, { name: "z", permissions: ["keys:read"] });
    expect(ok.status).toBe(200);
  });

  it("a key cannot patch a key to more than it holds, nor touch a stronger key", async () => {
    const acc = await createTestAccount();
    const limited = await createTestKey(acc.accountId, ["admin", "keys:write", "keys:read"]);
    const weak = await createTestKey(acc.accountId, ["keys:read"]);
    const r1 = await call(a, "PATCH", `/v1/api-keys/${weak.id}`, limited.key, { permissions: ["ocr:write"] });
    expect(r1.status).toBe(403);
    const r2 = await call(a, "PATCH", `/v1/api-keys/${acc.adminKeyId}`, limited.key, { name: "pwned" });
    expect(r2.status).toBe(403);
    const r3 = await call(a, "DELETE", `/v1/api-keys/${acc.adminKeyId}`, limited.key);
    expect(r3.status).toBe(403);
  });

  it("a key without admin cannot use management endpoints", async () => {
    const acc = await createTestAccount();
    const k = await createTestKey(acc.accountId);
    for (const [m, p] of [["GET", "/v1/api-keys"], ["GET", "/v1/usage"], ["GET", "/v1/usage/summary"], ["GET", "/v1/account"], ["GET", "/v1/account/balance"]] as const) {
      const r = await call(a, m, p, k.key);
      expect(r.status, `${m} ${p}`).toBe(403);
      expect(r.body.error.missing_permissions).toEqual(["admin"]);
    }
  });

  it("another account's key id is 404 for patch and delete, and never listed", async () => {
    const mine = await createTestAccount();
    const theirs = await createTestAccount();
    const k = await createTestKey(theirs.accountId);
    expect((await call(a, "PATCH", `/v1/api-keys/${k.id}`, mine.adminKey, { name: "x" })).status).toBe(404);
    expect((await call(a, "DELETE", `/v1/api-keys/${k.id}`, mine.adminKey)).status).toBe(404);
    const list = await call(a, "GET", "/v1/api-keys", mine.adminKey);
    expect(list.body.data.map((x: { id: string }) => x.id)).not.toContain(k.id);
    // Their key still works.
    expect((await call(a, "GET", "/v1/api-keys", theirs.adminKey)).status).toBe(200);
  });

  it("rejects unknown permission names with 400 naming them", async () => {
    const acc = await createTestAccount();
    const r = await call(a, "POST", "/v1/api-keys", acc.adminKey, { name: "x", permissions: ["ocr:write", "root"] });
    expect(r.status).toBe(400);
    expect(r.body.error.param).toMatch(/^permissions/);
  });
});
