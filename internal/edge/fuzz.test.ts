/**
 * Property-based fuzzing (fast-check) of every management endpoint over
 * HTTP: generated JSON and non-JSON bodies, content types, query strings and
 * path ids. Properties: never a 5xx; every 4xx has the one error shape with
 * the status the error table gives its code; a 400 caused by one field names
 * that field in `error.param`.
 */
import fc from "fast-check";
import { httpStatusOf, type ErrorCode } from "../platform/errors/index.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunningEdge } from "./index.ts";
import { call, createTestAccount, createTestKey, startTestEdge, type TestAccount } from "../../test/harness.ts";

let edge: RunningEdge;
let acc: TestAccount;
/** A key PATCH fuzzing may rename and re-permission (never the fuzzing key itself). */
let patchTarget: { id: string; key: string };
/** Keys DELETE fuzzing may revoke. */
let deleteTargets: string[] = [];

beforeAll(async () => {
  edge = await startTestEdge();
  acc = await createTestAccount({ requestsPerMinute: 1_000_000, requestsPerDay: 100_000_000 });
  patchTarget = await createTestKey(acc.accountId, ["ocr:write"]);
  deleteTargets = await Promise.all(Array.from({ length: 8 }, () => createTestKey(acc.accountId, ["models:read"]).then((k) => k.id)));
});
afterAll(async () => {
  await edge?.close();
});

const RUNS = 150;
const opts = { numRuns: RUNS, endOnFailure: true } as const;


interface Sent {
  method: string;
  path: string;
  contentType?: string | undefined;
  body?: string | undefined;
}
interface Got {
  status: number;
  text: string;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

function clip(s: string | undefined, n = 400): string {
  if (s === undefined) return "(none)";
  return s.length > n ? `${s.slice(0, n)}… (${s.length} chars)` : s;
}

function describeExchange(req: Sent, res: Got): string {
  return `${req.method} ${clip(req.path, 300)} content-type=${JSON.stringify(req.contentType)} body=${JSON.stringify(clip(req.body))} -> ${res.status} ${clip(res.text)}`;
}

async function send(req: Sent, key = acc.adminKey): Promise<Got> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (req.contentType !== undefined) headers["content-type"] = req.contentType;
  const res = await fetch(edge.url + req.path, { method: req.method, headers, body: req.body });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json };
}

/** The properties every answer must have; returns the exchange for further checks. */
async function exchange(req: Sent): Promise<Got> {
  const res = await send(req);
  const what = describeExchange(req, res);
  expect(res.status, `5xx: ${what}`).toBeLessThan(500);
  expect(res.json, `not JSON: ${what}`).toBeDefined();
  if (res.status >= 400) {
    const err = res.json?.error;
    expect(typeof err, `no error object: ${what}`).toBe("object");
    expect(typeof err.code, `error.code: ${what}`).toBe("string");
    expect(typeof err.message, `error.message: ${what}`).toBe("string");
    expect(err.message.length, `empty message: ${what}`).toBeGreaterThan(0);
    expect(httpStatusOf(err.code as ErrorCode), `code ${err.code} with status ${res.status}: ${what}`).toBe(res.status);
    if ("param" in err) expect(typeof err.param, `error.param: ${what}`).toBe("string");
  } else {
    expect(res.status, `unexpected status: ${what}`).toBe(200);
  }
  return res;
}

/** exchange() for generated input. */
async function fuzzExchange(req: Sent): Promise<Got> {
  return exchange(req);
}

// ---------------------------------------------------------------- arbitraries

