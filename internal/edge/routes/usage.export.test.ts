/**
 * GET /v1/usage/export and the list's `starting_after` over HTTP against
 * real Postgres: every entry of the window, oldest first, exactly as stored
 * (amounts as numeric text), across several of the export's pages; CSV
 * quoting; the filters; the permission; keyset pages equal offset pages.
 */
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunningEdge } from "../index.ts";
import { newId } from "../../platform/ids/index.ts";
import { EXPORT_PAGE } from "../../usage/export.ts";
import { call, createTestAccount, createTestKey, startTestEdge, testDb } from "../../../test/harness.ts";

let edge: RunningEdge;
let acc: Awaited<ReturnType<typeof createTestAccount>>;
const T0 = Date.parse("2026-04-01T00:00:00Z");
const ROWS = EXPORT_PAGE * 2 + 17;

beforeAll(async () => {
  edge = await startTestEdge();
  acc = await createTestAccount();
  const { db } = await testDb();
  // ROWS rows, three in each second, later ids earlier in the second (the order is by time, then id); every 7th an error, every 5th by another model whose name needs CSV quoting.
  await sql`
    insert into usage_logs (id, account_id, api_key_id, created_at, endpoint, model, status, error_code, tokens_used, pages_processed,
                            provider_cost_cents, platform_fee_cents, cost_cents, processing_time_ms)
    select 'req_exp' || lpad(i::text, 6, '0'), ${acc.accountId}, ${acc.adminKeyId}, ${new Date(T0).toISOString()}::timestamptz + (i / 3) * interval '1 second' + (2 - i % 3) * interval '100 milliseconds',
      '/v1/ocr', case when i % 5 = 0 then 'odd "model", quoted' else 'local/tesseract' end,
      case when i % 7 = 0 then 'error' else 'success' end, case when i % 7 = 0 then 'upstream_error' end,
      i, 1, 0.000000000123 * i, 0.05 * i, i % 3, 100 + i
    from generate_series(0, ${ROWS - 1}) i`.execute(db);
}, 60_000);
afterAll(async () => {
  await edge?.close();
});

const id = (i: number) => `req_exp${String(i).padStart(6, "0")}`;
/** Row numbers in time order: by second, and within one the later numbers first. */
const inTimeOrder = (n: number) => Array.from({ length: n }, (_, i) => i).sort((a, b) => Math.floor(a / 3) - Math.floor(b / 3) || b - a);

const window = `start_date=${T0 / 1000}&end_date=${T0 / 1000 + 86_400}`;

async function get(path: string, key = acc.adminKey): Promise<{ status: number; type: string | null; disposition: string | null; text: string }> {
  const res = await fetch(edge.url + path, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, type: res.headers.get("content-type"), disposition: res.headers.get("content-disposition"), text: await res.text() };
}

/** A CSV line's fields (RFC 4180 quoting). */
function fields(line: string): string[] {
  const out: string[] = [];
  const re = /("((?:[^"]|"")*)"|[^,]*)(,|$)/g;
  for (let m = re.exec(line); m && m.index < line.length; m = re.exec(line)) {
    out.push(m[2] !== undefined ? m[2].replaceAll('""', '"') : m[1]!);
    if (m[3] === "") break;
  }
  return out;
}

