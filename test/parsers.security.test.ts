/**
 * No secret where a parser runs (issue 25, docs/sandbox-parsers.md "Parsers outside
 * the sandbox"): while real /v1/ocr requests run through the edge and the
 * extraction service of this process, the real pdfinfo, pdftoppm and
 * tesseract children (and LibreOffice under the development-only
 * `unsandboxed` backend) are found in /proc and their environments read.
 * None may hold this process's secrets: the run's real DATABASE_URL and
 * REDIS_URL, and canary values put into variables named like secrets.
 */
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decoderPid } from "../internal/platform/decoder/index.ts";
import { watchChildren, type SeenChild } from "./children.ts";
import { call, createTestAccount, stackForTests } from "./harness.ts";
import { ocrFixture } from "./support.ts";
import { bwrapInstalled } from "./support.ts";

const canary = `folio-canary-${randomBytes(8).toString("hex")}`;
/** Secret-looking variables given a canary value for this file's requests (restored after). */
const CANARIES: Record<string, string> = {
  FOLIO_TEST_SECRET_CANARY: canary,
  FOLIO_UPSTREAM_API_KEY: `sk-${canary}`,
  FOLIO_WEBHOOK_SECRET_KEY: `whk-${canary}`,
  AWS_SECRET_ACCESS_KEY: `aws-${canary}`,
};
/**
 * What a parser may be given: internal/platform/childenv's allow-list; the
 * sandbox converter's fixed environment (with its stdbuf preload for
 * pdftoppm: LD_PRELOAD of libstdbuf, _STDBUF_O); PWD, which bwrap sets.
 */
const ALLOWED = /^(PATH|HOME|TMPDIR|TZ|LANG|LANGUAGE|LC_[A-Z_]+|FONTCONFIG_FILE|FONTCONFIG_PATH|TESSDATA_PREFIX|OMP_THREAD_LIMIT|SAL_USE_VCLPLUGIN|MALLOC_[A-Z_]+_|LD_PRELOAD|_STDBUF_O|PWD)$/;

const saved: Record<string, string | undefined> = {};
beforeAll(() => {
  // Children inherit the environment at spawn: this is the one variable set a test must change (and puts back).
  for (const [name, value] of Object.entries(CANARIES)) {
    saved[name] = process.env[name];
    process.env[name] = value;
  }
});
afterAll(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

/** The secret values no child may see: the canaries and the run's real service URLs (with whatever credentials they hold). */
function secrets(): string[] {
  return [canary, process.env.DATABASE_URL, process.env.REDIS_URL].filter((v): v is string => Boolean(v));
}

/** Fails naming the child and the variable when a child's environment holds a secret value or a variable outside the allow-list. */
function expectNoSecrets(children: SeenChild[]): void {
  for (const child of children) {
    const what = `${child.exe} (pid ${child.pid}) started with:\n${child.environ.join("\n")}`;
    for (const secret of secrets()) {
      const holding = child.environ.filter((entry) => entry.includes(secret)).map((entry) => entry.slice(0, entry.indexOf("=")));
      expect(holding, `secrets in ${what}`).toEqual([]);
    }
    const names = child.environ.map((entry) => entry.slice(0, entry.indexOf("=")));
    expect(names.filter((name) => !ALLOWED.test(name)), `variables outside the allow-list in ${what}`).toEqual([]);
  }
}

/**
 * The image decoder's child (internal/platform/decoder), as a SeenChild: the
 * node process running its program, under the jail's setsid, bwrap and
 * prlimit when jailed. It lives as long as this process, so it is read
 * after the requests rather than watched for.
 */
function decoderChild(): SeenChild {
  const root = decoderPid();
  expect(root, "an image decoder child runs after an image request").toBeDefined();
  const ppid = (pid: string) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    } catch {
      return -1;
    }
  };
  const all = readdirSync("/proc").filter((n) => /^\d+$/.test(n));
  const family = new Set([root!]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const pid of all) if (!family.has(Number(pid)) && family.has(ppid(pid))) grew = family.add(Number(pid)) !== undefined;
  }
  const node = [...family].find((pid) => readlinkSync(`/proc/${pid}/exe`) === readlinkSync("/proc/self/exe"));
  expect(node, `a node process under the decoder's ${root}`).toBeDefined();
  return {
    pid: node!,
    exe: readlinkSync(`/proc/${node}/exe`),
    environ: readFileSync(`/proc/${node}/environ`, "utf8").split("\0").filter(Boolean),
    netns: readlinkSync(`/proc/${node}/ns/net`),
  };
}

const programs = (children: SeenChild[]) => [...new Set(children.map((c) => c.exe.slice(c.exe.lastIndexOf("/") + 1)))].sort();