const hugeString = fc.constantFrom("x".repeat(300), "é".repeat(5_000), "A".repeat(1_000_000));
const weirdNumbers = fc.constantFrom(-1, 0, -0, 0.5, 1.5, 1e21, 1e308, -1e308, Number.MAX_SAFE_INTEGER, 2 ** 53 + 2, 253402300799, 253402300800, 4102444800, 2 ** 31, -(2 ** 31) - 1);
const nested = fc.letrec((tie) => ({
  node: fc.oneof({ depthSize: "small", withCrossShrink: true }, fc.constant(null), fc.string(), fc.array(tie("node"), { maxLength: 3 }), fc.dictionary(fc.string(), tie("node"), { maxKeys: 3 })),
})).node;
// Kept shallow enough for fast-check to print; deeper nesting is sent as text below.
const deep = fc.integer({ min: 20, max: 200 }).map((d) => JSON.parse("[".repeat(d) + "]".repeat(d)) as unknown);
const deepText = fc.constantFrom("[".repeat(100_000) + "]".repeat(100_000), '{"a":'.repeat(50_000) + "1" + "}".repeat(50_000), '{"name":"x","permissions":' + "[".repeat(20_000) + "]".repeat(20_000) + "}");
/** Any JSON-serialisable value, junk first. */
const junkValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.anything({ maxDepth: 3 }),
  fc.jsonValue({ maxDepth: 3 }),
  fc.string({ unit: "binary" }),
  fc.string({ unit: "grapheme" }),
  hugeString,
  weirdNumbers,
  fc.double(),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string(), { maxLength: 40 }),
  fc.array(fc.constantFrom("ocr:write", "admin", "keys:read", "usage:read", "root", "", "ADMIN"), { maxLength: 40 }),
  nested,
  deep,
);

const KEY_FIELDS = ["name", "permissions", "expires_at"] as const;
const fieldName = fc.oneof(fc.constantFrom(...KEY_FIELDS), fc.string({ minLength: 1, maxLength: 20 }), fc.constantFrom("__proto__", "constructor", "toString", "NAME", "name ", "a/b", "~0"));
const objectBody = fc.dictionary(fieldName, junkValue, { maxKeys: 5 });

/** Body text: mostly JSON of junk, also broken and non-JSON text. */
const bodyText: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: objectBody.map((o) => JSON.stringify(o)) },
  { weight: 3, arbitrary: junkValue.map((v) => JSON.stringify(v) ?? "") },
  { weight: 1, arbitrary: fc.json() },
  { weight: 1, arbitrary: fc.string({ unit: "binary" }) },
  { weight: 1, arbitrary: fc.constantFrom("", " ", "null", "{", '{"name":', "{'name':'x'}", "name=x", "[]", "{}", "\u0000", '{"name":"x"}garbage', '{"name":"x","name":1}', "\ufeff{}", "1".repeat(400)) },
  { weight: 1, arbitrary: objectBody.map((o) => JSON.stringify(o).slice(0, -1)) },
  { weight: 1, arbitrary: deepText },
);

const contentType = fc.oneof(
  { weight: 6, arbitrary: fc.constant("application/json") },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      "application/json; charset=utf-8",
      "APPLICATION/JSON",
      "application/json; charset=latin1",
      "application/json; charset=utf-16",
      "text/plain",
      "text/json",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=xyz",
      "application/xml",
      "application/vnd.api+json",
      "application/jsonx",
      "application/octet-stream",
      "",
      ";;;",
      "application/json; foo",
    ),
  },
  { weight: 1, arbitrary: fc.string({ unit: "grapheme-ascii", maxLength: 40 }).filter((s) => !/[\r\n]/.test(s)) },
);

const BASE62 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".split("");
const wellFormedId = fc.array(fc.constantFrom(...BASE62), { minLength: 1, maxLength: 64 }).map((cs) => `apk_${cs.join("")}`);
/** A path segment for :id, already URL-encoded where it needs to be. */
const pathId = fc.oneof(
  wellFormedId,
  fc.string({ unit: "binary", maxLength: 80 }).map(encodeURIComponent),
  fc.string({ unit: "grapheme-ascii", maxLength: 80 }).map(encodeURIComponent),
  // Over the schema's 64 characters but within the router's 100 (longer: see known bugs).
  fc.array(fc.constantFrom(...BASE62), { minLength: 65, maxLength: 96 }).map((cs) => `apk_${cs.join("")}`),
  fc.constantFrom("apk_", "APK_abc", "%2F", "apk_a%2Fb", "apk_%F0%9F%98%80", "apk_" + "9".repeat(64), "key_abc", "-1", "0", "1e309", "null", "undefined", "apk_abc%20", "%20", "apk_abc.json", "apk_ab%3Fc"),
);

