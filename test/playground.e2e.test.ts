/**
 * The playground page end to end, in a real browser: Debian's chromium driven
 * by playwright-core against a `folio dev` child process (embedded Postgres,
 * in-process rate limits, real tesseract, runsc conversion) in a fresh data
 * folder. Screenshots of every result and error view go to
 * test-artifacts/playground/.
 *
 * The 402 needs an account with no credit. PGlite allows one process, so it
 * is made with `folio admin account create --credits-cents 0` on the same
 * data folder *before* `folio dev` starts: the real CLI, no back door.
 *
 * Long documents run as durable jobs. The real case needs a synchronous
 * limit small enough for the ten-page fixture and a worker of its own: an
 * edge started in this process with FOLIO_MAX_PAGES=4, the extraction
 * service (tesseract) and a jobs worker, on a Postgres database of this
 * file's own, so no other test file's worker takes its jobs. What a real
 * server does not do on cue (a stream that drops mid-job, a page that fails)
 * is stubbed in the browser against folio dev's page.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type BrowserContext, type Page, type Request } from "playwright-core";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminCreateAccount } from "../internal/cli/admin/index.ts";
import { createAccountWithCli, ROOT, startFolio, type FolioProcess } from "./folio-processes.ts";
import { jobsStack } from "./harness.ts";
import { freePort } from "./support.ts";

const ARTIFACTS = join(ROOT, "test-artifacts", "playground");
const CHROMIUM = process.env.FOLIO_TEST_CHROMIUM ?? "/usr/bin/chromium";
const fixture = (path: string) => join(ROOT, "test", "fixtures", path);

let dataDir: string;
let dev: FolioProcess | undefined;
let baseUrl: string;
let devKey: string;
let poorKey: string;
/** No credit and one request a minute: its second request is a real 429. */
let hurriedKey: string;
let browser: Browser;

/** The variables of the child processes (over a clean environment: no test Postgres/Redis, so folio dev's embedded defaults): this run's data folder. */
function childEnv(port: number): Record<string, string> {
  return {
    FOLIO_DATA_DIR: dataDir,
    FOLIO_HTTP_PORT: String(port),
    // Not read here; also keeps a second port out of the way.
    FOLIO_METRICS_ENABLED: "false",
  };
}