describe("the parsers of client bytes start without this process's secrets", () => {
  const ctx = stackForTests();

  it("pdfinfo, pdftoppm and tesseract of real PDF and image requests carry no secret", async () => {
    expect(process.env.DATABASE_URL, "the run's DATABASE_URL is in this process's environment, as in production").toBeTruthy();
    const acc = await createTestAccount();
    const watch = await watchChildren(["pdfinfo", "pdftoppm", "tesseract", "folio-tesseract"]);
    let seen: SeenChild[];
    try {
      // pdfinfo lives a few milliseconds (the watcher saw each of its runs in trials; two documents for margin).
      for (let i = 0; i < 2; i++) {
        const r = await call(ctx.stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64: ocrFixture("multipage.pdf").toString("base64"), model: "local/tesseract" });
        expect(r.status, JSON.stringify(r.body)).toBe(200);
      }
      const png = await call(ctx.stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64: ocrFixture("english.png").toString("base64"), mime_type: "image/png", model: "local/tesseract" });
      expect(png.status, JSON.stringify(png.body)).toBe(200);
    } finally {
      seen = await watch.stop();
    }
    // Tesseract reads in its resident program (`make deps` builds it: docs/adr/0009-resident-tesseract.md).
    expect(programs(seen), "the children seen").toEqual(["folio-tesseract", "pdfinfo", "pdftoppm"]);
    expectNoSecrets(seen);
    // The engine's own settings do reach it.
    const tesseract = seen.find((c) => c.exe.endsWith("/folio-tesseract"))!;
    expect(tesseract.environ).toContain("OMP_THREAD_LIMIT=1");
    expect(tesseract.environ.some((e) => e.startsWith("PATH="))).toBe(true);
    // The PNG was decoded (the straightening check) by the image decoder's child, which carries no secret either.
    expectNoSecrets([decoderChild()]);
  }, 120_000);
});

describe("LibreOffice of the development-only unsandboxed backend", () => {
  const ctx = stackForTests({ conversion: { FOLIO_SANDBOX: "unsandboxed" } });

  it("carries no secret while it converts a real request's document", async () => {
    const acc = await createTestAccount();
    const docx = readFileSync(new URL("./fixtures/convert/one-page.docx", import.meta.url));
    const watch = await watchChildren(["soffice.bin", "pdftoppm", "pdfinfo"]);
    let seen: SeenChild[];
    try {
      const r = await call(ctx.stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64: docx.toString("base64"), model: "local/tesseract" });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    } finally {
      seen = await watch.stop();
    }
    expect(programs(seen), "the children seen").toContain("soffice.bin");
    expectNoSecrets(seen);
  }, 120_000);
});


describe.skipIf(!bwrapInstalled)("with FOLIO_PARSER_JAIL=bwrap", () => {
  const ctx = stackForTests({ edgeEnv: { FOLIO_PARSER_JAIL: "bwrap" } });

  it("pdfinfo, pdftoppm and tesseract of a real request run without the network and without secrets, and the answer is the same", async () => {
    const acc = await createTestAccount();
    const watch = await watchChildren(["pdfinfo", "pdftoppm", "tesseract", "folio-tesseract"]);
    let seen: SeenChild[];
    let r!: Awaited<ReturnType<typeof call>>;
    try {
      // Two documents, as above: pdfinfo lives a few milliseconds and one run can slip between two looks.
      for (let i = 0; i < 2; i++) {
        r = await call(ctx.stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64: ocrFixture("multipage.pdf").toString("base64"), model: "local/tesseract" });
      }
    } finally {
      seen = await watch.stop();
    }
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.result.pages).toHaveLength(3);
    // Read in the jail as outside it (the unjailed reading is the first describe's).
    expect(r.body.result.pages[0].text).toMatch(/\w{3,}/);
    // In one process the jail is the process's (the edge's setting; `folio extraction` takes its own, services.ts).
    expect(programs(seen), "the children seen").toEqual(["folio-tesseract", "pdfinfo", "pdftoppm"]);
    expectNoSecrets(seen);
    const own = readlinkSync("/proc/self/ns/net");
    for (const c of seen) expect(c.netns, `${c.exe} (pid ${c.pid}) shares this process's network`).not.toBe(own);
  }, 120_000);

  it("an image is decoded by the decoder's child in the jail: no network, no secret", async () => {
    const acc = await createTestAccount();
    const r = await call(ctx.stack.edge, "POST", "/v1/ocr", acc.adminKey, { base64: ocrFixture("english.png").toString("base64"), mime_type: "image/png", model: "local/tesseract" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.result.pages[0].text).toMatch(/\w{3,}/);
    const decoder = decoderChild();
    expectNoSecrets([decoder]);
    expect(decoder.netns, `the decoder (pid ${decoder.pid}) shares this process's network`).not.toBe(readlinkSync("/proc/self/ns/net"));
  }, 120_000);
});