const QUERY_FIELDS = ["start_date", "end_date", "limit", "offset", "status", "model", "api_key_id", "group_by"];
const numberish = fc.oneof(
  fc.integer().map(String),
  fc.integer({ min: -1000, max: 1000 }).map(String),
  fc.double().map(String),
  fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n }).map(String),
  fc.constantFrom("", " ", "1e3", "1e309", "-1", "-0", "0x10", "0b1", "1_000", " 5", "5 ", "+5", "٣", "1.0", "1.5", "00012", "9007199254740993", "253402300799", "253402300800", "100", "101", "0", "NaN", "Infinity", "true", "null", "[]"),
);
const queryValue = fc.oneof(
  numberish,
  fc.string({ unit: "binary", maxLength: 60 }),
  fc.constantFrom("success", "error", "day", "week", "month", "model", "year", "SUCCESS", "x".repeat(201), "y".repeat(5000)),
);
const queryKey = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...QUERY_FIELDS) }, { weight: 1, arbitrary: fc.string({ maxLength: 20 }) });
const queryPairs = fc.array(fc.tuple(queryKey, queryValue), { maxLength: 6 });

function queryString(pairs: readonly (readonly [string, string])[]): string {
  if (pairs.length === 0) return "";
  return "?" + pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&");
}

/** True when `param` names `field` or something inside it (`permissions.3`). */
function names(param: unknown, field: string): boolean {
  return param === field || (typeof param === "string" && param.startsWith(`${field}.`));
}

// ---------------------------------------------------------------- properties

describe("POST /v1/api-keys", () => {
  it("any body with any content type: never 5xx, errors have the one shape", async () => {
    await fc.assert(
      fc.asyncProperty(bodyText, contentType, async (body, ct) => {
        await fuzzExchange({ method: "POST", path: "/v1/api-keys", contentType: ct, body });
      }),
      opts,
    );
  });

  it("an object body: a 400 names one of its fields (or the missing 'name')", async () => {
    await fc.assert(
      fc.asyncProperty(objectBody, async (o) => {
        const req = { method: "POST", path: "/v1/api-keys", contentType: "application/json", body: JSON.stringify(o) };
        const res = await fuzzExchange(req);
        if (res.status !== 400) return;
        const sentKeys = Object.keys(JSON.parse(req.body) as object);
        const param = res.json.error.param;
        expect([...sentKeys, "name"].some((k) => names(param, k)), `param ${JSON.stringify(param)} not among ${JSON.stringify(sentKeys)}: ${describeExchange(req, res)}`).toBe(true);
      }),
      opts,
    );
  });

  it("one field set to a generated value, the rest valid: 200, or 400 naming that field", async () => {
    const arb = fc.oneof(
      fc.record({ field: fc.constantFrom(...KEY_FIELDS), value: junkValue }),
      fc.record({ field: fc.constant("expires_at"), value: fc.oneof(weirdNumbers, fc.integer(), fc.double()) }),
      fc.record({ field: fc.constant("name"), value: fc.string({ unit: "binary", maxLength: 250 }) }),
      fc.record({ field: fieldName.filter((f) => !(KEY_FIELDS as readonly string[]).includes(f)), value: junkValue }),
    );
    await fc.assert(
      fc.asyncProperty(arb, async ({ field, value }) => {
        const o: Record<string, unknown> = { name: "fuzz" };
        Object.defineProperty(o, field, { value, enumerable: true, configurable: true, writable: true });
        const req = { method: "POST", path: "/v1/api-keys", contentType: "application/json", body: JSON.stringify(o) };
        const res = await fuzzExchange(req);
        expect([200, 400], describeExchange(req, res)).toContain(res.status);
        if (res.status === 400) expect(names(res.json.error.param, field), `param should name '${field}': ${describeExchange(req, res)}`).toBe(true);
        if (res.status === 200) {
          expect(res.json.key, describeExchange(req, res)).toMatch(/^folio_sk_/);
          expect((KEY_FIELDS as readonly string[]).includes(field) || value === undefined, `unknown field '${field}' accepted: ${describeExchange(req, res)}`).toBe(true);
        }
      }),
      opts,
    );
  });
});

