/**
 * `folio ocr` and `folio convert`: read or convert a document through a
 * running Folio (POST /v1/playground/process for its progress events and
 * page images, POST /v1/convert), over the HTTP client in `http.ts`.
 * `folio ocr --async` and `--job` go through a durable job instead (`jobs.ts`).
 */
import { mkdir, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import type { Writable } from "node:stream";
import cliProgress from "cli-progress";
import { formatCents } from "../../billing/format.ts";
import { CONVERSION_FORMATS, CONVERSION_MIME_TYPES, FORMAT_EXTENSIONS, conversionFormatForFilename } from "../../formats/index.ts";
import { ClientError, apiFailure, connect, failure, ndjson, send, type ApiErrorBody, type ConnectionOptions } from "./http.ts";
import { readInput } from "./input.ts";
import { runFollowJob, runOcrJob } from "./jobs.ts";

export const OUTPUT_FORMATS = ["text", "json", "markdown"] as const;

export interface OcrOptions extends ConnectionOptions {
  model?: string;
  strategy?: string;
  tables?: boolean;
  language?: string;
  /** Only these pages ("1-20,25"); the server checks them. */
  pages?: string;
  format?: (typeof OUTPUT_FORMATS)[number];
  out?: string;
  /** Show the progress bar: default when stderr is a terminal (with async and job: a line per event elsewhere). */
  progress?: boolean;
  /** Read it as a durable job (POST /v1/ocr/jobs), followed until it ends. */
  async?: boolean;
  /** Follow this existing job instead of reading a document, and write its result. */
  job?: string;
  /** Ctrl-C while following a job cancels it (default: the job goes on). */
  cancelOnInterrupt?: boolean;
  /** `key=value` pairs kept with the job. */
  metadata?: string[];
}

export interface ConvertOptions extends ConnectionOptions {
  out: string;
  mimeType?: string;
  /** Only these pages ("1-20,25"); the server checks them. */
  pages?: string;
}

/** Where the command writes, and the environment it reads (tests pass their own). */
export interface Io {
  stdout: Writable;
  stderr: Writable & { isTTY?: boolean };
  env: Record<string, string | undefined>;
  /** Calls `handler` on Ctrl-C until the returned function is called (the process: SIGINT). */
  onInterrupt?: (handler: () => void) => () => void;
}

/** The real process's streams, environment and Ctrl-C. */
export const processIo = (): Io => ({
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  onInterrupt: (handler) => {
    process.on("SIGINT", handler);
    return () => process.off("SIGINT", handler);
  },
});

/** The parts of a playground result the terminal uses (docs/playground.md has the whole shape). */
interface Result {
  id: string;
  model: string;
  result: { text: string; pages: { page_number: number; image: { url: string; mime_type: string } | null }[] };
  usage: { pages_processed: number };
  timings: { total_ms: number };
  cost: { formatted: string; components: { component: string; total_cost_cents: number }[] };
}

type StreamEvent =
  | { event: "started"; model: string; document: { format: string } }
  | { event: "converting"; format: string }
  | { event: "rasterizing" }
  | { event: "extracting"; page_count: number }
  | { event: "page"; completed: number; of: number }
  | { event: "result"; result: Result }
  | { event: "error"; status: number; error: ApiErrorBody };

/**
 * `folio ocr FILE|URL`: the text (or the JSON result) on stdout, the cost on
 * stderr, page images into --out. With `--async` (or `--job ID`) through a
 * durable job. Answers the exit status: 0, or 130 after Ctrl-C left a job
 * running; failures throw a ClientError.
 */
export async function runOcr(target: string | undefined, o: OcrOptions, io: Io = processIo()): Promise<number> {
  checkOcrFlags(target, o);
  const format = o.format ?? "text";
  const conn = connect(o, io.env);
  if (o.job !== undefined) return runFollowJob(conn, o.job, o, io);
  if (target === undefined) throw new ClientError("give a file or URL to read (or --job ID to follow a job)");
  if (o.async) return runOcrJob(conn, target, o, io);
  const fields: Record<string, string> = {
    ...(o.model ? { model: o.model } : {}),
    ...(o.strategy ? { strategy: o.strategy } : {}),
    ...(o.tables ? { extract_tables: "true" } : {}),
    ...(o.language ? { language: o.language } : {}),
    ...(o.pages !== undefined ? { pages: o.pages } : {}),
    output_format: format,
    // Page images are only downloaded when they are saved.
    include_images: o.out ? "true" : "false",
  };
  const form = new FormData();
  if (/^https?:\/\//i.test(target)) {
    form.append("url", target);
  } else {
    const bytes = await readInput(target);
    form.append("file", new Blob([new Uint8Array(bytes)]), basename(target));
  }
  for (const [k, v] of Object.entries(fields)) form.append(k, v);

  const res = await send(conn, "/v1/playground/process", { method: "POST", headers: { ...conn.headers, accept: "application/x-ndjson" }, body: form });
  if (res.status !== 200) throw await apiFailure(res);
  const progress = new Progress(io.stderr, o.progress ?? io.stderr.isTTY === true);
  let result: Result | undefined;
  try {
    for await (const ev of ndjson<StreamEvent>(res)) {
      if (ev.event === "result") result = ev.result;
      else if (ev.event === "error") throw failure(ev.status, ev.error);
      else progress.on(ev);
    }
  } finally {
    progress.stop();
  }
  if (!result) throw new ClientError("the server's answer ended without a result");

  if (o.out) {
    const written = await savePages(o.out, result.result.pages.map((p) => ({ page: p.page_number, image: p.image })));
    io.stderr.write(`wrote ${written.length} page image${written.length === 1 ? "" : "s"} to ${o.out}\n`);
  }
  if (format === "json") io.stdout.write(`${JSON.stringify(withoutImages(result), null, 2)}\n`);
  else io.stdout.write(result.result.text.endsWith("\n") ? result.result.text : `${result.result.text}\n`);
  io.stderr.write(`${costLine(result)}\n`);
  return 0;
}

/** Flags that cannot go together, refused before anything is sent. */
function checkOcrFlags(target: string | undefined, o: OcrOptions): void {
  if (o.model && o.strategy) throw new ClientError("give --model or --strategy, not both");
  if (o.job !== undefined) {
    if (target !== undefined) throw new ClientError("give a file or URL to read, or --job ID to follow a job, not both");
    const fixed = (
      [
        ["--model", o.model],
        ["--strategy", o.strategy],
        ["--tables", o.tables],
        ["--language", o.language],
        ["--pages", o.pages],
        ["--metadata", o.metadata?.length ? o.metadata : undefined],
      ] as const
    ).filter(([, v]) => v !== undefined && v !== false);
    if (fixed.length > 0) throw new ClientError(`--job follows a job as it was submitted: ${fixed.map(([f]) => f).join(", ")} cannot change it`);
  }
  const durable = o.async || o.job !== undefined;
  if (durable && o.out) throw new ClientError("a job keeps no page images: --out needs the synchronous command (without --async or --job)");
  if (!durable && o.metadata?.length) throw new ClientError("--metadata is kept with a job: add --async");
  if (!durable && o.cancelOnInterrupt) throw new ClientError("--cancel-on-interrupt is for --async and --job (Ctrl-C on a synchronous read stops it anyway)");
}

/** `folio convert FILE --out DIR`: PNG pages into DIR, their paths on stdout, the cost on stderr. */
export async function runConvert(file: string, o: ConvertOptions, io: Io = processIo()): Promise<void> {
  const conn = connect(o, io.env);
  const format = conversionFormatForFilename(file);
  const mimeType = o.mimeType ?? (format ? CONVERSION_MIME_TYPES[format][0] : undefined);
  if (!mimeType) {
    const extensions = CONVERSION_FORMATS.map((f) => `.${FORMAT_EXTENSIONS[f]}`).join(", ");
    throw new ClientError(`cannot tell the format of '${basename(file)}' from its extension: use one of ${extensions} or pass --mime-type`);
  }
  const bytes = await readInput(file);
  const res = await send(conn, "/v1/convert", {
    method: "POST",
    headers: { ...conn.headers, "content-type": "application/json" },
    body: JSON.stringify({ file: bytes.toString("base64"), filename: basename(file), mimeType, ...(o.pages !== undefined ? { pages: o.pages } : {}) }),
  });
  if (res.status !== 200) throw await apiFailure(res);
  const r = (await res.json()) as {
    id: string;
    result: { page_count: number; images: { page_number: number; base64: string; mime_type: string }[] };
    usage: { compute_time_ms: number; total_cost_cents: number };
  };
  const written = await savePages(
    o.out,
    r.result.images.map((i) => ({ page: i.page_number, image: { url: `data:${i.mime_type};base64,${i.base64}`, mime_type: i.mime_type } })),
  );
  for (const path of written) io.stdout.write(`${path}\n`);
  io.stderr.write(`cost: ${formatCents(r.usage.total_cost_cents)} · ${r.result.page_count} page${r.result.page_count === 1 ? "" : "s"} · ${(r.usage.compute_time_ms / 1000).toFixed(1)} s compute · ${r.id}\n`);
}


/** What the server reports while it works: a line per stage, a bar over the pages when there are several. */
class Progress {
  private bar: cliProgress.SingleBar | null = null;
  constructor(
    private readonly out: Writable & { isTTY?: boolean },
    private readonly enabled: boolean,
  ) {}

  on(ev: Exclude<StreamEvent, { event: "result" } | { event: "error" }>): void {
    if (!this.enabled) return;
    switch (ev.event) {
      case "converting":
        this.out.write(`converting ${ev.format} to page images…\n`);
        break;
      case "rasterizing":
        this.out.write("rendering PDF pages…\n");
        break;
      case "extracting":
        if (ev.page_count > 1) {
          this.bar = new cliProgress.SingleBar(
            { stream: this.out, format: "extracting |{bar}| {value}/{total} pages", noTTYOutput: this.out.isTTY !== true, notTTYSchedule: 1000, hideCursor: true },
            cliProgress.Presets.shades_classic,
          );
          this.bar.start(ev.page_count, 0);
        }
        break;
      case "page":
        this.bar?.update(ev.completed);
        break;
    }
  }

  stop(): void {
    this.bar?.stop();
    this.bar = null;
  }
}

async function savePages(dir: string, pages: { page: number; image: { url: string; mime_type: string } | null }[]): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const written: string[] = [];
  for (const p of pages) {
    if (!p.image) continue;
    const m = /^data:([^;,]+);base64,(.*)$/s.exec(p.image.url);
    if (!m) continue;
    const ext = { "image/png": "png", "image/jpeg": "jpg", "image/webp": "webp", "image/gif": "gif", "image/bmp": "bmp" }[m[1]!] ?? "img";
    const path = join(dir, `page-${String(p.page).padStart(3, "0")}.${ext}`);
    await writeFile(path, Buffer.from(m[2]!, "base64"));
    written.push(path);
  }
  return written;
}

function withoutImages(r: Result): unknown {
  return { ...r, result: { ...r.result, pages: r.result.pages.map((p) => ({ ...p, image: p.image ? { mime_type: p.image.mime_type } : null })) } };
}

function costLine(r: Result): string {
  const parts = r.cost.components.map((c) => `${c.component} ${formatCents(c.total_cost_cents)}`);
  const pages = r.usage.pages_processed;
  return `cost: ${r.cost.formatted}${parts.length > 1 ? ` (${parts.join(" + ")})` : ""} · ${pages} page${pages === 1 ? "" : "s"} · ${r.model} · ${(r.timings.total_ms / 1000).toFixed(1)} s · ${r.id}`;
}
