/**
 * Layout, tables and local/auto through the public API: POST /v1/ocr on the
 * edge → gRPC → the extraction service → real tesseract; an upstream model
 * is the fake OpenRouter (a test double). Real Postgres for billing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, createTestAccount, startStack, type TestStack } from "./harness.ts";
import { startFakeUpstream, type FakeUpstream } from "./fake-upstream.ts";
import { cer } from "./cer.ts";
import { ocrFixture as fixture, ocrTruth as text } from "./support.ts";

let upstream: FakeUpstream;
let stack: TestStack;

beforeAll(async () => {
  upstream = await startFakeUpstream();
  stack = await startStack({ upstream });
});
afterAll(async () => {
  await stack?.close();
  await upstream?.close();
});

describe("options.include_layout on POST /v1/ocr", () => {
  it("adds each page's layout (blocks in reading order with their types and boxes) and the tables as cells", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const r = await call(stack.edge, "POST", "/v1/ocr", acc.adminKey, {
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
    expect(cer(r.body.result.text, text("columns.txt")), r.body.result.text).toBeLessThan(0.02);
  });

  it('"words" adds every word with its box and confidence; without the option the page has no layout', async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const base64 = fixture("english.png").toString("base64");
    const withWords = await call(stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64, model: "local/tesseract", options: { include_layout: "words" } });
    expect(withWords.status, JSON.stringify(withWords.body)).toBe(200);
    const words = withWords.body.result.pages[0].layout.blocks.flatMap((b: { words: unknown[] }) => b.words);
    expect(words.length).toBeGreaterThan(50);
    expect(words[0]).toEqual({ text: "Quarterly", bbox: expect.any(Array), confidence: expect.any(Number) });
    const plain = await call(stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64, model: "local/tesseract" });
    expect(plain.body.result.pages[0].layout).toBeUndefined();
  });

  it("is a 400 naming the option for an upstream model, before anything is charged", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const r = await call(stack.edge, "POST", "/v1/ocr", acc.adminKey, {
      base64: fixture("english.png").toString("base64"),
      model: "openai/gpt-4.1-mini",
      options: { include_layout: true },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error).toMatchObject({ code: "invalid_request", param: "options.include_layout" });
    const balance = await call(stack.edge, "GET", "/v1/account/balance", acc.adminKey);
    expect(balance.body.balance_cents).toBe(100);
  });

  it("refuses an unknown value with a 400 naming the field", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const r = await call(stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64: "aGk=", model: "local/tesseract", options: { include_layout: "everything" } });
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body.error)).toContain("include_layout");
  });
});

describe("local/auto", () => {
  it("is listed in /v1/models as a local model with a per-page price", async () => {
    const r = await call(stack.edge, "GET", "/v1/models/local%2Fauto");
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ id: "local/auto" });
  });

  it("reads a table printed in a grid of dotted rules, billed per page like any local model", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const r = await call(stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64: fixture("ruled.png").toString("base64"), model: "local/auto", options: { extract_tables: true } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.model).toBe("local/auto");
    expect(cer(r.body.result.text, text("ruled.txt")), r.body.result.text).toBeLessThan(0.02);
    expect(r.body.result.tables[0].rows).toContainEqual(["Stapler", "5", "7.20", "36.00"]);
    expect(r.body.usage).toMatchObject({ pages_processed: 1, total_cost_cents: 1 });
  });
});
