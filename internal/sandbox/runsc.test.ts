/**
 * The runsc backend against real gVisor sandboxes (needs root and the Debian
 * packages runsc, LibreOffice, poppler-utils and tesseract-ocr): conversions
 * of every format, failures, the time limit, what the sandbox can see, write
 * and reach, and that linked content in a document is never fetched.
 */
import { execFileSync, spawn } from "node:child_process";
import { readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { extname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeRtf } from "../../test/fixtures/convert/generate.ts";
import { PROJECT_ROOT } from "./assets.ts";
import type { ConversionFormat, SandboxResult } from "./interface.ts";
import { fileUrl, SOFFICE_BIN } from "./profile.ts";
import { RunscBackend } from "./runsc.ts";
import { backendForTests } from "./runsc.testkit.ts";
import { canarySvg, linkedImageDocx, linkedImageOdt, pagedDocx, pngInfo, startCanaryServer, type CanaryServer } from "./testdocs.ts";
import { folioFailure } from "../../test/support.ts";
import { sharingAssets } from "../../test/sandbox-assets.ts";

const FIXTURES = join(PROJECT_ROOT, "test", "fixtures", "convert");
const manifest = JSON.parse(readFileSync(join(FIXTURES, "manifest.json"), "utf8")) as { pdfPages: Record<string, number> };
/** 200 DPI in pixels per metre, as PNG's pHYs chunk states it. */
const PPM_200_DPI = 7874;
const A4_AT_200_DPI = { width: 1654, height: 2339 };

const { backend, work } = backendForTests("test");

function fixture(name: string): Buffer {
  return readFileSync(join(FIXTURES, name));
}

/** Live sandboxes in the backend's private runsc state. */
function containers(): string[] {
  return execFileSync("runsc", [`--root=${backend.stateDir}`, "list", "-quiet"], { encoding: "utf8" }).split("\n").filter(Boolean);
}


function expectPages(result: SandboxResult, pageCount: number, size?: { width: number; height: number }): void {
  expect(result.pageCount).toBe(pageCount);
  expect(result.pages).toHaveLength(pageCount);
  expect(result.computeMillis).toBeGreaterThan(0);
  for (const page of result.pages) {
    const info = pngInfo(page);
    expect(info.phys, "pHYs chunk").toEqual({ x: PPM_200_DPI, y: PPM_200_DPI, unit: 1 });
    if (size) expect({ width: info.width, height: info.height }).toEqual(size);
  }
}

describe("RunscBackend converts", () => {
  // Each fixture is of the format its extension names; slides are not A4.
  const cases = ["hello.txt", "one-page.docx", "two-pages.rtf", "two-pages.docx", "two-pages.odt", "two-pages.doc", "slides.pptx"].map(
    (name): [string, ConversionFormat, { width: number; height: number } | undefined] => {
      const format = extname(name).slice(1).toUpperCase() as ConversionFormat;
      return [name, format, format === "PPTX" ? undefined : A4_AT_200_DPI];
    },
  );
  it.each(cases)("%s (%s) into as many 200-DPI PNG pages as LibreOffice's own PDF has", async (name, format, size) => {
    const result = await backend.convert({ document: fixture(name), format, maxPages: 10, timeoutMs: 60_000 });
    expectPages(result, manifest.pdfPages[name] as number, size);
    if (format === "PPTX") {
      const info = pngInfo(result.pages[0] as Buffer);
      // 28 cm × 15.75 cm slides: landscape 16:9.
      expect(info.width / info.height).toBeCloseTo(16 / 9, 1);
    }
  }, 60_000);

  it("UTF-8 text and RTF written by the test itself", async () => {
    const text = await backend.convert({ document: Buffer.from("Grüße aus dem Test — ünïcödé ✓\n".repeat(3)), format: "TXT", maxPages: 5, timeoutMs: 60_000 });
    expectPages(text, 1, A4_AT_200_DPI);
    const rtf = await backend.convert({ document: Buffer.from(makeRtf(2), "latin1"), format: "RTF", maxPages: 5, timeoutMs: 60_000 });
    expectPages(rtf, 2, A4_AT_200_DPI);
  }, 90_000);
});

describe("RunscBackend refuses", () => {
  it("corrupt, truncated and password-protected documents with conversion_failed", async () => {
    const docx = fixture("two-pages.docx");
    const garbage = Buffer.from("PK\u0003\u0004 this is not really a zip archive at all".repeat(20));
    for (const [label, document, format] of [
      ["garbage", garbage, "DOCX"],
      ["truncated", docx.subarray(0, Math.floor(docx.length / 2)), "DOCX"],
      ["password-protected", fixture("password.odt"), "ODT"],
    ] as const) {
      const err = await folioFailure(backend.convert({ document, format, maxPages: 10, timeoutMs: 60_000 }));
      expect(err.code, `${label}: ${err.message}`).toBe("conversion_failed");
      expect(err.message).toMatch(/could not read the document/);
    }
    await backend.settled();
    expect(containers()).toEqual([]);
  }, 90_000);

  it("a document with more pages than maxPages, with invalid_request (over the limit, as a PDF)", async () => {
    const err = await folioFailure(backend.convert({ document: fixture("two-pages.docx"), format: "DOCX", maxPages: 1, timeoutMs: 60_000 }));
    expect(err.code).toBe("invalid_request");
    expect(err.message).toMatch(/2 pages; at most 1/);
  }, 60_000);
});

describe("RunscBackend resource limits", () => {
  it("kills a sandbox that goes over its memory limit: conversion_failed, nothing left behind", async () => {
    const small = new RunscBackend({ workDir: sharingAssets(join(work, "small")), limits: { memoryBytes: 48 * 1024 * 1024 } });
    const err = await folioFailure(small.convert({ document: fixture("one-page.docx"), format: "DOCX", maxPages: 10, timeoutMs: 60_000 }));
    expect(err.code, err.message).toBe("conversion_failed");
    expect(err.message).toMatch(/killed/);
    expect(execFileSync("runsc", [`--root=${small.stateDir}`, "list", "-quiet"], { encoding: "utf8" }).trim()).toBe("");
  }, 60_000);
});

describe("RunscBackend time limit", () => {
  it.each([1, 500])("kills the sandbox after %d ms: timeout, and nothing left behind", async (timeoutMs) => {
    const started = Date.now();
    // 30 pages take seconds to render: the limit falls inside the conversion, whatever the machine.
    const err = await folioFailure(backend.convert({ document: pagedDocx(30), format: "DOCX", maxPages: 40, timeoutMs }));
    expect(err.code, err.message).toBe("timeout");
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(containers()).toEqual([]);
    expect(readdirSync(join(backend.workDir, "jobs"))).toEqual([]);
  }, 30_000);
});

describe("inside a runsc sandbox", () => {
  let server: Server;
  let port = 0;
  let connections = 0;

  beforeAll(async () => {
    server = createServer((_req, res) => res.end("hello"));
    server.on("connection", () => connections++);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("runs as nobody, sees nothing of the host's /root, /home, project or secrets, writes only /tmp and the job folder, reaches no network", async () => {
    const hidden = ["/root", "/home", PROJECT_ROOT, work, "/etc/shadow", "/etc/ssh", "/var/run/secrets", "/run/secrets", "/usr/local/bin/docker"];
    const result = await backend.probe({
      read: [...hidden, "/", "/etc", "/usr/local", "/job", "/opt/folio"],
      write: ["/", "/etc", "/usr", "/usr/local", "/opt/folio", "/var/cache/fontconfig", "/job", "/tmp", "/job/output"],
      connect: [
        { host: "127.0.0.1", port },
        { host: "10.0.2.2", port: 80 },
      ],
    });
    const probe = result.probe;
    expect(probe, JSON.stringify(result)).toBeDefined();
    if (!probe) return;
    expect({ uid: probe.uid, gid: probe.gid }).toEqual({ uid: 65534, gid: 65534 });
    const seen = Object.fromEntries(probe.read.map((r) => [r.path, r]));
    for (const path of hidden) expect(seen[path]?.visible, `${path}: ${JSON.stringify(seen[path])}`).toBe(false);
    expect(seen["/"]?.entries?.sort()).toEqual(["bin", "dev", "etc", "job", "lib", "lib64", "opt", "proc", "sbin", "sys", "tmp", "usr", "var"]);
    expect(seen["/etc"]?.entries?.sort()).toEqual(["fonts", "group", "hostname", "hosts", "ld.so.cache", "libreoffice", "passwd"]);
    expect(seen["/usr/local"]?.entries).toEqual([]);
    expect(seen["/opt/folio"]?.entries?.sort()).toEqual(["node", "profile", "sandbox.mjs"]);

    const written = Object.fromEntries(probe.write.map((w) => [w.path, w.written]));
    expect(written).toEqual({
      "/": false,
      "/etc": false,
      "/usr": false,
      "/usr/local": false,
      "/opt/folio": false,
      "/var/cache/fontconfig": false,
      "/job": false,
      "/tmp": true,
      "/job/output": true,
    });

    for (const c of probe.connect) expect(c.connected, JSON.stringify(c)).toBe(false);
    expect(connections).toBe(0);
  }, 60_000);
});

describe("linked content in a document", () => {
  const canaryText = `CANARY${Math.floor(Math.random() * 9000 + 1000)}`;
  let canary: CanaryServer;
  let fileLink = "";

  beforeAll(async () => {
    const dir = join(work, "canary");
    execFileSync("mkdir", ["-p", dir]);
    writeFileSync(join(dir, "canary.svg"), canarySvg(canaryText));
    fileLink = `file://${join(dir, "canary.svg")}`;
    canary = await startCanaryServer(canaryText);
  });
  afterAll(() => canary?.close());

  it("is fetched by a LibreOffice with default settings (the documents are real attacks)", async () => {
    const dir = join(work, "control");
    for (const [name, doc] of [
      ["linked.docx", linkedImageDocx("Visible body text", [fileLink, canary.url])],
      ["linked.odt", linkedImageOdt("Visible body text", [fileLink, canary.url])],
    ] as const) {
      canary.requests.length = 0;
      rmSync(dir, { recursive: true, force: true });
      execFileSync("mkdir", ["-p", dir]);
      writeFileSync(join(dir, name), doc);
      const profile = join(dir, "default-profile");
      await run(SOFFICE_BIN, [`-env:UserInstallation=${fileUrl(profile)}`, "--headless", "--terminate_after_init"]);
      await run(SOFFICE_BIN, [`-env:UserInstallation=${fileUrl(profile)}`, "--headless", "--norestore", "--convert-to", "pdf", "--outdir", dir, join(dir, name)]);
      const text = execFileSync("pdftotext", [join(dir, name.replace(/\.\w+$/, ".pdf")), "-"], { encoding: "utf8" });
      expect(text, name).toContain(canaryText);
      expect(canary.requests.length, name).toBeGreaterThan(0);
    }
  }, 90_000);

  it.each([
    ["DOCX", () => linkedImageDocx("Visible body text", [fileLink, canary.url])],
    ["ODT", () => linkedImageOdt("Visible body text", [fileLink, canary.url])],
  ] as const)("is never fetched in the sandbox (%s, file and http links): the page shows no canary and the server sees no request", async (format, make) => {
    canary.requests.length = 0;
    const result = await backend.convert({ document: make(), format, maxPages: 5, timeoutMs: 60_000 });
    expect(result.pageCount).toBe(1);
    const text = ocr(result.pages[0] as Buffer, join(work, `ocr-${format}.png`));
    // Case and spacing as the font set and the OCR model give them (not glyph by glyph).
    expect(text).toMatch(/visible\s+body\s+text/i);
    expect(text).not.toContain(canaryText);
    expect(text).not.toMatch(/CANARY/i);
    expect(canary.requests).toEqual([]);
  }, 60_000);
});

/** Text tesseract reads on a page. */
function ocr(png: Buffer, scratch: string): string {
  writeFileSync(scratch, png);
  return execFileSync("tesseract", [scratch, "stdout"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
}

/** Runs a command without blocking the event loop (the test's HTTP server must answer meanwhile). */
function run(command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: "ignore" });
    child.once("error", reject);
    child.once("close", () => resolve());
  });
}
