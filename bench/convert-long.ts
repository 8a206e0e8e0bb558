/**
 * convert-long: a 60-page DOCX through POST /v1/convert (the whole stack:
 * edge → gRPC → conversion service → a runsc sandbox restored from a checkpoint, with auth
 * and billing, as `folio dev` runs it) against the host pipeline the issue
 * measured (LibreOffice + `pdftoppm -r 200 -png` on the host, a fresh copy of
 * a profile prepared with LibreOffice's own start behaviour: profile.ts,
 * skipRenderTests), in BENCH_LONG_ROUNDS interleaved rounds
 * (default 3; the order alternates each round). Reported: medians, the
 * ratio /v1/convert ÷ host (issue 14's goal: ≤ 0.35), the sandbox's own steps
 * (`timings` of result.json), and PNG bytes per page from pdftoppm's own
 * PNG writer against the sandbox program's encoder, with how many pages came
 * out grey.
 *
 * The document is made at bench time (not committed): a flat ODT of 60
 * sections, each beginning on a new page (a heading, five paragraphs of
 * generated prose; every tenth heading is blue, so a few pages are RGB as in
 * real documents), saved as DOCX by the host's LibreOffice.
 *
 * BENCH_SANDBOX_PROGRAM_BEFORE=<bundle>: also converts through a conversion
 * service whose sandboxes run that bundled sandbox program (e.g. an older
 * commit's `cmd/sandbox` built with esbuild), interleaved with one running
 * the current program, both called in process (no edge): the before/after of
 * a change to the program under the same conditions.
 *
 * Needs root, runsc, LibreOffice, poppler, DATABASE_URL and REDIS_URL
 * (`make bench`). Standalone: `node_modules/.bin/tsx bench/convert-long.ts`.
 */
import { spawn } from "node:child_process";
import { cp, mkdtemp, readFile, readdir, rm, stat, writeFile } from "node:fs/promises";
import os, { tmpdir } from "node:os";
import { join } from "node:path";
import { ConversionService } from "../internal/conversion/service.ts";
import { registerConversion } from "../internal/conversion/grpc.ts";
import { startEdge } from "../internal/edge/index.ts";
import { CONVERSION_MIME_TYPES, pngSize } from "../internal/formats/index.ts";
import { startGrpcServer } from "../internal/platform/grpc/index.ts";
import { createLogger } from "../internal/platform/log/index.ts";
import { fileUrl, prepareProfile, SOFFICE_BIN } from "../internal/sandbox/profile.ts";
import { RunscBackend } from "../internal/sandbox/runsc.ts";
import { benchDatabaseUrl, prepareAccount } from "./edge-auth.ts";
import type { BenchmarkReport } from "./run.ts";
import { addCredits, benchEdgeConfig, benchmarkEntry, median, positiveInt, TimingsSink, waitForPool } from "./support.ts";

const PAGES = 60;
/** Issue 14's goal: the long DOCX through /v1/convert in at most this share of the host pipeline's time. */
const TARGET_RATIO = 0.35;
const CONCURRENCY = 2;
const TIMEOUT_MS = 120_000;
const DOCX = CONVERSION_MIME_TYPES.DOCX[0]!;

const WORDS = (
  "the report covers quarterly figures for each region and explains where costs rose and why revenue held steady despite " +
  "lower volumes in several markets while new contracts were signed with suppliers abroad the committee reviewed budgets " +
  "staffing plans maintenance schedules and safety audits before approving the next phase of the project in detail"
).split(" ");

/** Deterministic prose: the same document on every run. */
function prose(seed: number, words: number): string {
  let x = seed;
  const out: string[] = [];
  for (let i = 0; i < words; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    out.push(WORDS[x % WORDS.length]!);
  }
  const text = out.join(" ");
  return `${text[0]!.toUpperCase()}${text.slice(1)}.`;
}