beforeAll(async () => {
  if (!existsSync(join(ROOT, "dist", "web", "playground", "index.html"))) {
    throw new Error("the playground page is not built: run `make web` (make test does it)");
  }
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (scripts/ensure-deps.sh test)`);
  mkdirSync(ARTIFACTS, { recursive: true });
  dataDir = mkdtempSync(join(tmpdir(), "folio-playground-e2e-"));
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  const env = childEnv(port);

  poorKey = createAccountWithCli(env, "poor@example.test", "--credits-cents", "0");
  hurriedKey = createAccountWithCli(env, "hurried@example.test", "--credits-cents", "0", "--requests-per-minute", "1");

  dev = await startFolio("dev", env, `${baseUrl}/healthz`);
  devKey = readFileSync(join(dataDir, "dev-admin-key"), "utf8").trim();
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await dev?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

interface Opened {
  context: BrowserContext;
  page: Page;
  /** Everything the page wrote to its console, and every status line the progress area showed. */
  console: string[];
  statuses(): Promise<string[]>;
}

/** The page at a given width (on folio dev, or the server at `origin`), with the progress area's texts recorded as they change. */
async function open(width: number, origin = baseUrl): Promise<Opened> {
  const context = await browser.newContext({ viewport: { width, height: 900 }, deviceScaleFactor: 1 });
  const page = await context.newPage();
  const console: string[] = [];
  page.on("console", (m) => console.push(m.text()));
  page.on("pageerror", (e) => console.push(`pageerror: ${e.message}`));
  // Browser-side code that names DOM globals is given as strings: this file is typechecked without the DOM library.
  await page.addInitScript(`
    window.__statuses = [];
    document.addEventListener("DOMContentLoaded", () => {
      const target = document.getElementById("progress-text");
      if (target) new MutationObserver(() => window.__statuses.push(target.textContent || "")).observe(target, { childList: true, characterData: true, subtree: true });
    });
  `);
  await page.goto(`${origin}/playground`);
  return { context, page, console, statuses: () => page.evaluate<string[]>("window.__statuses") };
}

/** Runs `test` on a fresh page of the playground `width` px wide; its browser context is closed afterwards. */
async function withPage(width: number, test: (o: Opened) => Promise<void>, origin = baseUrl): Promise<void> {
  const o = await open(width, origin);
  try {
    await test(o);
  } finally {
    await o.context.close();
  }
}

async function fillAndRun(o: Opened, key: string, file: string, model = "model:local/tesseract"): Promise<void> {
  const { page } = o;
  await page.getByLabel("Key", { exact: true }).fill(key);
  await page.getByLabel(/Choose a file/).setInputFiles(file);
  // The catalog loads without a key; wait for the local engine to be listed, then pick it.
  await page.locator(`#model option[value="${model}"]`).waitFor({ state: "attached", timeout: 15_000 });
  await page.getByLabel("Model or strategy").selectOption(model);
  await page.getByRole("button", { name: "Run" }).click();
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** How far the page is wider than the window (0 or less: no horizontal scrolling). */
const OVERFLOW = "document.documentElement.scrollWidth - window.innerWidth";

const text = async (page: Page, selector: string) => (await page.locator(selector).allInnerTexts()).join("\n");

/** Waits for `selector` (text or CSS) to be visible; when it is not, fails saying what the page showed instead. */
async function waitShown(o: Opened, locator: ReturnType<Page["locator"]>, timeout: number): Promise<void> {
  try {
    await locator.waitFor({ timeout });
  } catch (err) {
    const shown = { statuses: await o.statuses(), error: await text(o.page, "#error"), job: await text(o.page, "#job-info"), console: o.console };
    throw new Error(`${(err as Error).message.split("\n")[0]}; the page showed ${JSON.stringify(shown, null, 2)}`, { cause: err });
  }
}

// A browser, folio dev and real conversions: give each case room under a loaded parallel run.
describe("the playground page (/playground on folio dev)", { timeout: 180_000 }, () => {
  it("loads without a key, lists the catalog grouped by category with prices, and fits a 375 px screen", async () => {
    await withPage(375, async (o) => {
      const res = await o.context.request.get(`${baseUrl}/playground`);
      expect(res.status()).toBe(200);
      expect(res.headers()["content-security-policy"]).toContain("script-src 'self'");
      await o.page.locator('#model option[value="model:local/tesseract"]').waitFor({ state: "attached", timeout: 15_000 });
      const groups = await o.page.locator("#model optgroup").evaluateAll((groups) => groups.map((g) => (g as unknown as { label: string }).label));
      expect(groups).toEqual(["Strategies", "Local models"]);
      const option = await o.page.locator('#model option[value="model:local/tesseract"]').innerText();
      expect(option).toMatch(/\$1\.05 per 1,000 pages/);
      expect(await o.page.locator('#model option[value="strategy:balanced"]').innerText()).toMatch(/balanced \(default\) → local\//);
      const overflow = await o.page.evaluate<number>(OVERFLOW);
      expect(overflow, "horizontal overflow at 375 px").toBeLessThanOrEqual(0);
      // Every control has a label people and screen readers can find it by.
      for (const label of ["Key", "Model or strategy", "Extract tables", "Output format"]) await expect(o.page.getByLabel(label, { exact: true }).count()).resolves.toBe(1);
      await shot(o.page, "form-375px");
    });
  });

  it("reads an uploaded PNG: progress, the page image beside its text, confidence, cost and timings; focus moves to the result", async () => {
    await withPage(1280, async (o) => {
      await fillAndRun(o, devKey, fixture("ocr/english.png"));
      await o.page.getByRole("heading", { name: "Result" }).waitFor({ timeout: 60_000 });
      const pageText = await text(o.page, "#pages pre");
      expect(pageText, pageText).toMatch(/Quarterly Review/);
      expect(pageText).toMatch(/committee met on Tuesday/);
      const img = o.page.getByRole("img", { name: "Page 1 of 1, as the model read it" });
      expect(await img.evaluate((i) => (i as unknown as { naturalWidth: number }).naturalWidth)).toBeGreaterThan(100);
      const summary = await text(o.page, "#summary");
      expect(summary, summary).toMatch(/local\/tesseract/);
      expect(summary).toMatch(/\$0\.01 charged/);
      expect(summary).toMatch(/Confidence\s+\d+%/);
      expect(summary).toMatch(/extraction \d/);
      expect(await text(o.page, "#pages")).toMatch(/Confidence \d+%/);
      const statuses = await o.statuses();
      expect(statuses.join(" | ")).toMatch(/Uploading… \d+%/);
      expect(statuses.join(" | ")).toMatch(/Extract(ing|ed) .*of 1/);
      expect(await o.page.evaluate<string>("document.activeElement && document.activeElement.id")).toBe("result-heading");
      // The key stays in this tab's session storage only, and nothing was logged.
      expect(await o.page.evaluate<string[]>("Object.values(sessionStorage)")).toContain(devKey);
      expect(await o.page.evaluate<number>("localStorage.length")).toBe(0);
      expect(o.console.filter((l) => l.includes(devKey) || l.startsWith("pageerror"))).toEqual([]);
      await shot(o.page, "png-result");
    });
  });

  it("draws the layout over the page: blocks by type numbered in reading order, the table's cells, each word's confidence; a click shows a block's text or table; the boxes land on the page's words in a screenshot", async () => {
    await withPage(1280, async (o) => {
      const { page } = o;
      await page.getByLabel("Key", { exact: true }).fill(devKey);
      await page.getByLabel(/Choose a file/).setInputFiles(fixture("ocr/columns.png"));
      await page.locator('#model option[value="model:local/tesseract"]').waitFor({ state: "attached", timeout: 15_000 });
      await page.getByLabel("Model or strategy").selectOption("model:local/tesseract");
      await page.getByLabel("Output format").selectOption("json");
      await page.getByLabel("Extract tables", { exact: true }).check();
      expect(await page.getByLabel("Show the layout over each page").isChecked()).toBe(true);
      await page.getByRole("button", { name: "Run" }).click();
      await waitShown(o, page.getByRole("heading", { name: "Result" }), 90_000);
      const overlay = page.locator(".layout-overlay");
      await overlay.waitFor({ timeout: 10_000 });
      // Blocks numbered 1..n in reading order, typed; the table's cells and the words drawn too.
      const numbers = await page.locator(".layout-overlay .block-group").evaluateAll((gs) => gs.map((g) => Number((g as unknown as { dataset: { block: string } }).dataset.block)));
      expect(numbers.length).toBeGreaterThan(3);
      expect(numbers).toEqual(numbers.map((_, i) => i + 1));
      const kinds = await page.locator(".layout-overlay .block").evaluateAll((bs) => bs.map((b) => (b as unknown as { getAttribute(n: string): string }).getAttribute("class")));
      expect(kinds).toContain("block block-table");
      expect(kinds).toContain("block block-paragraph");
      expect(await page.locator(".layout-overlay .cell").count()).toBeGreaterThan(8);
      const words = page.locator(".layout-overlay .word");
      expect(await words.count()).toBeGreaterThan(50);
      expect(await words.first().locator("title").textContent()).toMatch(/: \d+% confident$/);
      expect(await text(page, ".layout-legend")).toMatch(/table/);
      // A click on the table's block shows its cells as a table; on a paragraph, its text.
      await page.locator(".layout-overlay .block-group:has(.block-table)").first().click({ force: true });
      await page.locator(".block-detail table").waitFor({ timeout: 5_000 });
      expect(await text(page, ".block-detail")).toMatch(/Desk lamp/);
      // The screenshot: inside the words' boxes the page is ink, as it is not around them.
      const canvas = page.locator(".page-canvas").first();
      const png = await canvas.screenshot();
      const { data, info } = await sharp(png).greyscale().raw().toBuffer({ resolveWithObject: true });
      const origin = await canvas.evaluate((c) => (c as unknown as { getBoundingClientRect(): { x: number; y: number } }).getBoundingClientRect());
      const boxes = await words.evaluateAll((ws) =>
        ws.map((w) => {
          const r = (w as unknown as { getBoundingClientRect(): { x: number; y: number; width: number; height: number } }).getBoundingClientRect();
          return { x: r.x, y: r.y, width: r.width, height: r.height };
        }),
      );
      const mean = (x0: number, y0: number, x1: number, y1: number) => {
        let sum = 0;
        let n = 0;
        for (let y = Math.max(0, Math.ceil(y0)); y < Math.min(info.height, Math.floor(y1)); y++) {
          for (let x = Math.max(0, Math.ceil(x0)); x < Math.min(info.width, Math.floor(x1)); x++) {
            sum += data[y * info.width + x]!;
            n++;
          }
        }
        return n ? sum / n : 255;
      };
      const inside = boxes.map((b) => mean(b.x - origin.x + 1, b.y - origin.y + 1, b.x - origin.x + b.width - 1, b.y - origin.y + b.height - 1));
      // The same boxes moved half a word's height up and a word's width left land on less ink (between lines, in the margins).
      const beside = boxes.map((b) => mean(b.x - origin.x - b.width, b.y - origin.y - b.height * 1.5, b.x - origin.x, b.y - origin.y - b.height * 0.5));
      const avg = (v: number[]) => v.reduce((a, b) => a + b, 0) / v.length;
      expect(avg(inside), `inside ${avg(inside)}, beside ${avg(beside)}`).toBeLessThan(avg(beside) - 25);
      await shot(page, "layout-overlay");
    });
  });

  it("converts an uploaded DOCX and shows both page images and their text, with the conversion in the cost; readable at 375 px", async () => {
    await withPage(375, async (o) => {
      await fillAndRun(o, devKey, fixture("convert/two-pages.docx"));
      await o.page.getByRole("heading", { name: "Result" }).waitFor({ timeout: 120_000 });
      const widths = await o.page.locator("#pages img").evaluateAll((imgs) => imgs.map((i) => (i as unknown as { naturalWidth: number }).naturalWidth));
      expect(widths).toEqual([1654, 1654]);
      expect(await o.page.getByRole("heading", { name: /Page \d of 2/ }).count()).toBe(2);
      expect((await text(o.page, "#pages pre")).toLowerCase()).toMatch(/quick brown fox/);
      const summary = await text(o.page, "#summary");
      expect(summary, summary).toMatch(/DOCX/);
      expect(summary).toMatch(/Conversion \(/);
      expect(summary).toMatch(/\$0\.02 charged/);
      expect((await o.statuses()).join(" | ")).toMatch(/Converting the DOCX document/);
      const overflow = await o.page.evaluate<number>(OVERFLOW);
      expect(overflow, "horizontal overflow at 375 px").toBeLessThanOrEqual(0);
      await shot(o.page, "docx-result-375px");
    });
  });

  it("reads only the pages asked for: page 2 of a two-page DOCX, shown under its own number", async () => {
    await withPage(1024, async (o) => {
      await o.page.getByLabel(/^Pages/).fill("2");
      await fillAndRun(o, devKey, fixture("convert/two-pages.docx"));
      await o.page.getByRole("heading", { name: "Result" }).waitFor({ timeout: 120_000 });
      expect(await o.page.locator("#pages img").count()).toBe(1);
      expect(await o.page.locator("#pages h3").allTextContents()).toEqual(["Page 2"]);
      const pageText = (await text(o.page, "#pages pre")).toLowerCase();
      expect(pageText, pageText).toMatch(/page two/);
      expect(pageText).not.toMatch(/quick brown fox/);
    });
  });

  it("shows a 402 in plain words, with its code", async () => {
    await withPage(1280, async (o) => {
      await fillAndRun(o, poorKey, fixture("ocr/english.png"));
      const alert = o.page.getByRole("alert");
      await alert.getByText("Not enough credit").waitFor({ timeout: 30_000 });
      const said = await alert.innerText();
      expect(said, said).toMatch(/needs \$0\.01 of available balance/);
      expect(said).toMatch(/insufficient_credits \(HTTP 402\)/);
      expect(await o.page.locator("#result").isHidden()).toBe(true);
      await shot(o.page, "error-402");
    });
  });

  it("shows a 400 for an unsupported file in plain words, with the formats that work; run from the keyboard", async () => {
    await withPage(1280, async (o) => {
      const { page } = o;
      await page.getByLabel("Key", { exact: true }).fill(devKey);
      await page.getByLabel(/Choose a file/).setInputFiles({ name: "data.zip", mimeType: "application/zip", buffer: Buffer.concat([Buffer.from("504b0304140000000800", "hex"), Buffer.alloc(300, 7)]) });
      await page.getByRole("button", { name: "Run" }).focus();
      await page.keyboard.press("Enter");
      const alert = page.getByRole("alert");
      await alert.getByText("This file type is not supported").waitFor({ timeout: 30_000 });
      const said = await alert.innerText();
      expect(said, said).toMatch(/Folio reads PNG, JPEG, .*DOCX/);
      expect(said).toMatch(/unsupported_format \(HTTP 400\)/);
      await shot(page, "error-400");
    });
  });

  it("shows a 429 in plain words with the wait the server gave", async () => {
    // The account's one request of this minute, spent outside the browser.
    const first = await fetch(`${baseUrl}/v1/account/balance`, { headers: { authorization: `Bearer ${hurriedKey}` } });
    expect(first.status).toBe(200);
    await withPage(1280, async (o) => {
      await fillAndRun(o, hurriedKey, fixture("ocr/english.png"));
      const alert = o.page.getByRole("alert");
      await alert.getByText("Too many requests").waitFor({ timeout: 30_000 });
      const said = await alert.innerText();
      expect(said, said).toMatch(/Wait \d+ seconds?, then run again/);
      expect(said).toMatch(/rate_limit_exceeded \(HTTP 429\)/);
      await shot(o.page, "error-429");
    });
  });

  it("shows a conversion timeout that arrives in the progress stream in plain words (the API's answer stubbed in the browser)", async () => {
    // A real timeout needs a conversion time limit that would break the DOCX test on this folio dev;
    // the stream below is what the edge sends then (internal/edge/routes/playground.process.test.ts).
    await withPage(1280, async (o) => {
      await o.page.route("**/v1/playground/process", (route) =>
        route.fulfill({
          status: 200,
          contentType: "application/x-ndjson",
          body: [
            { event: "started", id: "req_stub", model: "local/tesseract", document: { format: "DOCX", kind: "office", bytes: 5281 } },
            { event: "converting", format: "DOCX" },
            { event: "error", status: 500, error: { code: "timeout", message: "conversion timed out after 120 s" } },
          ]
            .map((e) => JSON.stringify(e))
            .join("\n"),
        }),
      );
      await fillAndRun(o, devKey, fixture("convert/two-pages.docx"));
      const alert = o.page.getByRole("alert");
      await alert.getByText("The conversion took too long").waitFor({ timeout: 30_000 });
      const said = await alert.innerText();
      expect(said, said).toMatch(/passed the time limit/);
      expect(said).toMatch(/timeout \(HTTP 500\)/);
      await shot(o.page, "error-timeout");
    });
  });

  it("follows a job across a dropped event stream (Last-Event-ID), reads its pages 200 at a time, shows a failed page; the same file again goes to a job at once (the job API stubbed in the browser)", async () => {
    // What a real server does not do on cue: the event stream ends after the second event, and page 3 fails.
    // The framing mixes CRLF and LF, a comment, and data split over two lines, as the event-stream format allows.
    const job = (over: Record<string, unknown>) => ({
      id: "job_stub", object: "ocr.job", status: "running", model: "local/tesseract", page_count: 3, pages_completed: 0, pages_failed: 0,
      usage: { pages_processed: 0, prompt_tokens: 0, completion_tokens: 0, tokens_used: 0, provider_cost_cents: 0, platform_fee_cents: 0, total_cost_cents: 0, processing_time_ms: 0 },
      metadata: {}, created_at: 1795000000, started_at: 1795000001, finished_at: null, ...over,
    });
    const event = (sequence: number, type: string, data: Record<string, unknown>) => ({ id: `evt_${sequence}`, type, sequence, created_at: 1795000000 + sequence, data });
    const done = job({
      status: "succeeded", pages_completed: 2, pages_failed: 1, finished_at: 1795000009,
      usage: { pages_processed: 2, prompt_tokens: 0, completion_tokens: 0, tokens_used: 0, provider_cost_cents: 0.2, platform_fee_cents: 0.01, total_cost_cents: 1, processing_time_ms: 8000 },
    });
    const page = (n: number, text: string) => ({ page_number: n, text, confidence: 0.9 });
    const seen = { process: 0, jobs: [] as Request[], events: [] as (string | undefined)[], pages: [] as string[] };
    await withPage(1280, async (o) => {
      await o.page.route("**/v1/playground/process", (route) => {
        seen.process += 1;
        return route.fulfill({
          status: 400,
          contentType: "application/json",
          body: JSON.stringify({ error: { code: "invalid_request", message: "the document has 300 pages; at most 100 are processed per request", param: "file", page_count: 300, max_pages: 100 } }),
        });
      });
      const at = (path: string) => (url: URL) => url.pathname === path;
      await o.page.route(at("/v1/ocr/jobs"), (route) => {
        seen.jobs.push(route.request());
        return route.fulfill({ status: 202, contentType: "application/json", body: JSON.stringify(job({ status: "queued", started_at: null })) });
      });
      await o.page.route(at("/v1/ocr/jobs/job_stub/events"), (route) => {
        const last = route.request().headers()["last-event-id"];
        seen.events.push(last);
        const first = event(1, "ocr.job.started", job({}));
        const body =
          last === undefined
            ? `: keep-alive\r\n\r\nid: 1\r\nevent: ocr.job.started\r\ndata: ${JSON.stringify(first)}\r\n\r\n` +
              `id: 2\nevent: ocr.job.progress\ndata: {"id":"evt_2","type":"ocr.job.progress",\ndata: "sequence":2,"created_at":1795000002,"data":${JSON.stringify(job({ pages_completed: 1 }))}}\n\n`
            : `id: 3\nevent: ocr.job.succeeded\ndata: ${JSON.stringify(event(3, "ocr.job.succeeded", done))}\n\n`;
        return route.fulfill({ status: 200, contentType: "text/event-stream", body });
      });
      await o.page.route(at("/v1/ocr/jobs/job_stub/pages"), (route) => {
        const url = new URL(route.request().url());
        seen.pages.push(url.search);
        const after = Number(url.searchParams.get("starting_after"));
        const body =
          after === 0
            ? { object: "list", data: [page(1, "First page text"), page(2, "Second page text")], has_more: true }
            : { object: "list", data: [{ page_number: 3, text: "", error: { code: "upstream_error", message: "the model failed on this page" } }], has_more: false };
        return route.fulfill({ status: 200, contentType: "application/json", body: JSON.stringify(body) });
      });

      await fillAndRun(o, devKey, fixture("ocr/ten-pages.pdf"));
      await waitShown(o, o.page.getByRole("heading", { name: "Result" }), 30_000);
      expect(seen.process).toBe(1);
      expect(seen.events, "Last-Event-ID of each connection").toEqual([undefined, "2"]);
      expect(seen.pages).toEqual(["?starting_after=0&limit=200", "?starting_after=2&limit=200"]);
      const form = seen.jobs[0]!.postDataBuffer()!.toString("latin1");
      expect(seen.jobs[0]!.headers()["content-type"]).toMatch(/^multipart\/form-data/);
      for (const field of ['name="file"; filename="ten-pages.pdf"', 'name="model"', "local/tesseract", 'name="output_format"', 'name="metadata"', '{"filename":"ten-pages.pdf"}']) expect(form).toContain(field);

      const statuses = (await o.statuses()).join(" | ");
      expect(statuses, statuses).toMatch(/The document has 300 pages, more than the 100 one request reads: running it as a job/);
      expect(statuses).toMatch(/Job running: read 1 of 3 pages/);
      expect(statuses).toMatch(/connection to the job's events was lost; trying again/);
      expect(await o.page.locator("#pages h3").allTextContents()).toEqual(["Page 1 of 3", "Page 2 of 3", "Page 3 of 3"]);
      expect(await text(o.page, "#pages pre")).toMatch(/First page text[\s\S]*Second page text/);
      expect(await text(o.page, "#pages")).toMatch(/This page could not be read \(not charged\): the model failed on this page \[upstream_error\]/);
      expect(await o.page.locator("#pages img").count()).toBe(0);
      expect(await o.page.locator("#pages-note").isVisible()).toBe(true);
      const summary = await text(o.page, "#summary");
      expect(summary, summary).toMatch(/\$0\.01 charged/);
      expect(summary).toMatch(/1 page could not be read and was not charged/);
      expect(summary).toMatch(/Job\s+job_stub/);
      expect(await text(o.page, "#job-info")).toMatch(/job_stub/);
      await shot(o.page, "job-stubbed");

      // Run again: the page knows this file is over the limit and starts a job without the synchronous call.
      await o.page.getByRole("button", { name: "Run" }).click();
      await o.page.locator("#run:enabled").waitFor({ timeout: 30_000 });
      expect(await text(o.page, "#progress-text")).toMatch(/Done: 3 pages, \$0\.01 \(job job_stub\)/);
      expect(seen.process).toBe(1);
      expect(seen.jobs).toHaveLength(2);
      expect(o.console.filter((l) => l.startsWith("pageerror"))).toEqual([]);
    });
  });

  it("never let a key reach folio dev's log", () => {
    for (const key of [devKey, poorKey, hurriedKey]) expect(dev!.output().includes(key), "a key in folio dev's output").toBe(false);
  });
});

describe("documents longer than one request reads, as durable jobs (an edge with FOLIO_MAX_PAGES=4 and a jobs worker)", { timeout: 180_000 }, () => {
  // A worker reads jobs only in the tests that start one.
  const stack = jobsStack("playground_e2e", { edgeEnv: { FOLIO_MAX_PAGES: "4" }, workerAtStart: false });
  let uniq = 0;

  async function account(): Promise<string> {
    const made = await adminCreateAccount({ db: stack.database.db }, { email: `playground-jobs-${process.pid}-${++uniq}@example.test`, name: "playground jobs", creditsCents: 1_000, requestsPerMinute: 10_000 });
    return made.api_key.key;
  }
  async function job(key: string, id: string): Promise<{ status: string; pages_completed: number; page_count: number }> {
    const res = await fetch(`${stack.edge.url}/v1/ocr/jobs/${id}`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(200);
    return (await res.json()) as { status: string; pages_completed: number; page_count: number };
  }
  /** The job id the page shows. */
  const shownJobId = async (page: Page) => /job_\w+/.exec(await text(page, "#job-info"))?.[0] ?? "";

  it("runs a ten-page PDF as a job when the synchronous call is refused for its pages: job id, progress, then the text of all ten pages and the cost", async () => {
    await stack.startWorker();
    const key = await account();
    await withPage(1280, async (o) => {
      await fillAndRun(o, key, fixture("ocr/ten-pages.pdf"));
      await waitShown(o, o.page.getByRole("heading", { name: "Result" }), 150_000);
      const statuses = (await o.statuses()).join(" | ");
      expect(statuses, statuses).toMatch(/The document has 10 pages, more than the 4 one request reads: running it as a job/);
      expect(statuses).toMatch(/Job (queued|running: read \d+ of 10 pages)/);
      expect(statuses).toMatch(/Done: 10 pages, \$0\.02 \(job job_\w+\)/);
      const id = await shownJobId(o.page);
      expect(id, await text(o.page, "#job-info")).toMatch(/^job_/);
      expect(await job(key, id)).toMatchObject({ status: "succeeded", page_count: 10, pages_completed: 10 });

      const headings = await o.page.locator("#pages h3").allTextContents();
      expect(headings).toEqual(Array.from({ length: 10 }, (_, i) => `Page ${i + 1} of 10`));
      const texts = await o.page.locator("#pages pre").allInnerTexts();
      expect(texts).toHaveLength(10);
      texts.forEach((t, i) => expect(t, `page ${i + 1}: ${t.slice(0, 200)}`).toMatch(new RegExp(`Chapter\\s*${i + 1}\\b`, "i")));
      expect(await o.page.locator("#pages img").count()).toBe(0);
      expect(await o.page.locator("#pages-note").innerText()).toMatch(/Jobs do not keep page images/);
      const summary = await text(o.page, "#summary");
      expect(summary, summary).toMatch(/\$0\.02 charged/);
      expect(summary).toMatch(/ten-pages\.pdf, 10 pages, read as a durable job/);
      expect(summary).toMatch(/provider 1¢ \+ fee 0\.05¢/);
      expect(summary).toContain(id);
      // The limit the server stated replaces the page's assumption.
      expect(await o.page.locator("#long-help").innerText()).toMatch(/more than 4 pages/);
      expect(o.console.filter((l) => l.includes(key) || l.startsWith("pageerror"))).toEqual([]);
      await shot(o.page, "job-result");
    }, stack.edge.url);
  });

  it("cancels a queued job with the Cancel button: the job ends cancelled, nothing was charged, and its id stays on the page", async () => {
    // No worker runs during this test: the job stays queued until it is cancelled.
    await stack.stopWorker();
    const key = await account();
    await withPage(1024, async (o) => {
      await fillAndRun(o, key, fixture("ocr/ten-pages.pdf"));
      await waitShown(o, o.page.getByText(/Job queued: waiting for a worker/), 30_000);
      const id = await shownJobId(o.page);
      expect(id).toMatch(/^job_/);
      await o.page.getByRole("button", { name: "Cancel" }).click();
      const alert = o.page.getByRole("alert");
      await alert.getByText("Job cancelled").waitFor({ timeout: 30_000 });
      const said = await alert.innerText();
      expect(said, said).toContain(id);
      expect(said).toMatch(/No page had been read: nothing was charged/);
      expect(await job(key, id)).toMatchObject({ status: "cancelled", pages_completed: 0 });
      expect(await o.page.locator("#job-info").isVisible()).toBe(true);
      expect(await o.page.getByRole("button", { name: "Cancel" }).isHidden()).toBe(true);
      await shot(o.page, "job-cancelled");
    }, stack.edge.url);
  });
});
