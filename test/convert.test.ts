/**
 * Conversion end to end: edge → gRPC → conversion service → real runsc
 * sandboxes (root, runsc, LibreOffice, poppler) → back, with billing and
 * usage logs in real Postgres; office documents through /v1/ocr (real
 * tesseract) and /v1/chat/completions (the fake OpenRouter upstream, a test
 * double).
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { balanceOf, call, createTestAccount, createTestKey, startStack, startTestEdge, testDb, usageRows, type TestStack } from "./harness.ts";
import { startFakeUpstream, type FakeUpstream } from "./fake-upstream.ts";
import { pngInfo } from "../internal/sandbox/testdocs.ts";
import type { RunningEdge } from "../internal/edge/index.ts";

const convertFixture = (name: string) => readFileSync(new URL(`./fixtures/convert/${name}`, import.meta.url));
const manifest = JSON.parse(readFileSync(new URL("./fixtures/convert/manifest.json", import.meta.url), "utf8")) as { pdfPages: Record<string, number> };
const DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
const ODT = "application/vnd.oasis.opendocument.text";
const SUPPORTED = ["DOCX", "PPTX", "DOC", "ODT", "RTF", "TXT"];

let upstream: FakeUpstream;
/** runsc sandboxes, one at a time and nobody waiting: a second concurrent conversion is refused. */
let stack: TestStack;
/** A stack whose conversion service has a 1-second time limit (cold sandboxes). */
let slow: TestStack;
/** An edge with no conversion service. */
let bare: RunningEdge;

beforeAll(async () => {
  upstream = await startFakeUpstream();
  stack = await startStack({ upstream, conversion: { FOLIO_SANDBOX: "runsc", FOLIO_CONVERSION_CONCURRENCY: "1", FOLIO_CONVERSION_QUEUE_LIMIT: "0" } });
  // Cold sandboxes: a pre-started or restored one converts the deck within the 1-second limit (their timeouts are tested in runsc.prestart.test.ts, runsc.restore.test.ts).
  slow = await startStack({ conversion: { FOLIO_SANDBOX: "runsc", FOLIO_CONVERSION_TIMEOUT_SECONDS: "1", FOLIO_RUNSC_PRESTART: "false", FOLIO_RUNSC_RESTORE: "false" } });
  bare = await startTestEdge();
});
afterAll(async () => {
  await stack?.close();
  await slow?.close();
  await bare?.close();
  await upstream?.close();
});

const convert = (s: { url: string }, key: string, name: string, mimeType: string) =>
  call(s, "POST", "/v1/convert", key, { file: convertFixture(name).toString("base64"), filename: name, mimeType });