/** A flat ODT: `pages` sections, each starting on a new page. */
function longFodt(pages: number): string {
  const sections: string[] = [];
  for (let p = 1; p <= pages; p++) {
    const heading = `<text:p text:style-name="${p % 10 === 1 ? "HBlue" : "H"}">Section ${p}: findings and figures</text:p>`;
    const body = Array.from({ length: 5 }, (_, i) => `<text:p text:style-name="Body">${prose(p * 31 + i, 80)}</text:p>`).join("");
    sections.push(heading + body);
  }
  return `<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0"
 xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"
 office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.text">
<office:automatic-styles>
<style:page-layout style:name="PL"><style:page-layout-properties fo:page-width="21cm" fo:page-height="29.7cm" fo:margin="2cm"/></style:page-layout>
<style:style style:name="H" style:family="paragraph"><style:paragraph-properties fo:break-before="page" fo:margin-bottom="0.4cm"/><style:text-properties fo:font-size="18pt" fo:font-weight="bold"/></style:style>
<style:style style:name="HBlue" style:family="paragraph"><style:paragraph-properties fo:break-before="page" fo:margin-bottom="0.4cm"/><style:text-properties fo:font-size="18pt" fo:font-weight="bold" fo:color="#1f4e9a"/></style:style>
<style:style style:name="Body" style:family="paragraph"><style:paragraph-properties fo:margin-bottom="0.3cm" fo:text-align="justify"/><style:text-properties fo:font-size="11pt"/></style:style>
</office:automatic-styles>
<office:master-styles><style:master-page style:name="Standard" style:page-layout-name="PL"/></office:master-styles>
<office:body><office:text>${sections.join("\n")}</office:text></office:body>
</office:document>
`;
}

function exec(command: string, args: string[]): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: "ignore" });
    child.once("error", reject);
    child.once("close", resolve);
  });
}

const office = (profile: string, args: string[]) =>
  exec(SOFFICE_BIN, [`-env:UserInstallation=${fileUrl(profile)}`, "--headless", "--norestore", "--nologo", "--nodefault", "--nolockcheck", ...args]);

/** Makes the 60-page DOCX with the host's LibreOffice. */
export async function makeLongDocx(work: string, profile: string): Promise<Buffer> {
  const dir = await mkdtemp(join(work, "doc-"));
  await writeFile(join(dir, "long.fodt"), longFodt(PAGES));
  await office(profile, ["--convert-to", "docx:MS Word 2007 XML", "--outdir", dir, join(dir, "long.fodt")]);
  return readFile(join(dir, "long.docx"));
}

