/**
 * soak: steady mixed paid traffic against `folio dev` for BENCH_SOAK_MINUTES
 * (default 30), the operations issue's soak (docs/benchmarks.md).
 *
 * folio dev is a child process as `make run` starts it (a fresh
 * FOLIO_DATA_DIR, embedded PGlite, its runsc conversion pool), with the fake
 * OpenRouter upstream of the tests (a test double: the real upstream cannot
 * be reached here) for chat and upstream OCR. An account of the benchmark's
 * own, made with `folio admin account create`, sends BENCH_SOAK_RPM requests
 * a minute (default 15, docling-serve#366's load), started on a fixed
 * schedule whatever the answers take (at most 4 at once), in turn: OCR of a
 * PNG (local/tesseract), OCR of a 3-page PDF (local/tesseract), a chat
 * completion, an office conversion (DOCX), OCR of a PNG by an upstream model,
 * usage list and summary reads.
 *
 * Every minute it samples: VmRSS summed over folio dev and every descendant
 * (a copy caught between fork and exec left out), folio dev's open file
 * descriptors, runsc processes alive (the sandboxes), Folio's entries in the
 * temporary folder (`folio-…`) and in FOLIO_DATA_DIR's work folders, and the minute's
 * latency p50/p99.
 *
 * Goals (the issue's): memory at the end within 10 % of memory after the
 * first 5 minutes; no growth of descriptors, sandboxes or temporary files;
 * p99 of the last 5 minutes within 1.2 × the first 5's; no error but 429 or
 * 503 with Retry-After. `ok` is correctness only: every answer a 2xx (or such
 * a 429/503), checked for its shape.
 *
 * Environment: BENCH_SOAK_MINUTES, BENCH_SOAK_RPM.
 */
import { readdirSync, readFileSync, rmSync, mkdtempSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CONVERSION_MIME_TYPES } from "../internal/formats/index.ts";
import { FAKE_UPSTREAM_MODEL as UPSTREAM_MODEL, startFakeUpstream } from "../test/fake-upstream.ts";
import type { BenchmarkReport } from "./run.ts";
import { cleanEnv, createAccount, startDev, treeSample, type Dev } from "./jobs.ts";
import { benchmarkEntry, freePort, median, positiveInt, quantile } from "./support.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const fixture = (...p: string[]) => readFileSync(join(ROOT, "test", "fixtures", ...p));
const DOCX = CONVERSION_MIME_TYPES.DOCX[0]!;
/** Requests in flight at most: a tick that would send another is skipped and counted (an overloaded folio is not piled on). */
const MAX_IN_FLIGHT = 4;
/** The first and the last this many minutes are compared (memory, descriptors, latency): the first is the warmed-up state. */
const WARM_MINUTES = 5;

interface Answer {
  at: number;
  kind: string;
  status: number;
  ms: number;
  retryAfter: boolean;
  ok: boolean;
}

interface Minute {
  minute: number;
  rssMiB: number;
  fds: number;
  sandboxes: number;
  tempEntries: number;
  requests: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
}

/** The q-quantile, 0 for no figures (a minute without an answer). */
const quantileOr0 = (xs: readonly number[], q: number) => (xs.length === 0 ? 0 : quantile(xs, q));

/** Entries of `dir` (those whose name matches `only`, when given): 0 when it does not exist. */
function count(dir: string, only?: RegExp): number {
  try {
    return readdirSync(dir).filter((n) => !only || only.test(n)).length;
  } catch {
    return 0;
  }
}

