/**
 * The sandbox program's pre-started mode on the host (LibreOffice and
 * poppler installed, no runsc): LibreOffice's single-instance pipe (its name
 * and protocol, against a fake LibreOffice), and runJob waiting for its job,
 * converting through the LibreOffice it started, falling back to a normal
 * start, and leaving no LibreOffice behind (none left once result.json is
 * there).
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, watch, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROJECT_ROOT } from "./assets.ts";
import { HANDIN_FILE, PRESTART_FILE, runJob, type PrestartSpec } from "./converter.ts";
import { fileUrl, prepareProfile } from "./profile.ts";
import { SEED_BYTES } from "./reseed.ts";
import { WARM_UP_STEPS } from "./warmup.ts";
import { officeGreeting, pngInfo } from "./testdocs.ts";
import { officePipePath, officeRequest } from "./warm-office.ts";

const FIXTURES = join(PROJECT_ROOT, "test", "fixtures", "convert");
const work = mkdtempSync(join(tmpdir(), "folio-prestart-test-"));
const profile = join(work, "profile");

beforeAll(async () => {
  await prepareProfile(profile);
}, 120_000);

afterAll(() => {
  rmSync(work, { recursive: true, force: true });
});

describe("officePipePath", () => {
  it("names the pipe as LibreOffice 7.4 does (seen in a sandbox: profile file:///tmp/p, user nobody)", () => {
    expect(officePipePath("file:///tmp/p", 65534)).toBe("/tmp/OSL_PIPE_65534_SingleOfficeIPC_35c6b71ae99df68de362128b089eda5");
  });
});

describe("officeRequest against a fake LibreOffice", () => {
  let server: Server;
  let socketPath = "";
  let received: string[] = [];
  let behaviour: "normal" | "wrong-greeting" | "close-after-args" | "never-done" = "normal";

  beforeAll(async () => {
    socketPath = join(work, "fake-office.sock");
    server = createServer((socket: Socket) => {
      if (behaviour === "wrong-greeting") {
        socket.end("Something::Else\0");
        return;
      }
      socket.write("InternalIPC::SendArguments\0");
      let text = "";
      socket.on("data", (chunk: Buffer) => {
        text += chunk.toString("utf8");
        if (!text.endsWith("\0")) return;
        received.push(text.slice(0, -1));
        if (behaviour === "normal") socket.write("InternalIPC::ProcessingDone\0");
        if (behaviour === "close-after-args") socket.destroy();
      });
    });
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const ask = (args: string[], deadlineMs = 5000, kill = () => undefined) => officeRequest(socketPath, "file:///work", args, Date.now() + deadlineMs, undefined, kill);

  it("sends the working folder and the arguments, commas and backslashes escaped, and waits for ProcessingDone", async () => {
    behaviour = "normal";
    received = [];
    await expect(ask(["--infilter=Text (encoded):UTF8,LF,,,", "--convert-to", "pdf", "C:\\odd,name.txt"])).resolves.toBe("done");
    expect(received).toEqual(["InternalIPC::Arguments1file:///work,--infilter=Text (encoded):UTF8\\,LF\\,\\,\\,,--convert-to,pdf,C:\\\\odd\\,name.txt"]);
  });

  it("is unavailable when nothing listens or the greeting is not LibreOffice's (nothing was handed over)", async () => {
    await expect(officeRequest(join(work, "nobody-here.sock"), "file:///", ["x"], Date.now() + 5000, undefined, () => undefined)).resolves.toBe("unavailable");
    behaviour = "wrong-greeting";
    received = [];
    await expect(ask(["x"])).resolves.toBe("unavailable");
    expect(received).toEqual([]);
  });

  it("is broken when LibreOffice goes away after taking the arguments (it crashed on the document)", async () => {
    behaviour = "close-after-args";
    await expect(ask(["x"])).resolves.toBe("broken");
  });

  it("kills LibreOffice and fails with timeout when the deadline passes first", async () => {
    behaviour = "never-done";
    let killed = 0;
    const err = (await ask(["x"], 300, () => void killed++).catch((e: unknown) => e)) as { code?: string };
    expect(err.code).toBe("timeout");
    expect(killed).toBe(1);
  });
});

describe("runJob in pre-started mode", () => {
  /**
   * A job folder with prestart.json only (`spec` adds to it); `handIn`
   * writes the job and releases the program, `wake` does what the host's
   * wake-up of a restored sandbox does.
   */
  function prestartedJob(name: string, file: string | Buffer, format: string, spec: Partial<PrestartSpec> = {}) {
    const base = join(work, name);
    const jobDir = join(base, "job");
    mkdirSync(join(jobDir, "input"), { recursive: true });
    mkdirSync(join(jobDir, "output"));
    writeFileSync(join(jobDir, PRESTART_FILE), JSON.stringify({ profileDir: profile, ...spec }));
    let ready = false;
    let release: (handedIn: boolean) => void = () => undefined;
    let wake: () => void = () => undefined;
    const handedIn = new Promise<boolean>((resolve) => (release = resolve));
    const running = runJob(jobDir, {
      scratchDir: base,
      handIn: (onWake) => {
        wake = onWake;
        return handedIn;
      },
      onReady: () => (ready = true),
    });
    const handIn = () => {
      const document = join(jobDir, "input", `document.${format.toLowerCase()}`);
      if (typeof file === "string") copyFileSync(join(FIXTURES, file), document);
      else writeFileSync(document, file);
      writeFileSync(join(jobDir, "job.json"), JSON.stringify({ format, dpi: 200, maxPages: 10, profileDir: "/unused", timeoutMs: 60_000 }));
      if (spec.handIn === "signal") writeFileSync(join(jobDir, HANDIN_FILE), JSON.stringify({ seed: randomBytes(SEED_BYTES).toString("hex") }));
      release(true);
    };
    return { base, jobDir, running, handIn, wake: () => wake(), close: () => release(false), isReady: () => ready };
  }

  /** LibreOffice processes whose command line names this folder. */
  function officesIn(dir: string): string[] {
    try {
      return execFileSync("pgrep", ["-f", dir], { encoding: "utf8" }).split("\n").filter(Boolean);
    } catch {
      return [];
    }
  }

  async function until(what: () => boolean, ms = 30_000): Promise<void> {
    const end = Date.now() + ms;
    while (!what()) {
      if (Date.now() > end) throw new Error("timed out waiting");
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it.each([
    ["one-page.docx", "DOCX", 1],
    ["slides.pptx", "PPTX", 2],
    ["hello.txt", "TXT", 1],
  ] as const)("starts LibreOffice, waits for the job, converts %s through the running LibreOffice and stops it", async (file, format, pages) => {
    const job = prestartedJob(`ok-${format}`, file, format);
    await until(job.isReady);
    expect(officesIn(job.base).length, "LibreOffice runs before the job exists").toBeGreaterThan(0);
    expect(existsSync(join(job.jobDir, "output", "result.json"))).toBe(false);
    job.handIn();
    const result = await job.running;
    expect(result, JSON.stringify(result)).toMatchObject({ ok: true, pageCount: pages });
    expect(result.timings?.warmOffice).toBe(1);
    for (let n = 1; n <= pages; n++) {
      expect(pngInfo(readFileSync(join(job.jobDir, "output", `page-${n}.png`))).phys).toEqual({ x: 7874, y: 7874, unit: 1 });
    }
    expect(JSON.parse(readFileSync(join(job.jobDir, "output", "result.json"), "utf8"))).toMatchObject({ ok: true, pageCount: pages });
    expect(officesIn(job.base)).toEqual([]);
  }, 60_000);

  it("has stopped LibreOffice when result.json appears: the host reads the output folder from that moment on", async () => {
    const job = prestartedJob("stopped-first", "one-page.docx", "DOCX");
    await until(job.isReady);
    expect(officesIn(job.base).length).toBeGreaterThan(0);
    let atResult: string[] | undefined;
    const watcher = watch(join(job.jobDir, "output"), (_event, name) => {
      if (name === "result.json" && atResult === undefined) atResult = officesIn(job.base);
    });
    try {
      job.handIn();
      expect(await job.running).toMatchObject({ ok: true, pageCount: 1 });
      await until(() => atResult !== undefined, 5000);
    } finally {
      watcher.close();
    }
    expect(atResult, "no LibreOffice when result.json appeared").toEqual([]);
  }, 60_000);

  it("reports a document LibreOffice cannot read as conversion_failed, as a normal start does", async () => {
    const job = prestartedJob("garbage", Buffer.from("PK\u0003\u0004 this is not really a zip archive at all".repeat(20)), "DOCX");
    await until(job.isReady);
    job.handIn();
    const result = await job.running;
    expect(result.ok).toBe(false);
    expect(result.error?.code).toBe("conversion_failed");
    expect(result.error?.message).toMatch(/could not read the document as DOCX/);
    expect(officesIn(job.base)).toEqual([]);
  }, 60_000);

  it("starts LibreOffice for the document after all when the running one died before the job came", async () => {
    const job = prestartedJob("fallback", "one-page.docx", "DOCX");
    await until(job.isReady);
    execFileSync("pkill", ["-KILL", "-f", job.base]);
    await until(() => officesIn(job.base).length === 0);
    job.handIn();
    const result = await job.running;
    expect(result, JSON.stringify(result)).toMatchObject({ ok: true, pageCount: 1 });
    expect(result.timings?.warmOffice).toBe(0);
    expect(officesIn(job.base)).toEqual([]);
  }, 60_000);

  it("with warmUp, runs every warm-up conversion in the LibreOffice it started before it says ready, leaves none of their files, and converts the job in that same LibreOffice", async () => {
    const job = prestartedJob("warm-up", "two-pages.docx", "DOCX", { warmUp: true });
    await until(job.isReady, 60_000);
    const offices = officesIn(job.base);
    expect(offices.length, "LibreOffice outlived the warm-up conversions").toBeGreaterThan(0);
    const scratch = readdirSync(job.base).filter((n) => n.startsWith("folio-job-"));
    expect(scratch).toHaveLength(1);
    expect(readdirSync(join(job.base, scratch[0]!)), "the warm-up's files are gone").not.toContain("warm-up");
    job.handIn();
    const result = await job.running;
    expect(result, JSON.stringify(result)).toMatchObject({ ok: true, pageCount: 2 });
    expect(result.timings?.warmOffice, "converted by the LibreOffice that ran the warm-up").toBe(1);
    expect(result.timings?.warmUp).toBe(WARM_UP_STEPS.length);
    expect(officesIn(job.base)).toEqual([]);
  }, 90_000);

  it("with the signal hand-in, holds LibreOffice's request thread on a greeted connection until the wake-up (another client is greeted only then)", async () => {
    const job = prestartedJob("held", "one-page.docx", "DOCX", { handIn: "signal" });
    await until(job.isReady);
    const pipe = officePipePath(fileUrl(join(job.base, readdirSync(job.base).find((n) => n.startsWith("folio-job-"))!, "profile")), process.getuid!());
    const greeted = officeGreeting(pipe);
    await new Promise((r) => setTimeout(r, 1500));
    expect(await Promise.race([greeted, Promise.resolve("not yet")]), "no greeting while the connection is held").toBe("not yet");
    job.wake();
    expect(await greeted).toBe("InternalIPC::SendArguments");
    job.handIn();
    expect(await job.running, "the job still converts").toMatchObject({ ok: true, pageCount: 1 });
  }, 60_000);

  it("ends without a result and without LibreOffice when the job is never handed in", async () => {
    const job = prestartedJob("never", "one-page.docx", "DOCX");
    await until(job.isReady);
    job.close();
    const result = await job.running;
    expect(result.ok).toBe(false);
    expect(existsSync(join(job.jobDir, "output", "result.json"))).toBe(false);
    expect(officesIn(job.base)).toEqual([]);
  }, 60_000);
});