describe("PATCH /v1/api-keys/:id", () => {
  it("any body, any content type, on a real key: never 5xx, errors have the one shape", async () => {
    await fc.assert(
      fc.asyncProperty(bodyText, contentType, async (body, ct) => {
        await fuzzExchange({ method: "PATCH", path: `/v1/api-keys/${patchTarget.id}`, contentType: ct, body });
      }),
      opts,
    );
  });

  it("a non-empty object body: a 400 names one of its fields", async () => {
    await fc.assert(
      fc.asyncProperty(objectBody, async (o) => {
        const req = { method: "PATCH", path: `/v1/api-keys/${patchTarget.id}`, contentType: "application/json", body: JSON.stringify(o) };
        const res = await fuzzExchange(req);
        const sentKeys = Object.keys(JSON.parse(req.body) as object);
        if (res.status !== 400 || sentKeys.length === 0) return;
        const param = res.json.error.param;
        expect(sentKeys.some((k) => names(param, k)), `param ${JSON.stringify(param)} not among ${JSON.stringify(sentKeys)}: ${describeExchange(req, res)}`).toBe(true);
      }),
      opts,
    );
  });

  it("one field set to a generated value: 200, or 400 naming that field", async () => {
    const arb = fc.record({ field: fieldName, value: junkValue.filter((v) => v !== undefined) });
    await fc.assert(
      fc.asyncProperty(arb, async ({ field, value }) => {
        const o: Record<string, unknown> = {};
        Object.defineProperty(o, field, { value, enumerable: true, configurable: true, writable: true });
        const req = { method: "PATCH", path: `/v1/api-keys/${patchTarget.id}`, contentType: "application/json", body: JSON.stringify(o) };
        const res = await fuzzExchange(req);
        expect([200, 400], describeExchange(req, res)).toContain(res.status);
        if (res.status === 400) expect(names(res.json.error.param, field), `param should name '${field}': ${describeExchange(req, res)}`).toBe(true);
        if (res.status === 200) expect(res.json.id, describeExchange(req, res)).toBe(patchTarget.id);
      }),
      opts,
    );
  });

  it("random path ids with a valid body: 400 naming 'id', or 404", async () => {
    await fc.assert(
      fc.asyncProperty(pathId, async (id) => {
        const req = { method: "PATCH", path: `/v1/api-keys/${id}`, contentType: "application/json", body: '{"name":"fuzzed"}' };
        const res = await fuzzExchange(req);
        expect([400, 404], describeExchange(req, res)).toContain(res.status);
        if (res.status === 400) expect(res.json.error.param, describeExchange(req, res)).toBe("id");
      }),
      opts,
    );
  });
});

describe("DELETE /v1/api-keys/:id", () => {
  it("random path ids, real ids and stray bodies: never 5xx; 400 names 'id'; a real key is deleted once", async () => {
    const deleted = new Set<string>();
    const arb = fc.record({
      id: fc.oneof({ weight: 4, arbitrary: pathId }, { weight: 1, arbitrary: fc.constantFrom(...deleteTargets) }),
      body: fc.option(fc.tuple(bodyText, contentType), { freq: 4 }),
    });
    await fc.assert(
      fc.asyncProperty(arb, async ({ id, body }) => {
        const req = { method: "DELETE", path: `/v1/api-keys/${id}`, contentType: body?.[1], body: body?.[0] };
        const res = await fuzzExchange(req);
        if (res.status === 400 && res.json.error.code === "invalid_request" && res.json.error.param !== undefined) {
          expect(res.json.error.param, describeExchange(req, res)).toBe("id");
        }
        if (deleteTargets.includes(id) && res.status === 200) {
          expect(deleted.has(id), `deleted twice: ${describeExchange(req, res)}`).toBe(false);
          expect(res.json, describeExchange(req, res)).toEqual({ id, deleted: true });
          deleted.add(id);
        }
        if (!deleteTargets.includes(id)) expect(res.status, describeExchange(req, res)).not.toBe(200);
      }),
      opts,
    );
  });
});

