/**
 * The host reading a sandbox's output folder: what the sandbox planted in
 * place of a result or a page (a symbolic link to a host file, a FIFO, a
 * folder), a file over its bound and a file that changes while read are
 * refused, with messages that name no host path; real files read whole.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { FolioError } from "../platform/errors/index.ts";
import { MAX_RESULT_BYTES, SandboxFileRefused, readOutput, readPages, readResult, readSandboxFile } from "./jobdir.ts";

const work = mkdtempSync(join(tmpdir(), "folio-jobdir-test-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A host file the sandbox must never get the host to read. */
const secret = join(work, "secret.txt");
writeFileSync(secret, '{"ok":true,"pageCount":1,"secret":"host"}');

let jobDir: string;
let n = 0;
beforeEach(() => {
  jobDir = join(work, `job-${++n}`);
  mkdirSync(join(jobDir, "output"), { recursive: true });
});
const out = (name: string) => join(jobDir, "output", name);

async function refusal(p: Promise<unknown>): Promise<FolioError> {
  const err = await p.then(
    (v) => v,
    (e: unknown) => e,
  );
  expect(err, `expected a refusal, got ${JSON.stringify(err)}`).toBeInstanceOf(FolioError);
  const e = err as FolioError;
  expect(e.code, e.message).toBe("conversion_failed");
  expect(e.message, "no host path in the message").not.toContain(work);
  return e;
}

describe("readResult", () => {
  it("reads the result the program wrote", async () => {
    writeFileSync(out("result.json"), '{"ok":true,"pageCount":2}');
    expect(await readResult(jobDir)).toEqual({ ok: true, pageCount: 2 });
  });

  it("is undefined when there is none", async () => {
    expect(await readResult(jobDir)).toBeUndefined();
  });

  it("refuses a symbolic link planted instead of result.json, and never reads its target", async () => {
    symlinkSync(secret, out("result.json"));
    const e = await refusal(readResult(jobDir));
    expect(e).toBeInstanceOf(SandboxFileRefused);
    expect((e as SandboxFileRefused).reason).toBe("not_regular");
    expect(e.message).toMatch(/result\.json is not a regular file/);
  });

  it("refuses a FIFO instead of result.json without waiting for a writer", async () => {
    execFileSync("mkfifo", [out("result.json")]);
    const started = Date.now();
    const e = await refusal(readResult(jobDir));
    expect((e as SandboxFileRefused).reason).toBe("not_regular");
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("refuses a result.json over its bound", async () => {
    writeFileSync(out("result.json"), `{"ok":false,"pageCount":0,"pad":"${"x".repeat(MAX_RESULT_BYTES)}"}`);
    expect(((await refusal(readResult(jobDir))) as SandboxFileRefused).reason).toBe("too_large");
  });
});

describe("readSandboxFile", () => {
  it("refuses a file larger than the bound without reading it: a 64 GiB sparse file is refused at once", async () => {
    const huge = out("page-1.png");
    writeFileSync(huge, "");
    truncateSync(huge, 64 * 1024 ** 3);
    const started = Date.now();
    const e = await refusal(readSandboxFile(huge, 1024 * 1024, "page 1"));
    expect((e as SandboxFileRefused).reason).toBe("too_large");
    expect(Date.now() - started, "nothing of it was read").toBeLessThan(1000);
  });

  it("reads no more than the size it checked: a file with more bytes than its size says (as one growing while read) is refused", async () => {
    // /proc files say size 0 and have content: the growth case, without a race.
    const e = await refusal(readSandboxFile("/proc/self/status", 1024 * 1024, "page 1"));
    expect((e as SandboxFileRefused).reason).toBe("changed");
  });

  it("refuses a folder", async () => {
    mkdirSync(out("page-1.png"));
    expect(((await refusal(readSandboxFile(out("page-1.png"), 100, "page 1"))) as SandboxFileRefused).reason).toBe("not_regular");
  });
});

describe("readPages", () => {
  it("reads every page whole", async () => {
    writeFileSync(out("page-1.png"), Buffer.alloc(300, 1));
    writeFileSync(out("page-2.png"), Buffer.alloc(200, 2));
    const pages = await readPages(jobDir, 2, 500);
    expect(pages.map((p) => p.length)).toEqual([300, 200]);
    expect(pages[1]![0]).toBe(2);
  });

  it("refuses a symbolic link planted as a page", async () => {
    writeFileSync(out("page-1.png"), Buffer.alloc(10));
    symlinkSync(secret, out("page-2.png"));
    const e = await refusal(readPages(jobDir, 2));
    expect(e.message).toMatch(/page 2 is not a regular file/);
  });

  it("refuses pages over the bound in total, the last one unread", async () => {
    writeFileSync(out("page-1.png"), Buffer.alloc(300));
    writeFileSync(out("page-2.png"), Buffer.alloc(201));
    const e = await refusal(readPages(jobDir, 2, 500));
    expect(e.message).toMatch(/exceed 500 bytes/);
  });

  it("names a missing page", async () => {
    writeFileSync(out("page-1.png"), Buffer.alloc(10));
    expect((await refusal(readPages(jobDir, 2))).message).toMatch(/page 2 is missing/);
  });
});

describe("readOutput with output pdf", () => {
  const PDF = Buffer.from("%PDF-1.7\n% a stand-in body\n%%EOF\n");
  const asked = { output: "pdf" as const, maxPages: 10 };
  const result = { ok: true, pageCount: 0, documentPageCount: 7, pdf: true };

  it("reads the PDF and its page count", async () => {
    writeFileSync(out("document.pdf"), PDF);
    const r = await readOutput(jobDir, result, asked);
    expect(r).toMatchObject({ pages: [], pageCount: 0, documentPageCount: 7 });
    expect(r.pdf?.equals(PDF)).toBe(true);
  });

  it("refuses a symbolic link planted as the PDF, a file that is no PDF, one over the bound, and a missing one", async () => {
    symlinkSync(secret, out("document.pdf"));
    await refusal(readOutput(jobDir, result, asked));
    rmSync(out("document.pdf"));
    writeFileSync(out("document.pdf"), "not a pdf");
    expect((await refusal(readOutput(jobDir, result, asked))).message).toMatch(/does not start like a PDF/);
    writeFileSync(out("document.pdf"), PDF);
    expect((await refusal(readOutput(jobDir, result, asked, PDF.length - 1))).message).toMatch(/larger than/);
    rmSync(out("document.pdf"));
    expect((await refusal(readOutput(jobDir, result, asked))).message).toMatch(/wrote none/);
  });

  it("refuses a result that does not answer what was asked: a page count over the limit, pages for a PDF, a PDF for pages", async () => {
    writeFileSync(out("document.pdf"), PDF);
    await refusal(readOutput(jobDir, { ...result, documentPageCount: 11 }, asked));
    await refusal(readOutput(jobDir, { ...result, pageCount: 2 }, asked));
    await refusal(readOutput(jobDir, { ok: true, pageCount: 1 }, asked));
    writeFileSync(out("page-1.png"), Buffer.alloc(10));
    expect((await refusal(readOutput(jobDir, { ...result, pageCount: 1 }, { maxPages: 10 }))).message).toMatch(/PDF where pages were asked/);
  });
});