/** The host pipeline: LibreOffice to PDF, pdftoppm to PNG at 200 DPI, on the host. */
async function hostPipeline(work: string, profile: string, docx: Buffer): Promise<{ pages: number; pngBytes: number[]; timings: Record<string, number> }> {
  const dir = await mkdtemp(join(work, "host-"));
  try {
    await cp(profile, join(dir, "profile"), { recursive: true });
    await writeFile(join(dir, "long.docx"), docx);
    let t = performance.now();
    await office(join(dir, "profile"), ["--convert-to", "pdf", "--outdir", dir, join(dir, "long.docx")]);
    const timings: Record<string, number> = { soffice: performance.now() - t };
    t = performance.now();
    const code = await exec("pdftoppm", ["-r", "200", "-png", join(dir, "long.pdf"), join(dir, "page")]);
    timings.pdftoppm = performance.now() - t;
    if (code !== 0) throw new Error("pdftoppm failed on the host");
    const pngs = (await readdir(dir)).filter((n) => n.startsWith("page") && n.endsWith(".png"));
    const pngBytes = await Promise.all(pngs.map(async (n) => (await stat(join(dir, n))).size));
    return { pages: pngs.length, pngBytes, timings };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * A conversion service on a runsc backend, as `startConversion` builds it for
 * `folio dev` (default settings: sandboxes restored from a checkpoint, twice
 * the concurrency kept ready). With another sandbox `program`, pre-started
 * sandboxes instead: an older program may not know the restored hand-in.
 */
async function conversionStack(workDir: string, program?: string) {
  const sink = new TimingsSink();
  const pooled = program ? { prestartPool: CONCURRENCY, program } : { prestartPool: 2 * CONCURRENCY, restore: true };
  const backend = new RunscBackend({ workDir, prestart: true, logger: createLogger("debug", sink), ...pooled });
  await backend.prepare();
  const service = new ConversionService({
    backend,
    backendName: "runsc",
    limits: { timeoutMs: TIMEOUT_MS, maxDocumentBytes: 50 * 1024 * 1024, maxPages: 100, maxOutputBytes: 256 * 1024 * 1024, concurrency: CONCURRENCY, queueLimit: 32 },
    log: createLogger("silent"),
  });
  return { backend, service, sink };
}

type Variant = "api" | "host" | "program-before" | "program-after";

/** The Postgres and Redis the long document's /v1/convert runs against; throws, naming them, when they are not set. */
export function longBenchmarkStores(): { base: string; redisUrl: string } {
  const base = process.env.DATABASE_URL;
  const redisUrl = process.env.REDIS_URL;
  if (!base || !redisUrl) throw new Error("convert-long needs DATABASE_URL and REDIS_URL (run `make bench`)");
  return { base, redisUrl };
}

export async function runLongBenchmark(rounds = positiveInt("BENCH_LONG_ROUNDS", 3)): Promise<BenchmarkReport> {
  const { base, redisUrl } = longBenchmarkStores();
  const before = process.env.BENCH_SANDBOX_PROGRAM_BEFORE;
  const loadAtStart = os.loadavg()[0] ?? 0;
  const work = await mkdtemp(join(tmpdir(), "folio-bench-long-"));
  const closers: (() => Promise<unknown>)[] = [];
  let ok = true;
  try {
    const profile = join(work, "profile");
    // The host pipeline: LibreOffice's own behaviour (render tests at each headless start: profile.ts).
    await prepareProfile(profile, { skipRenderTests: false });
    const docx = await makeLongDocx(work, profile);

    const databaseUrl = await benchDatabaseUrl(base);
    const account = await prepareAccount(databaseUrl, redisUrl);
    await addCredits(databaseUrl, account.accountId, 10_000_000);
    const api = await conversionStack(join(work, "api"));
    closers.push(() => api.backend.close());
    const grpc = await startGrpcServer("127.0.0.1", 0, (server) => registerConversion(server, api.service));
    closers.push(() => grpc.close());
    const edge = await startEdge({ config: benchEdgeConfig(databaseUrl, redisUrl, { FOLIO_CONVERSION_ADDRESS: grpc.address }), log: createLogger("silent") });
    closers.push(() => edge.close());
    const programs = before ? { "program-before": await conversionStack(join(work, "before"), before), "program-after": await conversionStack(join(work, "after")) } : undefined;
    if (programs) closers.push(() => programs["program-before"].backend.close(), () => programs["program-after"].backend.close());
    const variants: Variant[] = ["api", "host", ...(programs ? (["program-before", "program-after"] as const) : [])];

    type Sample = { ms: number; pngBytes: number[]; timings?: Record<string, number> };
    const samples: Record<Variant, Sample[]> = { api: [], host: [], "program-before": [], "program-after": [] };
    const body = JSON.stringify({ file: docx.toString("base64"), filename: "long.docx", mimeType: DOCX });
    const once = async (v: Variant): Promise<Sample> => {
      if (v === "host") {
        const started = performance.now();
        const r = await hostPipeline(work, profile, docx);
        const ms = performance.now() - started;
        ok &&= r.pages === PAGES;
        return { ms, pngBytes: r.pngBytes, timings: r.timings };
      }
      const stack = v === "api" ? api : programs![v];
      // An unsaturated service: the pool's sandboxes are ready (their warm-up is not the document's).
      await waitForPool(stack.backend, CONCURRENCY, 120_000);
      stack.sink.last = undefined;
      const started = performance.now();
      let pngs: Buffer[];
      if (v === "api") {
        const res = await fetch(`${edge.url}/v1/convert`, { method: "POST", headers: { authorization: `Bearer ${account.key}`, "content-type": "application/json" }, body });
        const json = (await res.json()) as { result?: { page_count: number; images: { base64: string }[] }; error?: unknown };
        if (res.status !== 200 || !json.result) throw new Error(`/v1/convert answered ${res.status}: ${JSON.stringify(json).slice(0, 300)}`);
        pngs = json.result.images.map((i) => Buffer.from(i.base64, "base64"));
        ok &&= json.result.page_count === PAGES;
      } else {
        const r = await stack.service.convert({ document: docx, mimeType: DOCX });
        pngs = r.pages.map((p) => p.png);
      }
      const ms = performance.now() - started;
      ok &&= pngs.length === PAGES && pngs.every((p) => pngSize(p)?.width === 1654 && pngSize(p)?.height === 2339);
      // Set by the logger during the conversion (TypeScript cannot see that).
      const timings = stack.sink.last as Record<string, number> | undefined;
      return { ms, pngBytes: pngs.map((p) => p.length), ...(timings ? { timings } : {}) };
    };

    // One untimed warm-up of each (page cache, font cache, the pools).
    for (const v of variants) await once(v);
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? variants : [...variants].reverse();
      for (const v of order) samples[v].push(await once(v));
    }

    const ms = Object.fromEntries(variants.map((v) => [v, median(samples[v].map((s) => s.ms))])) as Record<Variant, number>;
    const ratio = ms.api / ms.host;
    const bytesPerPage = (v: Variant) => median(samples[v].flatMap((s) => s.pngBytes));
    const steps = (v: Variant) => {
      const keys = v === "host" ? ["soffice", "pdftoppm"] : ["soffice", "pageCount", "pdftoppm", "total", "greyPages"];
      return Object.fromEntries(keys.map((k) => [k, median(samples[v].filter((s) => s.timings).map((s) => s.timings?.[k] ?? 0))]));
    };
    const machine = { cpus: os.cpus().length, loadAverage1m: { start: loadAtStart, end: os.loadavg()[0] ?? 0 } };
    const f0 = (n: number) => n.toFixed(0);
    const lines = [
      `a ${PAGES}-page DOCX (${(docx.length / 1024).toFixed(0)} KiB, made at bench time), medians of ${rounds} interleaved rounds (ms):`,
      `  POST /v1/convert (runsc, restored): ${f0(ms.api)}  steps in the sandbox ${JSON.stringify(steps("api"))}`,
      `  host pipeline (LibreOffice + pdftoppm -png): ${f0(ms.host)}  steps ${JSON.stringify(steps("host"))}`,
      `  ratio /v1/convert ÷ host: ${ratio.toFixed(2)} (issue 14's goal ≤ ${TARGET_RATIO}: ${ratio <= TARGET_RATIO ? "met" : "missed"})`,
      `  PNG bytes per page, median: pdftoppm -png ${f0(bytesPerPage("host"))}, the sandbox program ${f0(bytesPerPage("api"))} (${((bytesPerPage("api") / bytesPerPage("host")) * 100).toFixed(0)}%)`,
      ...(programs
        ? [
            `  program before (${before}): ${f0(ms["program-before"])}  steps ${JSON.stringify(steps("program-before"))}, ${f0(bytesPerPage("program-before"))} B/page`,
            `  program after: ${f0(ms["program-after"])}  steps ${JSON.stringify(steps("program-after"))}, ${f0(bytesPerPage("program-after"))} B/page; after ÷ before ${(ms["program-after"] / ms["program-before"]).toFixed(2)}`,
          ]
        : []),
      `machine: ${machine.cpus} CPUs, load average (1 min) ${machine.loadAverage1m.start.toFixed(2)} before the start, ${machine.loadAverage1m.end.toFixed(2)} at the end (includes this benchmark)`,
    ];
    const json = {
      pages: PAGES,
      rounds,
      machine,
      medianMs: ms,
      ratio,
      target: TARGET_RATIO,
      bytesPerPage: Object.fromEntries(variants.map((v) => [v, bytesPerPage(v)])),
      steps: Object.fromEntries(variants.map((v) => [v, steps(v)])),
      samples: Object.fromEntries(variants.map((v) => [v, samples[v].map((s) => ({ ms: s.ms, timings: s.timings, pngBytesTotal: s.pngBytes.reduce((a, b) => a + b, 0) }))])),
    };
    return { text: lines.join("\n"), json, ok };
  } finally {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    await rm(work, { recursive: true, force: true });
  }
}

export default await benchmarkEntry(import.meta.url, {
  name: "convert-long",
  description: "a 60-page DOCX through POST /v1/convert (runsc) vs LibreOffice + pdftoppm -png on the host; PNG bytes per page",
  run: () => runLongBenchmark(),
});