describe("GET /v1/usage and /v1/usage/summary", () => {
  for (const path of ["/v1/usage", "/v1/usage/summary"]) {
    it(`${path}: random query strings: never 5xx; a 400 names one of the parameters sent`, async () => {
      await fc.assert(
        fc.asyncProperty(queryPairs, async (pairs) => {
          const req = { method: "GET", path: path + queryString(pairs) };
          const res = await fuzzExchange(req);
          if (res.status === 400) {
            const sent = pairs.map(([k]) => k);
            expect(sent, `param ${JSON.stringify(res.json.error.param)}: ${describeExchange(req, res)}`).toContain(res.json.error.param);
          }
          if (res.status === 200 && path === "/v1/usage") {
            expect(res.json, describeExchange(req, res)).toMatchObject({ object: "list", data: [], total_count: 0, has_more: false });
          }
        }),
        opts,
      );
    });

    it(`${path}: one known parameter set to a generated value: 200, or 400 naming it`, async () => {
      const fields = path === "/v1/usage" ? QUERY_FIELDS.filter((f) => f !== "group_by") : ["start_date", "end_date", "group_by"];
      const arb = fc.record({
        field: fc.constantFrom(...fields),
        value: queryValue,
        junk: fc.array(fc.tuple(fc.string({ maxLength: 10 }).filter((k) => !QUERY_FIELDS.includes(k)), queryValue), { maxLength: 2 }),
      });
      await fc.assert(
        fc.asyncProperty(arb, async ({ field, value, junk }) => {
          const req = { method: "GET", path: path + queryString([[field, value], ...junk]) };
          const res = await fuzzExchange(req);
          expect([200, 400], describeExchange(req, res)).toContain(res.status);
          if (res.status === 400) expect(res.json.error.param, describeExchange(req, res)).toBe(field);
        }),
        opts,
      );
    });
  }

  it("/v1/usage: limit over 100 is a 400 naming limit, never a clamp", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 101, max: 2 ** 31 }), async (n) => {
        const req = { method: "GET", path: `/v1/usage?limit=${n}` };
        const res = await fuzzExchange(req);
        expect(res.status, describeExchange(req, res)).toBe(400);
        expect(res.json.error.param).toBe("limit");
      }),
      { numRuns: 30 },
    );
  });
});

describe("GET /v1/api-keys, /v1/account, /v1/account/balance", () => {
  for (const path of ["/v1/api-keys", "/v1/account", "/v1/account/balance"]) {
    it(`${path}: ignores any query string (200 with its normal body)`, async () => {
      await fc.assert(
        fc.asyncProperty(queryPairs, async (pairs) => {
          const req = { method: "GET", path: path + queryString(pairs) };
          const res = await fuzzExchange(req);
          expect(res.status, describeExchange(req, res)).toBe(200);
          if (path === "/v1/account") expect(res.json.id).toBe(acc.accountId);
          if (path === "/v1/account/balance") expect(res.json.currency).toBe("USD");
          if (path === "/v1/api-keys") expect(res.json.object).toBe("list");
        }),
        { numRuns: 100 },
      );
    });
  }
});