describe("POST /v1/convert", () => {
  it("converts a two-page DOCX into two A4 PNGs at 200 DPI: the spec's result, charged 1 cent, logged", async () => {
    const acc = await createTestAccount({ creditsCents: 50 });
    const r = await convert(stack.edge, acc.adminKey, "two-pages.docx", DOCX);
    expect(r.status, JSON.stringify(r.body).slice(0, 500)).toBe(200);
    expect(r.body).toMatchObject({ object: "conversion.result", filename: "two-pages.docx", mime_type: DOCX });
    expect(r.body.id).toMatch(/^req_/);
    expect(r.body.created).toBeGreaterThan(1_700_000_000);
    expect(r.body.result.page_count).toBe(manifest.pdfPages["two-pages.docx"]);
    expect(r.body.result.document_page_count).toBe(r.body.result.page_count);
    expect(r.body.result.images).toHaveLength(r.body.result.page_count);
    for (const [i, image] of (r.body.result.images as { page_number: number; base64: string; mime_type: string; width: number; height: number }[]).entries()) {
      expect(image.page_number).toBe(i + 1);
      expect(image.mime_type).toBe("image/png");
      const info = pngInfo(Buffer.from(image.base64, "base64"));
      expect({ width: info.width, height: info.height, phys: info.phys }).toEqual({ width: 1654, height: 2339, phys: { x: 7874, y: 7874, unit: 1 } });
      expect({ width: image.width, height: image.height }).toEqual({ width: 1654, height: 2339 });
    }
    const u = r.body.usage;
    expect(u.compute_time_ms).toBeGreaterThan(0);
    expect(u.processing_time_ms).toBeGreaterThanOrEqual(u.compute_time_ms);
    // compute ms / 60000 × 0.278 cents, exact; + 5%; well under a cent → the 1-cent minimum.
    expect(u.provider_cost_cents).toBeCloseTo((u.compute_time_ms / 60_000) * 0.278, 9);
    expect(u.platform_fee_cents).toBeCloseTo(u.provider_cost_cents * 0.05, 9);
    expect(u.total_cost_cents).toBe(1);

    expect(await balanceOf(stack.edge, acc.adminKey)).toEqual({ balance_cents: 49, held_cents: 0 });
    const rows = await usageRows(acc.accountId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ id: r.body.id, endpoint: "/v1/convert", model: "folio/conversion", status: "success", pages_processed: 2, cost_cents: "1" });
    const { db } = await testDb();
    const ledger = await db.selectFrom("ledger_entries").selectAll().where("request_id", "=", r.body.id).execute();
    expect(ledger.map((l) => ({ kind: l.kind, amount: l.amount_cents }))).toEqual([{ kind: "debit", amount: -1 }]);
  });

  it("refuses an unsupported MIME type with the list of formats, before any sandbox or charge", async () => {
    const acc = await createTestAccount({ creditsCents: 5 });
    const r = await call(stack.edge, "POST", "/v1/convert", acc.adminKey, { file: Buffer.from("x").toString("base64"), filename: "a.xlsx", mimeType: "application/vnd.ms-excel" });
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error).toMatchObject({ code: "unsupported_format", param: "mimeType", supported_formats: SUPPORTED });
    expect(await usageRows(acc.accountId)).toHaveLength(0);
  });

  it("refuses bytes that are another format than declared (a PNG sent as DOCX) with unsupported_format", async () => {
    const acc = await createTestAccount({ creditsCents: 5 });
    const png = readFileSync(new URL("./fixtures/ocr/english.png", import.meta.url));
    const r = await call(stack.edge, "POST", "/v1/convert", acc.adminKey, { file: png.toString("base64"), filename: "x.docx", mimeType: DOCX });
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error.code).toBe("unsupported_format");
    expect(r.body.error.message).toMatch(/declared DOCX.*image/);
    expect(r.body.error.supported_formats).toEqual(SUPPORTED);
    expect(await balanceOf(stack.edge, acc.adminKey)).toEqual({ balance_cents: 5, held_cents: 0 });
  });

  it("answers conversion_failed (500) for a truncated DOCX and for a password-protected ODT, charging nothing", async () => {
    const acc = await createTestAccount({ creditsCents: 5 });
    const truncated = convertFixture("two-pages.docx").subarray(0, 1500);
    const t = await call(stack.edge, "POST", "/v1/convert", acc.adminKey, { file: truncated.toString("base64"), filename: "cut.docx", mimeType: DOCX });
    expect(t.status, JSON.stringify(t.body)).toBe(500);
    expect(t.body.error.code).toBe("conversion_failed");
    const p = await convert(stack.edge, acc.adminKey, "password.odt", ODT);
    expect(p.status, JSON.stringify(p.body)).toBe(500);
    expect(p.body.error.code).toBe("conversion_failed");
    expect(await balanceOf(stack.edge, acc.adminKey)).toEqual({ balance_cents: 5, held_cents: 0 });
    const rows = await usageRows(acc.accountId);
    expect(rows.map((r) => ({ status: r.status, code: r.error_code, cost: r.cost_cents }))).toEqual([
      { status: "error", code: "conversion_failed", cost: "0" },
      { status: "error", code: "conversion_failed", cost: "0" },
    ]);
  });

  it("answers timeout (500) when the sandbox passes its time limit", async () => {
    const acc = await createTestAccount({ creditsCents: 5 });
    const r = await convert(slow.edge, acc.adminKey, "slides.pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation");
    expect(r.status, JSON.stringify(r.body)).toBe(500);
    expect(r.body.error.code).toBe("timeout");
    expect(await balanceOf(slow.edge, acc.adminKey)).toEqual({ balance_cents: 5, held_cents: 0 });
  });

  it("refuses a conversion when every sandbox is busy and the queue is full (503, retryable)", async () => {
    const acc = await createTestAccount({ creditsCents: 10 });
    const first = convert(stack.edge, acc.adminKey, "hello.txt", "text/plain");
    // The first holds the only slot for seconds; wait until it is running.
    for (let i = 0; i < 200 && stack.conversion!.service.load().running === 0; i++) await new Promise((r) => setTimeout(r, 25));
    const second = await convert(stack.edge, acc.adminKey, "hello.txt", "text/plain");
    expect(second.status, JSON.stringify(second.body)).toBe(503);
    expect(second.body.error.code).toBe("service_unavailable");
    expect(second.headers.get("retry-after")).toBe("5");
    const done = await first;
    expect(done.status, JSON.stringify(done.body).slice(0, 300)).toBe(200);
    expect(done.body.result.page_count).toBe(1);
  });

  it("needs credits (402 before any sandbox) and the convert:write permission (403)", async () => {
    const poor = await createTestAccount({ creditsCents: 0 });
    const r = await convert(stack.edge, poor.adminKey, "hello.txt", "text/plain");
    expect(r.status, JSON.stringify(r.body)).toBe(402);
    expect(r.body.error.code).toBe("insufficient_credits");
    const acc = await createTestAccount({ creditsCents: 5 });
    const ocrOnly = await createTestKey(acc.accountId, ["ocr:write"]);
    const denied = await convert(stack.edge, ocrOnly.key, "hello.txt", "text/plain");
    expect(denied.status, JSON.stringify(denied.body)).toBe(403);
  });

  it("answers conversion_not_available (503) where no conversion service is configured", async () => {
    const acc = await createTestAccount({ creditsCents: 5 });
    const r = await convert(bare, acc.adminKey, "hello.txt", "text/plain");
    expect(r.status, JSON.stringify(r.body)).toBe(503);
    expect(r.body.error.code).toBe("conversion_not_available");
    expect(r.headers.get("retry-after")).toBe("60");
  });
});

