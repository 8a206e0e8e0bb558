/**
 * `folio ocr` and `folio convert` as child processes against a running stack
 * (edge + extraction with real tesseract + runsc conversion, real Postgres
 * and Redis): what lands on stdout, stderr and disk, the exit status, and
 * that the key is never printed.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestAccount, startStack, testDb, type TestStack } from "./harness.ts";
import { cer } from "./cer.ts";
import { freePort } from "./support.ts";
import { pngInfo } from "../internal/sandbox/testdocs.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const fixture = (path: string) => join(ROOT, "test", "fixtures", path);
const MAIN = join(ROOT, "cmd", "folio", "main.ts");
/** The real entry point once it wires the client commands in; until then the same commands on a bare program. */
const ENTRY = readFileSync(MAIN, "utf8").includes("registerClientCommands") ? MAIN : join(ROOT, "test", "cli-client-main.ts");

let stack: TestStack;
let scratch: string;

beforeAll(async () => {
  stack = await startStack({ conversion: { FOLIO_SANDBOX: "runsc" } });
  scratch = mkdtempSync(join(tmpdir(), "folio-cli-client-"));
});
afterAll(async () => {
  await stack?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `folio <args>` with FOLIO_BASE_URL pointing at the stack and the given key (none when null). */
function folio(args: string[], key: string | null, env: Record<string, string> = {}): Promise<Ran> {
  const base: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("FOLIO_")) base[k] = v;
  const child = spawn(process.execPath, ["--import", "tsx", ENTRY, ...args], {
    cwd: ROOT,
    env: { ...base, FOLIO_BASE_URL: stack.edge.url, ...(key ? { FOLIO_API_KEY: key } : {}), ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}

const show = (r: Ran) => `exit ${r.code}\n--- stdout\n${r.stdout.slice(0, 1500)}\n--- stderr\n${r.stderr.slice(0, 1500)}`;
const noKey = (r: Ran, key: string) => expect(r.stdout.includes(key) || r.stderr.includes(key), `the key was printed:\n${show(r)}`).toBe(false);

/** Each case starts one or two processes (tsx compiles on start): generous under a loaded parallel run. */
const SLOW = { timeout: 120_000 };

describe("folio ocr", SLOW, () => {
  it(`prints a PNG's text on stdout and the cost on stderr (entry: ${ENTRY.replace(ROOT, "")})`, async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const r = await folio(["ocr", fixture("ocr/english.png"), "--model", "local/tesseract"], acc.adminKey);
    expect(r.code, show(r)).toBe(0);
    expect(cer(r.stdout, readFileSync(fixture("ocr/english.txt"), "utf8")), show(r)).toBeLessThan(0.05);
    expect(r.stderr, show(r)).toMatch(/^cost: \$0\.01 · 1 page · local\/tesseract · \d+\.\d s · req_\w+$/m);
    expect(r.stderr).not.toMatch(/extracting/);
    noKey(r, acc.adminKey);
    const { db } = await testDb();
    const rows = await db.selectFrom("usage_logs").select(["endpoint", "status"]).where("account_id", "=", acc.accountId).execute();
    expect(rows).toEqual([{ endpoint: "/v1/playground/process", status: "success" }]);
  });

  it("converts a DOCX, shows progress with a bar over its pages, saves the page images with --out, and itemises the cost", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const out = join(scratch, "docx-pages");
    const r = await folio(["ocr", fixture("convert/two-pages.docx"), "--model", "local/tesseract", "--out", out, "--progress"], acc.adminKey);
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout.toLowerCase(), show(r)).toMatch(/quick brown fox/);
    expect(r.stderr, show(r)).toMatch(/converting DOCX to page images/);
    expect(r.stderr).toMatch(/extracting \|.*\| 2\/2 pages/);
    expect(r.stderr).toMatch(/wrote 2 page images to /);
    expect(r.stderr).toMatch(/^cost: \$0\.02 \(model \$0\.01 \+ conversion \$0\.01\) · 2 pages · local\/tesseract/m);
    expect(readdirSync(out).sort()).toEqual(["page-001.png", "page-002.png"]);
    for (const f of readdirSync(out)) expect(pngInfo(readFileSync(join(out, f))).width).toBe(1654);
  });

  it("--format json prints the whole result without image data; --api-key works as well as the variable", async () => {
    const acc = await createTestAccount({ creditsCents: 100 });
    const r = await folio(["ocr", fixture("ocr/english.png"), "--strategy", "cost", "--format", "json", "--api-key", acc.adminKey], null);
    expect(r.code, show(r)).toBe(0);
    const body = JSON.parse(r.stdout) as { object: string; strategy: string; result: { pages: { image: unknown }[] }; cost: { formatted: string } };
    expect(body).toMatchObject({ object: "playground.result", strategy: "cost", cost: { formatted: "$0.01" } });
    expect(body.result.pages[0]!.image).toBeNull();
    expect(r.stdout).not.toContain("data:image");
    noKey(r, acc.adminKey);
  });

  it("fails with plain words, the code and exit 1: no credit (402), an unsupported file (400), a refused URL (400)", async () => {
    const poor = await createTestAccount({ creditsCents: 0 });
    const p = await folio(["ocr", fixture("ocr/english.png"), "--model", "local/tesseract"], poor.adminKey);
    expect(p.code, show(p)).toBe(1);
    expect(p.stdout).toBe("");
    expect(p.stderr, show(p)).toMatch(/^folio: not enough credit \(this needs \$0\.01 available\); add credits with `folio admin credits add`: .*\[insufficient_credits, HTTP 402\]$/m);
    noKey(p, poor.adminKey);

    const acc = await createTestAccount({ creditsCents: 5 });
    const bad = join(scratch, "data.bin");
    await import("node:fs/promises").then((fs) => fs.writeFile(bad, Buffer.concat([Buffer.from("504b0304140000000800", "hex"), Buffer.alloc(300, 7)])));
    const u = await folio(["ocr", bad], acc.adminKey);
    expect(u.code, show(u)).toBe(1);
    expect(u.stderr, show(u)).toMatch(/^folio: .*\[unsupported_format, HTTP 400\]$/m);

    const url = await folio(["ocr", "http://127.0.0.1:9/secret.png"], acc.adminKey);
    expect(url.code, show(url)).toBe(1);
    expect(url.stderr, show(url)).toMatch(/\[invalid_request, HTTP 400\]/);
  });

  it("says when the rate limit is reached and how long to wait (429)", async () => {
    const acc = await createTestAccount({ creditsCents: 100, requestsPerMinute: 1 });
    const first = await folio(["ocr", fixture("ocr/english.png"), "--model", "local/tesseract"], acc.adminKey);
    expect(first.code, show(first)).toBe(0);
    const second = await folio(["ocr", fixture("ocr/english.png"), "--model", "local/tesseract"], acc.adminKey);
    expect(second.code, show(second)).toBe(1);
    expect(second.stderr, show(second)).toMatch(/^folio: rate limit reached; try again in \d+ seconds: .*\[rate_limit_exceeded, HTTP 429\]$/m);
  });

  it("explains a missing key, a missing file and an unreachable server without calling anything", async () => {
    const none = await folio(["ocr", fixture("ocr/english.png")], null);
    expect(none.code, show(none)).toBe(1);
    expect(none.stderr).toMatch(/^folio: no API key: set FOLIO_API_KEY \(or pass --api-key\)$/m);
    const missing = await folio(["ocr", join(scratch, "nope.png")], "folio_sk_not_a_real_key");
    expect(missing.code, show(missing)).toBe(1);
    expect(missing.stderr).toMatch(/^folio: no such file: .*nope\.png$/m);
    const closed = await freePort();
    const down = await folio(["ocr", fixture("ocr/english.png")], "folio_sk_not_a_real_key", { FOLIO_BASE_URL: `http://127.0.0.1:${closed}` });
    expect(down.code, show(down)).toBe(1);
    expect(down.stderr).toMatch(new RegExp(`^folio: cannot reach Folio at http://127\\.0\\.0\\.1:${closed}: ECONNREFUSED`, "m"));
    expect(down.stderr).not.toContain("folio_sk_not_a_real_key");
  });
});

describe("folio convert", SLOW, () => {
  it("writes a DOCX's pages as 200-DPI PNGs into --out, lists them on stdout, the cost on stderr", async () => {
    const acc = await createTestAccount({ creditsCents: 10 });
    const out = join(scratch, "converted");
    const r = await folio(["convert", fixture("convert/two-pages.docx"), "--out", out], acc.adminKey);
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout.trim().split("\n")).toEqual([join(out, "page-001.png"), join(out, "page-002.png")]);
    for (const f of ["page-001.png", "page-002.png"]) {
      const info = pngInfo(readFileSync(join(out, f)));
      expect({ w: info.width, h: info.height }).toEqual({ w: 1654, h: 2339 });
    }
    expect(r.stderr, show(r)).toMatch(/^cost: \$0\.01 · 2 pages · \d+\.\d s compute · req_\w+$/m);
    noKey(r, acc.adminKey);
  });

  it("--pages converts only those pages, saved under their page numbers; ocr --pages reads only them", SLOW, async () => {
    const acc = await createTestAccount({ creditsCents: 10 });
    const out = join(scratch, "converted-page-2");
    const r = await folio(["convert", fixture("convert/two-pages.docx"), "--out", out, "--pages", "2"], acc.adminKey);
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout.trim().split("\n")).toEqual([join(out, "page-002.png")]);
    expect(r.stderr, show(r)).toMatch(/^cost: \$0\.01 · 1 page · /m);
    const read = await folio(["ocr", fixture("ocr/multipage.pdf"), "--model", "local/tesseract", "--pages", "3", "--format", "json"], acc.adminKey);
    expect(read.code, show(read)).toBe(0);
    expect((JSON.parse(read.stdout) as { result: { pages: { page_number: number }[] } }).result.pages.map((p) => p.page_number)).toEqual([3]);
    const wrong = await folio(["convert", fixture("convert/two-pages.docx"), "--out", out, "--pages", "3-1"], acc.adminKey);
    expect({ code: wrong.code, stderr: wrong.stderr }, show(wrong)).toMatchObject({ code: 1, stderr: expect.stringContaining('"3-1" runs backwards') });
  });

  it("refuses a file whose format its extension does not name, and needs --out", async () => {
    const acc = await createTestAccount({ creditsCents: 10 });
    const png = await folio(["convert", fixture("ocr/english.png"), "--out", join(scratch, "x")], acc.adminKey);
    expect(png.code, show(png)).toBe(1);
    expect(png.stderr).toMatch(/^folio: cannot tell the format of 'english\.png' from its extension: use one of \.docx, /m);
    expect(existsSync(join(scratch, "x"))).toBe(false);
    const noOut = await folio(["convert", fixture("convert/two-pages.docx")], acc.adminKey);
    expect(noOut.code, show(noOut)).toBe(1);
    expect(noOut.stderr).toMatch(/required option '--out <dir>'/);
  });
});
