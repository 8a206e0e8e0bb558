/**
 * `folio ocr --async` and `folio ocr --job` as child processes against a real
 * edge, a real jobs worker and the real extraction service (tesseract over
 * gRPC), on a Postgres database of this file's own (so no other file's
 * worker takes these jobs, nor this file's worker theirs). The worker runs
 * only in the tests that want jobs read: without it a job stays queued, which
 * makes Ctrl-C and cancel deterministic. What lands on stdout and stderr, the
 * exit status, and the job as the API then shows it.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { adminCreateAccount } from "../internal/cli/admin/index.ts";
import { runOcr } from "../internal/cli/client/index.ts";
import { cer } from "./cer.ts";
import { call, jobsStack } from "./harness.ts";
import { freePort } from "./support.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const fixture = (path: string) => join(ROOT, "test", "fixtures", path);
const PDF = fixture("ocr/ten-pages.pdf");
const MAIN = join(ROOT, "cmd", "folio", "main.ts");
/** The real entry point once it wires the client commands in; until then the same commands on a bare program. */
const ENTRY = readFileSync(MAIN, "utf8").includes("registerClientCommands") ? MAIN : join(ROOT, "test", "cli-client-main.ts");
/** Pages a worker claims at a time: small, so a ten-page job reports progress more than once. */
const RANGE_PAGES = "2";

const stack = jobsStack("cli_async", {
  // A conversion address nobody answers on: the edge accepts office documents, and this file's
  // worker (given no conversion service) fails them at once with conversion_not_available.
  edgeEnv: async () => ({ FOLIO_CONVERSION_ADDRESS: `127.0.0.1:${await freePort()}`, FOLIO_JOB_RANGE_PAGES: RANGE_PAGES }),
  // Started by the tests that want jobs read: without it a job stays queued.
  workerEnv: { FOLIO_JOB_RANGE_PAGES: RANGE_PAGES },
  workerAtStart: false,
});

let uniq = 0;
async function accountKey(cents = 10_000): Promise<string> {
  const a = await adminCreateAccount({ db: stack.database.db }, { email: `cli-async-${process.pid}-${++uniq}@test.invalid`, name: "cli async", creditsCents: cents, requestsPerMinute: 10_000 });
  return a.api_key.key;
}

interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

interface Running {
  child: ChildProcessWithoutNullStreams;
  /** Resolves with the first match of `pattern` in stderr, as it arrives. */
  stderrMatch(pattern: RegExp): Promise<RegExpMatchArray>;
  done: Promise<Ran>;
}

/** Starts `folio <args>` with FOLIO_BASE_URL pointing at `baseUrl` (the edge by default) and the key. */
function start(args: string[], key: string, baseUrl = stack.edge.url): Running {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("FOLIO_")) env[k] = v;
  const child = spawn(process.execPath, ["--import", "tsx", ENTRY, ...args], { cwd: ROOT, env: { ...env, FOLIO_BASE_URL: baseUrl, FOLIO_API_KEY: key } });
  child.stdin.end();
  let stdout = "";
  let stderr = "";
  const waiting: { pattern: RegExp; resolve: (m: RegExpMatchArray) => void }[] = [];
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
    for (const w of [...waiting]) {
      const m = w.pattern.exec(stderr);
      if (m) {
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve(m);
      }
    }
  });
  const done = new Promise<Ran>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return {
    child,
    done,
    stderrMatch: (pattern) =>
      new Promise((resolve, reject) => {
        const m = pattern.exec(stderr);
        if (m) return resolve(m);
        waiting.push({ pattern, resolve });
        void done.then((r) => reject(new Error(`the command ended before stderr showed ${pattern}:\n${show(r)}`)));
      }),
  };
}

const folio = (args: string[], key: string, baseUrl?: string) => start(args, key, baseUrl).done;
const show = (r: Ran) => `exit ${r.code}${r.signal ? ` (${r.signal})` : ""}\n--- stdout\n${r.stdout.slice(0, 1500)}\n--- stderr\n${r.stderr.slice(0, 3000)}`;
const JOB_LINE = /^job (job_\w+) /m;

/** The "job job_…: 4/10 pages …" lines printed when stderr is not a terminal, as [done, of]. */
function progressLines(stderr: string): [number, number][] {
  return [...stderr.matchAll(/^job job_\w+: (\d+)\/(\d+) pages/gm)].map((m) => [Number(m[1]), Number(m[2])]);
}