describe("raw, unencoded paths and query strings on every management route", () => {
  it("never 5xx and always the one error shape", async () => {
    const routes = ["/v1/api-keys", "/v1/usage", "/v1/usage/summary", "/v1/account", "/v1/account/balance", "/v1/api-keys/"];
    const raw = fc.string({ unit: "grapheme-ascii", maxLength: 60 }).filter((s) => !s.includes("#"));
    const arb = fc.record({ route: fc.constantFrom(...routes), suffix: raw, query: raw, method: fc.constantFrom("GET", "GET", "PATCH", "DELETE") });
    await fc.assert(
      fc.asyncProperty(arb, async ({ route, suffix, query, method }) => {
        const path = `${route}${route.endsWith("/") ? suffix : ""}?${query}`;
        const hasBody = method === "PATCH";
        await fuzzExchange({ method, path, contentType: hasBody ? "application/json" : undefined, body: hasBody ? '{"name":"r"}' : undefined });
      }),
      opts,
    );
  });
});

describe("sanity: the fuzzing key is intact", () => {
  it("still has every permission and the account is still reachable", async () => {
    const r = await call(edge, "GET", "/v1/account", acc.adminKey);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const list = await call(edge, "GET", "/v1/api-keys", acc.adminKey);
    const me = list.body.data.find((k: { id: string }) => k.id === acc.adminKeyId);
    expect(me?.permissions).toContain("admin");
  });
});


const nulCases = (): [string, Sent, string][] => [
  ["POST /v1/api-keys name", { method: "POST", path: "/v1/api-keys", contentType: "application/json", body: JSON.stringify({ name: "a\u0000b" }) }, "name"],
  ["PATCH /v1/api-keys/:id name", { method: "PATCH", path: `/v1/api-keys/${patchTarget?.id ?? "apk_notyet"}`, contentType: "application/json", body: JSON.stringify({ name: "a\u0000b" }) }, "name"],
  ["GET /v1/usage ?model", { method: "GET", path: "/v1/usage?model=a%00b" }, "model"],
  ["GET /v1/usage ?api_key_id", { method: "GET", path: "/v1/usage?api_key_id=apk_%00" }, "api_key_id"],
];
const badUrlCases: Sent[] = [
  { method: "PATCH", path: "/v1/api-keys/%E0%A4%A", contentType: "application/json", body: '{"name":"x"}' },
  { method: "DELETE", path: "/v1/api-keys/%" },
  { method: "GET", path: "/v1/usage%zz" },
];
const longIdCases: Sent[] = ["DELETE", "PATCH"].map((method) => ({
  method,
  path: `/v1/api-keys/apk_${"a".repeat(120)}`,
  contentType: method === "PATCH" ? "application/json" : undefined,
  body: method === "PATCH" ? '{"name":"x"}' : undefined,
}));

describe("regressions found by the fuzzer", () => {
  // A NUL character in a string that reaches Postgres (text columns refuse 0x00) was a 500.
  for (const [i, [what, , field]] of nulCases().entries()) {
    it(`${what} containing a NUL character is a 400 naming '${field}', not a 500`, async () => {
      const req = nulCases()[i]![1];
      const res = await exchange(req);
      expect(res.status, describeExchange(req, res)).toBe(400);
      expect(res.json.error.param, describeExchange(req, res)).toBe(field);
    });
  }

  it("a malformed percent-encoding in the path gets the one error shape (400 invalid_request)", async () => {
    for (const req of badUrlCases) {
      const res = await exchange(req);
      expect(res.status, describeExchange(req, res)).toBe(400);
      expect(res.json.error.code, describeExchange(req, res)).toBe("invalid_request");
    }
  });

  it("a key id longer than the router's 100-character parameter limit is a 400 naming 'id' in the one error shape", async () => {
    for (const req of longIdCases) {
      const res = await exchange(req);
      expect(res.status, describeExchange(req, res)).toBe(400);
      expect(res.json.error.param, describeExchange(req, res)).toBe("id");
    }
  });

  it("an unknown body field with an empty name is still named in param", async () => {
    const req = { method: "POST", path: "/v1/api-keys", contentType: "application/json", body: '{"name":"x","":1}' };
    const res = await exchange(req);
    expect(res.status, describeExchange(req, res)).toBe(400);
    expect(res.json.error.param, describeExchange(req, res)).toBe("");
  });
});