async function runBenchmark(): Promise<BenchmarkReport> {
  const minutes = positiveInt("BENCH_SOAK_MINUTES", 30);
  const rpm = positiveInt("BENCH_SOAK_RPM", 15);
  const png = fixture("ocr", "english.png").toString("base64");
  const pdf = fixture("ocr", "multipage.pdf").toString("base64");
  const docx = fixture("convert", "two-pages.docx").toString("base64");
  const upstream = await startFakeUpstream();
  const dataDir = mkdtempSync(join(os.tmpdir(), "folio-bench-soak-"));
  const tmp = os.tmpdir();
  let dev: Dev | undefined;
  try {
    const port = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...cleanEnv(),
      FOLIO_DATA_DIR: dataDir,
      FOLIO_HTTP_PORT: String(port),
      FOLIO_METRICS_HOST: "127.0.0.1",
      FOLIO_METRICS_PORT: String(await freePort()),
      FOLIO_UPSTREAM_BASE_URL: upstream.baseUrl,
      FOLIO_UPSTREAM_API_KEY: upstream.apiKey,
      LOG_LEVEL: "warn",
    };
    const key = createAccount(env, "bench-soak@example.test");
    dev = await startDev(env, port, Number(env.FOLIO_METRICS_PORT));
    const root = dev.child.pid!;
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    const json = (body: unknown) => ({ method: "POST", headers, body: JSON.stringify(body) });
    const requests: { kind: string; path: string; init: RequestInit; check: (body: Record<string, unknown>) => boolean }[] = [
      { kind: "ocr png", path: "/v1/ocr", init: json({ base64: png, mime_type: "image/png", model: "local/tesseract" }), check: (b) => b.object === "ocr.result" },
      { kind: "ocr pdf", path: "/v1/ocr", init: json({ base64: pdf, model: "local/tesseract" }), check: (b) => (b.result as { pages: unknown[] })?.pages?.length === 3 },
      { kind: "chat", path: "/v1/chat/completions", init: json({ model: UPSTREAM_MODEL, messages: [{ role: "user", content: "Say hello." }] }), check: (b) => b.object === "chat.completion" },
      { kind: "convert", path: "/v1/convert", init: json({ file: docx, filename: "two-pages.docx", mimeType: DOCX }), check: (b) => b.object === "conversion.result" && (b.result as { page_count: number })?.page_count === 2 },
      { kind: "ocr upstream", path: "/v1/ocr", init: json({ base64: png, mime_type: "image/png", model: UPSTREAM_MODEL }), check: (b) => b.object === "ocr.result" },
      { kind: "usage", path: "/v1/usage?limit=20", init: { headers }, check: (b) => b.object === "list" },
      { kind: "usage summary", path: "/v1/usage/summary", init: { headers }, check: (b) => b.object !== undefined || b.data !== undefined || b.total_requests !== undefined },
    ];
    const answers: Answer[] = [];
    const samples: Minute[] = [];
    const t0 = performance.now();
    const end = t0 + minutes * 60_000;
    let inFlight = 0;
    let skipped = 0;
    let sent = 0;
    const send = async () => {
      const r = requests[sent++ % requests.length]!;
      if (inFlight >= MAX_IN_FLIGHT) {
        skipped++;
        return;
      }
      inFlight++;
      const started = performance.now();
      try {
        const res = await fetch(`${dev!.url}${r.path}`, { ...r.init, signal: AbortSignal.timeout(300_000) });
        const text = await res.text();
        let body: Record<string, unknown> = {};
        try {
          body = JSON.parse(text) as Record<string, unknown>;
        } catch {
          body = {};
        }
        const retryAfter = res.headers.get("retry-after") !== null;
        const ok = res.ok ? r.check(body) : (res.status === 429 || res.status === 503) && retryAfter;
        answers.push({ at: performance.now(), kind: r.kind, status: res.status, ms: performance.now() - started, retryAfter, ok });
        if (!ok) console.error(`soak: ${r.kind} answered ${res.status}: ${text.slice(0, 300)}`);
      } catch (err) {
        answers.push({ at: performance.now(), kind: r.kind, status: 0, ms: performance.now() - started, retryAfter: false, ok: false });
        console.error(`soak: ${r.kind} failed: ${String(err)}`);
      } finally {
        inFlight--;
      }
    };
    const sample = (minute: number) => {
      const from = t0 + (minute - 1) * 60_000;
      const inMinute = answers.filter((a) => a.at > from && a.at <= from + 60_000);
      const tree = treeSample(root);
      samples.push({
        minute,
        rssMiB: Math.round(tree.filter((p) => !p.forkCopy).reduce((a, p) => a + p.rssKiB, 0) / 1024),
        fds: count(`/proc/${root}/fd`),
        sandboxes: tree.filter((p) => p.name.startsWith("runsc")).length,
        // Folio's own temporary folders (folio-pdf-, folio-job-, folio-upload-, …; other programs share the folder) and the data folder's work folders.
        tempEntries: count(tmp, /^folio-(?!bench-)/) + count(join(dataDir, "sandboxes")) + count(join(dataDir, "jobs")),
        requests: inMinute.length,
        p50Ms: Math.round(median(inMinute.map((a) => a.ms)) || 0),
        p99Ms: Math.round(quantileOr0(inMinute.map((a) => a.ms), 0.99)),
        errors: inMinute.filter((a) => !a.ok).length,
      });
      const s = samples.at(-1)!;
      console.error(`soak: minute ${minute}: ${s.rssMiB} MiB, ${s.fds} fds, ${s.sandboxes} runsc, ${s.tempEntries} temp entries, ${s.requests} answers, p50 ${s.p50Ms} ms, p99 ${s.p99Ms} ms, ${s.errors} errors`);
    };
    const interval = 60_000 / rpm;
    const pending: Promise<void>[] = [];
    let nextMinute = 1;
    for (let i = 0; t0 + i * interval < end; i++) {
      const due = t0 + i * interval;
      while (performance.now() < due) {
        if (performance.now() >= t0 + nextMinute * 60_000) sample(nextMinute++);
        await new Promise((r) => setTimeout(r, Math.min(250, Math.max(1, due - performance.now()))));
      }
      pending.push(send());
    }
    await Promise.all(pending);
    while (nextMinute <= minutes) sample(nextMinute++);

    const warm = samples.filter((s) => s.minute <= WARM_MINUTES);
    const last = samples.filter((s) => s.minute > minutes - WARM_MINUTES);
    const firstAnswers = answers.filter((a) => a.at <= t0 + WARM_MINUTES * 60_000).map((a) => a.ms);
    const lastAnswers = answers.filter((a) => a.at > t0 + (minutes - WARM_MINUTES) * 60_000).map((a) => a.ms);
    const memAfterWarm = warm.at(-1)?.rssMiB ?? 0;
    const memEnd = samples.at(-1)?.rssMiB ?? 0;
    const memRatio = memAfterWarm ? memEnd / memAfterWarm : 0;
    const p99First = quantileOr0(firstAnswers, 0.99);
    const p99Last = quantileOr0(lastAnswers, 0.99);
    const grew = (k: "fds" | "sandboxes" | "tempEntries") => Math.max(...last.map((s) => s[k])) - Math.max(...warm.map((s) => s[k]));
    const errors = answers.filter((a) => !a.ok);
    const goals = {
      memory: memRatio <= 1.1,
      fds: grew("fds") <= 0,
      sandboxes: grew("sandboxes") <= 0,
      tempFiles: grew("tempEntries") <= 0,
      p99: p99Last <= 1.2 * p99First,
      errors: errors.length === 0,
    };
    const verdict = (b: boolean) => (b ? "met" : "MISSED");
    const text = [
      `${minutes} min at ${rpm} requests/min (${answers.length} answered, ${skipped} not sent: ${MAX_IN_FLIGHT} already in flight); by kind: ${requests.map((r) => `${r.kind} ${answers.filter((a) => a.kind === r.kind).length}`).join(", ")}`,
      `memory (tree, MiB): after ${WARM_MINUTES} min ${memAfterWarm}, at the end ${memEnd}: ${memRatio.toFixed(3)}× (goal <= 1.1: ${verdict(goals.memory)})`,
      `file descriptors: first ${WARM_MINUTES} min max ${Math.max(...warm.map((s) => s.fds))}, last ${WARM_MINUTES} min max ${Math.max(...last.map((s) => s.fds))} (no growth: ${verdict(goals.fds)})`,
      `runsc processes: ${Math.max(...warm.map((s) => s.sandboxes))} then ${Math.max(...last.map((s) => s.sandboxes))} (${verdict(goals.sandboxes)}); temporary entries: ${Math.max(...warm.map((s) => s.tempEntries))} then ${Math.max(...last.map((s) => s.tempEntries))} (${verdict(goals.tempFiles)})`,
      `latency p99: first ${WARM_MINUTES} min ${p99First.toFixed(0)} ms, last ${WARM_MINUTES} min ${p99Last.toFixed(0)} ms: ${(p99Last / (p99First || 1)).toFixed(2)}× (goal <= 1.2: ${verdict(goals.p99)}); p50 ${median(firstAnswers).toFixed(0)} then ${median(lastAnswers).toFixed(0)} ms`,
      `errors other than 429/503 with Retry-After: ${errors.length} (${verdict(goals.errors)})`,
      `machine: ${os.cpus().length} CPUs, load average at the end ${os.loadavg().map((x) => x.toFixed(2)).join(" ")}`,
    ].join("\n");
    return {
      text,
      json: { date: new Date().toISOString(), minutes, rpm, samples, goals, memory: { afterWarmMiB: memAfterWarm, endMiB: memEnd, ratio: memRatio }, p99: { firstMs: p99First, lastMs: p99Last }, errors: errors.map((e) => ({ kind: e.kind, status: e.status })) },
      ok: errors.length === 0,
    };
  } finally {
    await dev?.stop();
    await upstream.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export default await benchmarkEntry(import.meta.url, {
  name: "soak",
  description: "steady mixed paid traffic against folio dev for 30 min: memory, descriptors, sandboxes, temporary files, p99",
  run: runBenchmark,
});