describe("GET /v1/convert/pricing and POST /v1/convert/estimate", () => {
  it("lists the rate, fee, minimum, an example per format and the format labels", async () => {
    const acc = await createTestAccount({ creditsCents: 1 });
    const r = await call(stack.edge, "GET", "/v1/convert/pricing", acc.adminKey);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.object).toBe("conversion.pricing");
    expect(r.body.pricing).toMatchObject({ base_rate_per_minute: "0.00278", platform_fee_percentage: "5", minimum_charge: "0.01" });
    expect(r.body.pricing.examples.map((e: { format: string }) => e.format)).toEqual(SUPPORTED);
    for (const e of r.body.pricing.examples) expect(e.estimatedCost).toBe("$0.01");
    expect(r.body.supported_formats).toHaveLength(6);
    expect(r.body.supported_formats[0]).toMatch(/^DOCX/);
  });

  it("estimates a DOCX conversion and refuses an unsupported type", async () => {
    const acc = await createTestAccount({ creditsCents: 1 });
    const r = await call(stack.edge, "POST", "/v1/convert/estimate", acc.adminKey, { mimeType: DOCX });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ object: "conversion.estimate", mimeType: DOCX, estimated_cost: { cents: 1, formatted: "$0.01" } });
    expect(r.body.estimated_time_seconds).toBeGreaterThan(0);
    expect(["observed", "default"]).toContain(r.body.basis);
    const bad = await call(stack.edge, "POST", "/v1/convert/estimate", acc.adminKey, { mimeType: "image/png" });
    expect(bad.status, JSON.stringify(bad.body)).toBe(400);
    expect(bad.body.error).toMatchObject({ code: "unsupported_format", supported_formats: SUPPORTED });
  });
});

describe("office documents in /v1/ocr and /v1/chat/completions", () => {
  it("/v1/ocr converts a DOCX and reads both pages with tesseract; the conversion is one more billed component", async () => {
    const acc = await createTestAccount({ creditsCents: 50 });
    const r = await call(stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64: convertFixture("two-pages.docx").toString("base64"), model: "local/tesseract" });
    expect(r.status, JSON.stringify(r.body).slice(0, 500)).toBe(200);
    expect(r.body.result.pages).toHaveLength(2);
    expect(r.body.result.text).toMatch(/quick brown fox/i);
    expect(r.body.usage.pages_processed).toBe(2);
    // Two tesseract pages (0.1 + 0.1 cents → 1 cent) plus the conversion (1 cent minimum).
    expect(r.body.usage.total_cost_cents).toBe(2);
    expect(await balanceOf(stack.edge, acc.adminKey)).toEqual({ balance_cents: 48, held_cents: 0 });
  });

  it("/v1/chat/completions turns an office data URL into page images and reports the conversion cost in the svc extension", async () => {
    const acc = await createTestAccount({ creditsCents: 50 });
    upstream.reset();
    const dataUrl = `data:${DOCX};base64,${convertFixture("two-pages.docx").toString("base64")}`;
    const r = await call(stack.edge, "POST", "/v1/chat/completions", acc.adminKey, {
      model: "openai/gpt-4.1-mini",
      messages: [{ role: "user", content: [{ type: "text", text: "Read this." }, { type: "image_url", image_url: { url: dataUrl } }] }],
    });
    expect(r.status, JSON.stringify(r.body).slice(0, 500)).toBe(200);
    expect(r.body.folio.conversion_cost_cents).toBe(1);
    expect(r.body.folio.pages_processed).toBe(2);
    const sent = upstream.chatRequests()[0]!.body as { messages: { content: { type: string; image_url?: { url: string } }[] }[] };
    const images = sent.messages[0]!.content.filter((p) => p.type === "image_url");
    expect(images).toHaveLength(2);
    expect(images[0]!.image_url!.url).toMatch(/^data:image\/png;base64,/);
  });
});