async function jobStatus(key: string, id: string): Promise<string> {
  return (await call(stack.edge, "GET", `/v1/ocr/jobs/${id}`, key)).body.status as string;
}

/** Each case starts one or more processes (tsx compiles on start) and reads up to ten pages: generous under a loaded parallel run. */
const SLOW = { timeout: 180_000 };
/** Twenty pages through one tesseract service (the synchronous read and the job at once): about 90 s seen beside test/cli-client.test.ts. */
const SLOWEST = { timeout: 300_000 };

describe("folio ocr --async", SLOW, () => {
  it("writes the text a synchronous run writes, shows a line per progress event up to 10/10, and --job of the finished job writes it again", SLOWEST, async () => {
    await stack.startWorker();
    const key = await accountKey();
    const [sync, async] = await Promise.all([
      folio(["ocr", PDF, "--model", "local/tesseract", "--format", "json"], key),
      folio(["ocr", PDF, "--model", "local/tesseract", "--async", "--metadata", "case=A-17", "--metadata", "batch=7"], key),
    ]);
    expect(sync.code, show(sync)).toBe(0);
    expect(async.code, show(async)).toBe(0);
    const syncResult = JSON.parse(sync.stdout) as { result: { text: string; pages: { page_number: number; text: string }[] } };
    const syncText = syncResult.result.text.endsWith("\n") ? syncResult.result.text : `${syncResult.result.text}\n`;
    // What `folio ocr` without --format json prints is result.text. Exactly the same: the worker renders the pages with
    // the same poppler runner as the synchronous read (internal/documents), so tesseract reads the same pixels.
    expect(async.stdout, `CER ${cer(async.stdout, syncText)}\n${show(async)}`).toBe(syncText);
    expect(async.stdout.endsWith("\n")).toBe(true);

    const id = JOB_LINE.exec(async.stderr)?.[1];
    expect(id, show(async)).toMatch(/^job_/);
    expect(async.stderr, show(async)).toMatch(new RegExp(`^job ${id} queued · 10 pages · local/tesseract$`, "m"));
    const lines = progressLines(async.stderr);
    expect(lines.length, show(async)).toBeGreaterThanOrEqual(2);
    expect(lines.every(([, of]) => of === 10), show(async)).toBe(true);
    expect(lines.map(([done]) => done), show(async)).toEqual(lines.map(([done]) => done).sort((a, b) => a - b));
    expect(lines.at(-1), show(async)).toEqual([10, 10]);
    expect(async.stderr, show(async)).toMatch(new RegExp(`^cost: \\$\\d+\\.\\d\\d · 10 pages · local/tesseract · \\d+\\.\\d s · ${id}$`, "m"));
    expect(async.stderr).not.toContain("\r");

    // The finished job, again: its text exactly as first written, and page by page what the synchronous read answered.
    const again = await folio(["ocr", "--job", id!], key);
    expect(again.code, show(again)).toBe(0);
    expect(again.stdout).toBe(async.stdout);
    expect(progressLines(again.stderr), show(again)).toEqual([]);
    const json = await folio(["ocr", "--job", id!, "--format", "json"], key);
    expect(json.code, show(json)).toBe(0);
    const body = JSON.parse(json.stdout) as { id: string; object: string; metadata: Record<string, string>; result: { pages: { page_number: number; text: string }[] } };
    expect(body).toMatchObject({ id, object: "ocr.result", metadata: { case: "A-17", batch: "7" } });
    expect(body.result.pages.map((p) => p.page_number)).toEqual(syncResult.result.pages.map((p) => p.page_number));
    for (const [i, p] of body.result.pages.entries()) {
      const sync = syncResult.result.pages[i]!.text;
      expect(p.text, `page ${p.page_number}: CER ${cer(p.text, sync)}\n--- async\n${p.text}\n--- sync\n${sync}`).toBe(sync);
    }
  });

  it("on a terminal, redraws one progress line in place and ends it before the cost (in process, stderr a TTY)", async () => {
    await stack.startWorker();
    const key = await accountKey();
    const sink = (isTTY: boolean) => {
      const w = new Writable({
        write(chunk: Buffer, _enc, cb) {
          w.text += chunk.toString();
          cb();
        },
      }) as Writable & { text: string; isTTY: boolean };
      w.text = "";
      w.isTTY = isTTY;
      return w;
    };
    const stdout = sink(false);
    const stderr = sink(true);
    const status = await runOcr(PDF, { model: "local/tesseract", pages: "1-4", async: true }, { stdout, stderr, env: { FOLIO_BASE_URL: stack.edge.url, FOLIO_API_KEY: key } });
    const got = `status ${status}\n--- stdout\n${stdout.text}\n--- stderr\n${JSON.stringify(stderr.text)}`;
    expect(status, got).toBe(0);
    const id = JOB_LINE.exec(stderr.text)?.[1];
    expect(stderr.text, got).toMatch(new RegExp(`^job ${id} queued · 4 pages · local/tesseract\n\r${id} \\[░{24}\\] 0/4 pages · queued\x1b\\[K`));
    expect(stderr.text, got).toMatch(new RegExp(`\r${id} \\[█{24}\\] 4/4 pages · \\d+\\.\\d pages/s\x1b\\[K\ncost: `));
    expect(progressLines(stderr.text), got).toEqual([]);
    expect(cer(stdout.text, [1, 2, 3, 4].map((n) => readFileSync(fixture(`ocr/ten-pages.page-${n}.txt`), "utf8")).join("\n\n")), got).toBeLessThan(0.1);
  });

  it("follows the events again from the last one seen (Last-Event-ID) when the connection drops", async () => {
    await stack.startWorker();
    const key = await accountKey();
    const proxy = await cuttingProxy(stack.edge.url);
    try {
      const r = await folio(["ocr", fixture("ocr/english.png"), "--model", "local/tesseract", "--async"], key, proxy.url);
      expect(r.code, show(r)).toBe(0);
      expect(cer(r.stdout, readFileSync(fixture("ocr/english.txt"), "utf8")), show(r)).toBeLessThan(0.05);
      // The first stream was cut after its first event (sequence 1); the second asked only for what followed.
      expect(proxy.lastEventIds, show(r)).toEqual([undefined, "1"]);
    } finally {
      await proxy.close();
    }
  });

  it("exits 1 with the job's error and code when the job fails (an office document, no conversion service for the worker)", async () => {
    await stack.startWorker();
    const key = await accountKey();
    const r = await folio(["ocr", fixture("convert/two-pages.docx"), "--model", "local/tesseract", "--async"], key);
    expect(r.code, show(r)).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr, show(r)).toMatch(/^folio: job job_\w+ failed: .+ \[conversion_not_available\]$/m);
    expect(r.stderr).toMatch(/^job job_\w+ queued · pages not known until converted · local\/tesseract$/m);
  });

  it("exits 1 naming the cancel when the job is cancelled while it follows it", async () => {
    await stack.stopWorker();
    const key = await accountKey();
    const run = start(["ocr", PDF, "--model", "local/tesseract", "--async"], key);
    const id = (await run.stderrMatch(JOB_LINE))[1]!;
    await run.stderrMatch(/0\/10 pages · queued/);
    expect((await call(stack.edge, "POST", `/v1/ocr/jobs/${id}/cancel`, key)).body.status).toBe("cancelled");
    const r = await run.done;
    expect(r.code, show(r)).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr, show(r)).toMatch(new RegExp(`^folio: job ${id} was cancelled after 0 of 10 pages \\(charged \\$0\\.00\\) \\[cancelled\\]$`, "m"));
  });

  it("Ctrl-C leaves the job running, prints how to follow it again and exits 130; --job then follows it to its result", async () => {
    await stack.stopWorker();
    const key = await accountKey();
    const run = start(["ocr", PDF, "--model", "local/tesseract", "--async", "--pages", "1-3"], key);
    const id = (await run.stderrMatch(JOB_LINE))[1]!;
    run.child.kill("SIGINT");
    const r = await run.done;
    expect(r.code, show(r)).toBe(130);
    expect(r.stderr, show(r)).toContain(`folio: interrupted; job ${id} goes on without this terminal. Follow it again and write its result: folio ocr --job ${id}`);
    expect(r.stdout).toBe("");
    expect(await jobStatus(key, id)).toBe("queued");

    // Followed from queued (a worker starts meanwhile) to the end: progress, the text, the cost.
    const follow = start(["ocr", "--job", id], key);
    await follow.stderrMatch(new RegExp(`^job ${id}: 0/3 pages · queued$`, "m"));
    await stack.startWorker();
    const f = await follow.done;
    expect(f.code, show(f)).toBe(0);
    expect(cer(f.stdout, [1, 2, 3].map((n) => readFileSync(fixture(`ocr/ten-pages.page-${n}.txt`), "utf8")).join("\n\n")), show(f)).toBeLessThan(0.1);
    expect(progressLines(f.stderr).at(-1), show(f)).toEqual([3, 3]);
    expect(f.stderr).toMatch(new RegExp(`^cost: \\$\\d+\\.\\d\\d · 3 pages · local/tesseract · \\d+\\.\\d s · ${id}$`, "m"));
  });

  it("--cancel-on-interrupt cancels the job on Ctrl-C and exits 130", async () => {
    await stack.stopWorker();
    const key = await accountKey();
    const run = start(["ocr", PDF, "--model", "local/tesseract", "--async", "--cancel-on-interrupt", "--format", "json"], key);
    const id = (await run.stderrMatch(JOB_LINE))[1]!;
    run.child.kill("SIGINT");
    const r = await run.done;
    expect(r.code, show(r)).toBe(130);
    expect(r.stderr, show(r)).toContain(`folio: interrupted; job ${id} cancelled after 0 pages (charged $0.00)`);
    expect(await jobStatus(key, id)).toBe("cancelled");
  });

  it("refuses flags that do not go together before sending anything", async () => {
    const key = await accountKey();
    const cases: [string[], RegExp][] = [
      [["ocr", "--job", "job_x", "--model", "local/tesseract"], /^folio: --job follows a job as it was submitted: --model cannot change it$/m],
      [["ocr", PDF, "--job", "job_x"], /^folio: give a file or URL to read, or --job ID to follow a job, not both$/m],
      [["ocr", PDF, "--async", "--out", "pages"], /^folio: a job keeps no page images: --out needs the synchronous command/m],
      [["ocr", PDF, "--metadata", "a=b"], /^folio: --metadata is kept with a job: add --async$/m],
      [["ocr", PDF, "--async", "--metadata", "novalue"], /^folio: --metadata takes key=value, not 'novalue'$/m],
      [["ocr"], /^folio: give a file or URL to read \(or --job ID to follow a job\)$/m],
    ];
    const runs = await Promise.all(cases.map(([args]) => folio(args, key)));
    for (const [i, r] of runs.entries()) {
      expect(r.code, show(r)).toBe(1);
      expect(r.stderr, show(r)).toMatch(cases[i]![1]);
    }
    expect((await call(stack.edge, "GET", "/v1/ocr/jobs", key)).body.data).toEqual([]);
    const missing = await folio(["ocr", "--job", "job_nope"], key);
    expect(missing.code, show(missing)).toBe(1);
    expect(missing.stderr, show(missing)).toMatch(/\[not_found, HTTP 404\]$/m);
  });
});

/**
 * A proxy in front of the edge that cuts the first job event stream right
 * after its first event (the client sees the connection drop mid-stream),
 * and records the Last-Event-ID of every event stream request.
 */
async function cuttingProxy(target: string): Promise<{ url: string; lastEventIds: (string | undefined)[]; close(): Promise<void> }> {
  const lastEventIds: (string | undefined)[] = [];
  const server: Server = createServer((req, res) => {
    const events = /\/events(\?|$)/.test(req.url ?? "");
    if (events) lastEventIds.push(req.headers["last-event-id"] as string | undefined);
    const cut = events && lastEventIds.length === 1;
    const upstream = httpRequest(target + req.url, { method: req.method, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      if (!cut) {
        up.pipe(res);
        return;
      }
      res.flushHeaders();
      let seen: string | null = "";
      up.on("data", (d: Buffer) => {
        if (seen === null) return;
        seen += d.toString();
        const end = seen.indexOf("\n\n");
        if (end < 0) return;
        const first = seen.slice(0, end + 2);
        seen = null;
        res.write(first, () => {
          up.destroy();
          res.socket?.destroy();
        });
      });
    });
    upstream.on("error", () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    lastEventIds,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
