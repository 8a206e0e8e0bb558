/**
 * POST /v1/ocr end to end: edge → gRPC → extraction service → real tesseract,
 * or the fake OpenRouter upstream (a test double), with billing and usage logs
 * in real Postgres.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { rasterizePdf } from "../internal/documents/index.ts";
import { TesseractEngine } from "../internal/extraction/engines/tesseract.ts";
import { call, createTestAccount, usageRows, upstreamStack } from "./harness.ts";
import { cer } from "./cer.ts";

const fixture = (name: string) => readFileSync(new URL(`./fixtures/ocr/${name}`, import.meta.url));
const text = (name: string) => fixture(name).toString("utf8");

const ctx = upstreamStack();

describe("POST /v1/ocr with local/tesseract", () => {
  it("reads a PNG given as base64: the spec's OCR result, billed and logged", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const r = await call(ctx.stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64: fixture("english.png").toString("base64"), mime_type: "image/png", model: "local/tesseract" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ object: "ocr.result", model: "local/tesseract" });
    expect(r.body.id).toMatch(/^req_/);
    expect(typeof r.body.created).toBe("number");
    const got = r.body.result.text as string;
    expect(cer(got, text("english.txt")), got).toBeLessThan(0.05);
    expect(r.body.result.pages).toHaveLength(1);
    expect(r.body.result.pages[0].page_number).toBe(1);
    expect(r.body.result.tables).toEqual([]);
    expect(r.body.result.confidence).toBeGreaterThan(0.5);
    expect(r.body.result.confidence).toBeLessThanOrEqual(1);
    const u = r.body.usage;
    expect(u).toMatchObject({ pages_processed: 1, prompt_tokens: 0, completion_tokens: 0, tokens_used: 0 });
    // Default local price: 0.001 $/page = 0.1 cent, + 5% = 0.105 → charged 1 cent (minimum).
    expect(u.provider_cost_cents).toBeCloseTo(0.1, 10);
    expect(u.platform_fee_cents).toBeCloseTo(0.005, 10);
    expect(u.total_cost_cents).toBe(1);
    expect(u.processing_time_ms).toBeGreaterThan(0);

    const bal = await call(ctx.stack.edge, "GET", "/v1/account/balance", acc.adminKey);
    expect(bal.body.balance_cents).toBe(99);
    expect(bal.body.held_cents).toBe(0);
    const rows = await usageRows(acc.accountId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ id: r.body.id, status: "success", model: "local/tesseract", pages_processed: 1, cost_cents: "1", endpoint: "/v1/ocr" });
  });

  it("reads every page of a multi-page PDF, pages joined by a blank line: the text tesseract gives for the PNG pages", async () => {
    const acc = await createTestAccount();
    const pdf = fixture("multipage.pdf");
    const r = await call(ctx.stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64: pdf.toString("base64"), model: "local/tesseract" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const pages = r.body.result.pages as { page_number: number; text: string; confidence: number }[];
    expect(pages.map((p) => p.page_number)).toEqual([1, 2, 3]);
    for (const p of pages) expect(cer(p.text, text(`multipage.page-${p.page_number}.txt`)), p.text).toBeLessThan(0.08);
    // The pages reached the engine as raw grey pixels, streamed; before, as PNG once all were rendered. Same reading.
    const engine = new TesseractEngine();
    const signal = new AbortController().signal;
    const { pages: pngs } = await rasterizePdf(pdf, { maxPages: 10, timeoutMs: 60_000 });
    for (const [i, png] of pngs.entries()) {
      const before = await engine.extractPage({ pageNumber: i + 1, image: png, mimeType: "image/png" }, { extractTables: false, outputFormat: "text" }, signal);
      expect(pages[i]!.text, `page ${i + 1}`).toBe(before.text);
      expect(pages[i]!.confidence, `page ${i + 1}`).toBeCloseTo(before.confidence!, 6);
    }
    expect(r.body.result.text).toBe(pages.map((p) => p.text).join("\n\n"));
    expect(r.body.usage.pages_processed).toBe(3);
    // 3 pages × 0.1 cent = 0.3 cent + 5% → 1 cent.
    expect(r.body.usage.total_cost_cents).toBe(1);
  });

  it("maps options.language to installed traineddata; an uninstalled one is a 400 naming the installed languages, logged with no charge", async () => {
    const acc = await createTestAccount({ creditsCents: 50 });
    const de = await call(ctx.stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64: fixture("german.png").toString("base64"), model: "local/tesseract", options: { language: "de" } });
    expect(de.status, JSON.stringify(de.body)).toBe(200);
    expect(cer(de.body.result.text, text("german.txt")), de.body.result.text).toBeLessThan(0.05);
    const ja = await call(ctx.stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64: fixture("german.png").toString("base64"), model: "local/tesseract", options: { language: "ja" } });
    expect(ja.status).toBe(400);
    expect(ja.body.error.param).toBe("options.language");
    expect(ja.body.error.message).toMatch(/en/);
    const rows = await usageRows(acc.accountId);
    expect(rows.map((x) => [x.status, x.cost_cents])).toEqual([
      ["success", "1"],
      ["error", "0"],
    ]);
    expect((await call(ctx.stack.edge, "GET", "/v1/account/balance", acc.adminKey)).body.balance_cents).toBe(49);
  });
});

describe("POST /v1/ocr with an upstream model (fake OpenRouter)", () => {
  it("sends the page as an image, returns the model's text, and bills the reported cost + 5%", async () => {
    const acc = await createTestAccount({ creditsCents: 10_000 });
    ctx.upstream.script("openai/gpt-4.1-mini", { kind: "text", text: "Hello from the model" }, { times: 1 });
    const before = ctx.upstream.chatRequests().length;
    const r = await call(ctx.stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64: fixture("english.png").toString("base64"), model: "openai/gpt-4.1-mini" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.model).toBe("openai/gpt-4.1-mini");
    expect(r.body.result.text).toContain("Hello from the model");
    // Upstream models get the page as sent: nothing is straightened, nothing said of it.
    expect(Object.keys(r.body.result.pages[0])).not.toContain("rotation");
    const sent = ctx.upstream.chatRequests().slice(before);
    expect(sent).toHaveLength(1);
    expect(JSON.stringify(sent[0]!.body)).toContain("data:image/png;base64,");
    const u = r.body.usage;
    expect(u.prompt_tokens).toBeGreaterThan(0);
    expect(u.tokens_used).toBe(u.prompt_tokens + u.completion_tokens);
    expect(u.platform_fee_cents).toBeCloseTo(u.provider_cost_cents * 0.05, 9);
    expect(u.total_cost_cents).toBe(Math.max(1, Math.ceil(u.provider_cost_cents * 1.05 - 1e-9)));
  });

  it("sends an upstream model a PDF's pages as 200-DPI PNG images, one request per page", async () => {
    const acc = await createTestAccount({ creditsCents: 10_000 });
    const before = ctx.upstream.chatRequests().length;
    const r = await call(ctx.stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64: fixture("multipage.pdf").toString("base64"), model: "openai/gpt-4.1-mini" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.result.pages.map((p: { page_number: number }) => p.page_number)).toEqual([1, 2, 3]);
    const sent = ctx.upstream.chatRequests().slice(before);
    expect(sent).toHaveLength(3);
    for (const s of sent) {
      const body = JSON.stringify(s.body);
      expect(body).toContain("data:image/png;base64,");
      expect(body).not.toContain("image/x-portable-graymap");
    }
  });

  it("resolves strategies and aliases through the configured mapping", async () => {
    const acc = await createTestAccount({ creditsCents: 10_000 });
    const rec = await call(ctx.stack.edge, "GET", "/v1/models/recommended");
    const want = Object.fromEntries((rec.body.strategies as { strategy: string; model: string }[]).map((s) => [s.strategy, s.model]));
    for (const [body, strategy] of [
      [{ strategy: "cost" }, "cost"],
      [{ provider_preferences: { strategy: "quality" } }, "quality"],
      [{ model: "folio/speed" }, "speed"],
      [{}, "balanced"],
    ] as const) {
      const r = await call(ctx.stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64: fixture("english.png").toString("base64"), ...body });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.model, JSON.stringify(body)).toBe(want[strategy]);
    }
  });

  it("returns tables the model gives when extract_tables is set", async () => {
    const acc = await createTestAccount({ creditsCents: 10_000 });
    ctx.upstream.script("openai/gpt-4.1-mini", { kind: "table", format: "json" }, { times: 1 });
    const r = await call(ctx.stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64: fixture("table.png").toString("base64"), model: "openai/gpt-4.1-mini", options: { extract_tables: true } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.result.tables.length).toBeGreaterThan(0);
    const t = r.body.result.tables[0];
    expect(t.page_number).toBe(1);
    expect(t.page_numbers).toEqual([1]);
    expect(Array.isArray(t.rows[0])).toBe(true);
    expect(t.markdown).toContain("|");
    // Every cell once, and the same table as HTML: upstream tables have no spans, but the shape is every model's.
    expect(t.cells).toHaveLength(t.rows.flat().length);
    expect(t.cells[0]).toEqual({ row: 0, col: 0, row_span: 1, col_span: 1, text: t.rows[0][0] });
    expect(t.html).toMatch(/^<table><tr><th>/);
    expect(t).not.toHaveProperty("closes_page");
  });

  it("maps an upstream 429 to a 502 upstream_error, logged as an error with no charge, never retried on another model", async () => {
    const acc = await createTestAccount({ creditsCents: 10_000 });
    ctx.upstream.script("openai/gpt-4.1-mini", { kind: "rate-limited" }, { times: 1 });
    const before = ctx.upstream.chatRequests().length;
    const r = await call(ctx.stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64: fixture("english.png").toString("base64"), model: "openai/gpt-4.1-mini" });
    expect(r.status, JSON.stringify(r.body)).toBe(502);
    expect(r.body.error.code).toBe("upstream_error");
    const sent = ctx.upstream.chatRequests().slice(before);
    expect(sent.map((s) => s.model)).toEqual(["openai/gpt-4.1-mini"]);
    const rows = await usageRows(acc.accountId);
    expect(rows.map((x) => [x.status, x.error_code, x.cost_cents])).toEqual([["error", "upstream_error", "0"]]);
    expect((await call(ctx.stack.edge, "GET", "/v1/account/balance", acc.adminKey)).body.balance_cents).toBe(10_000);
  });
});

describe("POST /v1/ocr refuses bad input with a clear 4xx", () => {
  const png = () => fixture("english.png").toString("base64");
  it.each([
    ["neither url nor base64", {}, 400, "invalid_request"],
    ["both url and base64", { url: "https://example.com/a.png", base64: "aGk=" }, 400, "invalid_request"],
    ["a data-URL prefix", { base64: "data:image/png;base64,aGk=" }, 400, "invalid_request"],
    ["broken base64", { base64: "@@@@" }, 400, "invalid_request"],
    ["an unknown model", { base64: "aGk=", model: "nobody/nothing" }, 400, "unsupported_model"],
    ["an unknown strategy", { base64: "aGk=", strategy: "fastest" }, 400, "invalid_request"],
    ["a bad output_format", { base64: "aGk=", options: { output_format: "xml" } }, 400, "invalid_request"],
    ["an unknown field", { base64: "aGk=", modle: "x" }, 400, "invalid_request"],
    ["a loopback url", { url: "http://127.0.0.1:1/x.png" }, 400, "invalid_request"],
    ["a metadata url", { url: "http://169.254.169.254/latest/meta-data" }, 400, "invalid_request"],
  ])("%s", async (_what, body, status, code) => {
    const acc = await createTestAccount();
    const r = await call(ctx.stack.edge, "POST", "/v1/ocr", acc.adminKey, body);
    expect(r.status, JSON.stringify(r.body)).toBe(status);
    expect(r.body.error.code).toBe(code);
    expect(typeof r.body.error.message).toBe("string");
  });

  it("an unsupported format is unsupported_format with the supported list", async () => {
    const acc = await createTestAccount();
    const r = await call(ctx.stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64: Buffer.from([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 200, 201]).toString("base64") });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("unsupported_format");
    expect(r.body.error.supported_formats).toContain("PNG");
  });

  it("an office document without a conversion service is conversion_not_available", async () => {
    const acc = await createTestAccount();
    const rtf = Buffer.from("{\\rtf1\\ansi Hello}").toString("base64");
    const r = await call(ctx.stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64: rtf, mime_type: "application/rtf" });
    expect(r.status).toBe(503);
    expect(r.body.error.code).toBe("conversion_not_available");
    expect(r.headers.get("retry-after")).toBe("60");
  });

  it("402 when the credits run out in the middle of a stream of requests", async () => {
    const acc = await createTestAccount({ creditsCents: 3 });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await call(ctx.stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64: png(), model: "local/tesseract" })).status);
    expect(statuses).toEqual([200, 200, 200, 402, 402]);
    const r = await call(ctx.stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64: png(), model: "local/tesseract" });
    expect(r.body.error.code).toBe("insufficient_credits");
    expect((await call(ctx.stack.edge, "GET", "/v1/account/balance", acc.adminKey)).body.balance_cents).toBe(0);
  });

  it("needs ocr:write", async () => {
    const acc = await createTestAccount();
    const created = await call(ctx.stack.edge, "POST", "/v1/api-keys", acc.adminKey, { name: "ro", permissions: ["models:read"] });
    const r = await call(ctx.stack.edge, "POST", "/v1/ocr", created.body.key, { base64: png() });
    expect(r.status).toBe(403);
  });
});

describe("options.include_layout on POST /v1/ocr", () => {
  it("adds each page's layout (blocks in reading order with their types and boxes) and the tables as cells", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const r = await call(ctx.stack.edge, "POST", "/v1/ocr", acc.adminKey, {
      base64: fixture("columns.png").toString("base64"),
      model: "local/tesseract",
      options: { include_layout: true, extract_tables: true },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const page = r.body.result.pages[0];
    expect(page.layout.width).toBe(1654);
    expect(page.layout.blocks.map((b: { type: string }) => b.type)).toEqual(["text", "text", "text", "text", "text", "table", "footer"]);
    expect(page.layout.blocks.every((b: { words?: unknown }) => b.words === undefined)).toBe(true);
    expect(r.body.result.tables).toHaveLength(1);
    expect(r.body.result.tables[0]).toMatchObject({ page_number: 1, rows: expect.arrayContaining([["Desk lamp", "2", "24.95", "49.90"]]) });
    // Each filled cell has its words' box, inside the table's block.
    const table = page.layout.blocks.find((b: { type: string }) => b.type === "table");
    const filled = r.body.result.tables[0].cells.filter((c: { text: string }) => c.text);
    expect(filled.length).toBeGreaterThan(8);
    for (const c of filled) {
      expect(c.bbox, c.text).toHaveLength(4);
      expect(c.bbox[0] >= table.bbox[0] - 2 && c.bbox[1] >= table.bbox[1] - 2 && c.bbox[2] <= table.bbox[2] + 2 && c.bbox[3] <= table.bbox[3] + 2, `${c.text} ${c.bbox} in ${table.bbox}`).toBe(true);
    }
    expect(cer(r.body.result.text, text("columns.txt")), r.body.result.text).toBeLessThan(0.02);
  });

  it('"words" adds every word with its box and confidence; without the option the page has no layout', async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const base64 = fixture("english.png").toString("base64");
    const withWords = await call(ctx.stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64, model: "local/tesseract", options: { include_layout: "words" } });
    expect(withWords.status, JSON.stringify(withWords.body)).toBe(200);
    const words = withWords.body.result.pages[0].layout.blocks.flatMap((b: { words: unknown[] }) => b.words);
    expect(words.length).toBeGreaterThan(50);
    expect(words[0]).toEqual({ text: "Quarterly", bbox: expect.any(Array), confidence: expect.any(Number) });
    const plain = await call(ctx.stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64, model: "local/tesseract" });
    expect(plain.body.result.pages[0].layout).toBeUndefined();
  });

  it("reads a page sent upside down straightened and says so in the page and its layout, boxes in the page as sent", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const sharp = (await import("sharp")).default;
    const upsideDown = await sharp(fixture("english.png")).rotate(180).png().toBuffer();
    const r = await call(ctx.stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64: upsideDown.toString("base64"), model: "local/tesseract", options: { include_layout: true } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const page = r.body.result.pages[0];
    expect({ rotation: page.rotation, skew: page.skew_degrees, layout: [page.layout.rotation, page.layout.skew_degrees, page.layout.width, page.layout.height] }).toEqual({
      rotation: 180,
      skew: 0,
      layout: [180, 0, 1654, 2339],
    });
    // The title is at the top of the upright page: at the bottom of the page as sent.
    expect(page.layout.blocks[0].bbox[1], JSON.stringify(page.layout.blocks[0])).toBeGreaterThan(2339 / 2);
    expect(cer(r.body.result.text, text("english.txt")), r.body.result.text).toBeLessThan(0.02);
    const upright = await call(ctx.stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64: fixture("english.png").toString("base64"), model: "local/tesseract" });
    expect({ rotation: upright.body.result.pages[0].rotation, skew: upright.body.result.pages[0].skew_degrees }).toEqual({ rotation: 0, skew: 0 });
    // Three readings (upside down and stopped, straightened, upright) and the two trial readings of the upside-down page.
  }, 120_000);

  it("is a 400 naming the option for an upstream model, before anything is charged", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const r = await call(ctx.stack.edge, "POST", "/v1/ocr", acc.adminKey, {
      base64: fixture("english.png").toString("base64"),
      model: "openai/gpt-4.1-mini",
      options: { include_layout: true },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error).toMatchObject({ code: "invalid_request", param: "options.include_layout" });
    const balance = await call(ctx.stack.edge, "GET", "/v1/account/balance", acc.adminKey);
    expect(balance.body.balance_cents).toBe(100);
  });

  it("refuses an unknown value with a 400 naming the field", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const r = await call(ctx.stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64: "aGk=", model: "local/tesseract", options: { include_layout: "everything" } });
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body.error)).toContain("include_layout");
  });
});

describe("local/auto", () => {
  it("is listed in /v1/models as a local model with a per-page price", async () => {
    const r = await call(ctx.stack.edge, "GET", "/v1/models/local%2Fauto");
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ id: "local/auto" });
  });

  it("reads a table printed in a grid of dotted rules, billed per page like any local model", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const r = await call(ctx.stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64: fixture("ruled.png").toString("base64"), model: "local/auto", options: { extract_tables: true } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.model).toBe("local/auto");
    expect(cer(r.body.result.text, text("ruled.txt")), r.body.result.text).toBeLessThan(0.02);
    expect(r.body.result.tables[0].rows).toContainEqual(["Stapler", "5", "7.20", "36.00"]);
    expect(r.body.usage).toMatchObject({ pages_processed: 1, total_cost_cents: 1 });
  });
});