describe("metrics of a conversion", () => {
  it("count conversions, compute time and gRPC calls on both sides, and upstream calls by model", async () => {
    const scrape = async (url: string | null) => (await fetch(url!)).text();
    const scrapeAll = async () => ({ conversion: await scrape(stack.conversion!.metricsUrl), edge: await scrape(stack.edge.metricsUrl), extraction: await scrape(stack.extraction.metricsUrl) });
    const value = (text: string, series: string) => Number(new RegExp(`^${series.replace(/[{}"/.]/g, "\\$&")} ([0-9.e+-]+)$`, "m").exec(text)?.[1] ?? NaN);
    const before = await scrapeAll();

    // What is counted below: a DOCX converted for an upstream model, an ODT that cannot be converted, a page read by tesseract.
    const acc = await createTestAccount({ creditsCents: 50 });
    const dataUrl = `data:${DOCX};base64,${convertFixture("two-pages.docx").toString("base64")}`;
    const chat = await call(stack.edge, "POST", "/v1/chat/completions", acc.adminKey, {
      model: "openai/gpt-4.1-mini",
      messages: [{ role: "user", content: [{ type: "text", text: "Read this." }, { type: "image_url", image_url: { url: dataUrl } }] }],
    });
    expect(chat.status, JSON.stringify(chat.body).slice(0, 500)).toBe(200);
    const odt = await convert(stack.edge, acc.adminKey, "password.odt", ODT);
    expect(odt.status, JSON.stringify(odt.body)).toBe(500);
    const png = readFileSync(new URL("./fixtures/ocr/english.png", import.meta.url));
    const ocr = await call(stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64: png.toString("base64"), model: "local/tesseract" });
    expect(ocr.status, JSON.stringify(ocr.body).slice(0, 500)).toBe(200);

    const after = await scrapeAll();
    /** How much `series` of `process` grew during this test (a series not there before counts from 0). */
    const grew = (process: keyof typeof after, series: string) => value(after[process], series) - (value(before[process], series) || 0);
    expect(grew("conversion", 'folio_conversions_total{format="DOCX",outcome="ok",process="conversion"}'), after.conversion.slice(0, 2000)).toBeGreaterThanOrEqual(1);
    expect(grew("conversion", 'folio_conversions_total{format="ODT",outcome="conversion_failed",process="conversion"}')).toBeGreaterThanOrEqual(1);
    expect(grew("conversion", 'folio_conversion_compute_seconds_total{format="DOCX",backend="runsc",process="conversion"}')).toBeGreaterThan(0);
    expect(grew("conversion", 'folio_grpc_server_calls_total{method="/folio.conversion.v1.ConversionService/Convert",code="OK",process="conversion"}')).toBeGreaterThanOrEqual(1);
    expect(grew("edge", 'folio_grpc_client_calls_total{method="/folio.conversion.v1.ConversionService/Convert",code="OK",process="edge"}'), after.edge.slice(0, 2000)).toBeGreaterThanOrEqual(1);
    expect(grew("edge", 'folio_grpc_client_calls_total{method="/folio.extraction.v1.ExtractionService/ExtractPage",code="OK",process="edge"}')).toBeGreaterThanOrEqual(1);
    expect(grew("extraction", 'folio_upstream_calls_total{model="openai/gpt-4.1-mini",outcome="ok",process="extraction"}'), after.extraction.slice(0, 2000)).toBeGreaterThanOrEqual(1);
    expect(grew("extraction", 'folio_upstream_tokens_total{model="openai/gpt-4.1-mini",kind="prompt",process="extraction"}')).toBeGreaterThan(0);
    expect(grew("extraction", 'folio_upstream_cost_cents_total{model="openai/gpt-4.1-mini",process="extraction"}')).toBeGreaterThan(0);
  });
});