describe("GET /v1/usage/export", () => {
  it("streams every entry as CSV, oldest first, amounts exactly as stored, across several reads", async () => {
    const r = await get(`/v1/usage/export?${window}&format=csv`);
    expect(r.status).toBe(200);
    expect(r.type).toBe("text/csv; charset=utf-8");
    expect(r.disposition).toBe(`attachment; filename="usage-${T0 / 1000}-${T0 / 1000 + 86_400}.csv"`);
    const lines = r.text.split("\r\n");
    expect(lines.at(-1)).toBe("");
    const [header, ...body] = lines.slice(0, -1).map(fields);
    expect(header).toEqual([
      "id", "created_at", "endpoint", "model", "status", "error_code", "api_key_id", "prompt_tokens", "completion_tokens", "tokens_used",
      "pages_processed", "provider_cost_cents", "platform_fee_cents", "cost_cents", "processing_time_ms",
    ]);
    expect(body).toHaveLength(ROWS);
    expect(body.map((f) => f[0])).toEqual(inTimeOrder(ROWS).map(id));
    const i = 35; // an error row of the odd model
    expect(body.find((f) => f[0] === id(i))).toEqual([
      "req_exp000035", String(T0 / 1000 + Math.floor(i / 3)), "/v1/ocr", 'odd "model", quoted', "error", "upstream_error", acc.adminKeyId, "0", "0", "35", "1",
      "0.000000004305", "1.75", "2", "135",
    ]);
    expect(body[1]![5], "no error code: an empty field").toBe("");
  });

  it("streams NDJSON with the same entries, numbers as exact JSON numbers, and applies the list's filters", async () => {
    const r = await get(`/v1/usage/export?${window}&format=ndjson&status=error&model=${encodeURIComponent('odd "model", quoted')}`);
    expect(r.status).toBe(200);
    expect(r.type).toBe("application/x-ndjson; charset=utf-8");
    const lines = r.text.trimEnd().split("\n");
    const want = inTimeOrder(ROWS).filter((i) => i % 35 === 0);
    expect(lines).toHaveLength(want.length);
    expect(lines.find((l) => l.includes(id(35)))).toBe(
      `{"id":"req_exp000035","created_at":${T0 / 1000 + 11},"endpoint":"/v1/ocr","model":"odd \\"model\\", quoted","status":"error","error_code":"upstream_error",` +
        `"api_key_id":"${acc.adminKeyId}","prompt_tokens":0,"completion_tokens":0,"tokens_used":35,"pages_processed":1,` +
        `"provider_cost_cents":0.000000004305,"platform_fee_cents":1.75,"cost_cents":2,"processing_time_ms":135}`,
    );
    expect(lines.map((l) => JSON.parse(l).id)).toEqual(want.map(id));
  });

  it("is empty but for the CSV header when nothing matches, refuses an unknown format, and needs usage:read", async () => {
    expect((await get(`/v1/usage/export?start_date=0&end_date=10`)).text).toBe("id,created_at,endpoint,model,status,error_code,api_key_id,prompt_tokens,completion_tokens,tokens_used,pages_processed,provider_cost_cents,platform_fee_cents,cost_cents,processing_time_ms\r\n");
    const bad = await get(`/v1/usage/export?${window}&format=xlsx`);
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text).error.message).toMatch(/format/);
    const ocrOnly = await createTestKey(acc.accountId, ["ocr:write"]);
    expect((await get(`/v1/usage/export?${window}`, ocrOnly.key)).status).toBe(403);
  });
});

describe("the last second a window may end on (end_date 253402300799, 9999-12-31T23:59:59Z)", () => {
  // Found by the fuzz test: the window's end (the next second, year 10000) sent as ISO text was refused by Postgres (a 500).
  it("is answered by the summary, the list and the export", async () => {
    const end = 253_402_300_799;
    for (const path of [`/v1/usage/summary?end_date=${end}&group_by=day`, `/v1/usage?end_date=${end}&offset=1000`, `/v1/usage/export?end_date=${end}`]) {
      const r = await get(path);
      expect(r.status, `${path}: ${r.text.slice(0, 200)}`).toBe(200);
    }
  });
});

describe("GET /v1/usage?starting_after", () => {
  it("pages through the same entries as offset does, and refuses both at once or an unknown entry", async () => {
    const narrow = `start_date=${T0 / 1000}&end_date=${T0 / 1000 + 230}&limit=100`; // 693 entries
    const byOffset: string[] = [];
    const byCursor: string[] = [];
    for (let offset = 0; ; offset += 100) {
      const r = await call(edge, "GET", `/v1/usage?${narrow}&offset=${offset}`, acc.adminKey);
      byOffset.push(...r.body.data.map((e: { id: string }) => e.id));
      if (!r.body.has_more) break;
    }
    let after = "";
    for (;;) {
      const r = await call(edge, "GET", `/v1/usage?${narrow}${after ? `&starting_after=${after}` : ""}`, acc.adminKey);
      expect(r.status).toBe(200);
      expect(r.body.total_count).toBe(693);
      byCursor.push(...r.body.data.map((e: { id: string }) => e.id));
      if (!r.body.has_more) break;
      after = r.body.data.at(-1).id;
    }
    expect(byOffset).toHaveLength(693);
    expect(byCursor).toEqual(byOffset);
    const both = await call(edge, "GET", `/v1/usage?${narrow}&offset=100&starting_after=${byOffset[0]}`, acc.adminKey);
    expect([both.status, both.body.error.param]).toEqual([400, "starting_after"]);
    const unknown = await call(edge, "GET", `/v1/usage?${narrow}&starting_after=${newId("req")}`, acc.adminKey);
    expect([unknown.status, unknown.body.error.code, unknown.body.error.param]).toEqual([400, "invalid_request", "starting_after"]);
  });
});
