/** The jobs benchmark's client of Folio's job API: submit, poll, follow the events, list the pages. */
import { openAsBlob } from "node:fs";
import { basename } from "node:path";
import { Agent, FormData, fetch } from "undici";
import { now, sleep } from "./common.ts";

const FIRST_PAGE_POLL_MS = 100;
export const JOB_POLL_MS = 100;
const FINAL = new Set(["ocr.job.succeeded", "ocr.job.failed", "ocr.job.cancelled"]);

/** No client-side time limit: a 450 MB upload is answered only once it is stored, and an event stream lasts the job. */
export const agent = new Agent({ headersTimeout: 0, bodyTimeout: 0 });

export interface Api {
  url: string;
  key: string;
}

export interface JobView {
  id: string;
  status: string;
  page_count: number | null;
  pages_completed: number;
  pages_failed: number;
  error?: { code: string; message: string };
  usage?: { total_cost_cents: number; processing_time_ms: number };
}

export async function call<T>(api: Api, method: string, path: string, body?: FormData): Promise<{ status: number; body: T }> {
  const res = await fetch(api.url + path, { method, headers: { authorization: `Bearer ${api.key}` }, ...(body ? { body } : {}), dispatcher: agent });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

/** POST /v1/ocr/jobs as multipart; the clock starts as the request does (the file is opened before). */
export async function submit(api: Api, file: string, mimeType: string): Promise<{ job: JobView; startedAt: number; acceptedAt: number }> {
  const form = new FormData();
  form.append("model", "local/tesseract");
  form.append("language", "en");
  form.append("file", await openAsBlob(file, { type: mimeType }), basename(file));
  const startedAt = now();
  const r = await call<JobView>(api, "POST", "/v1/ocr/jobs", form);
  if (r.status !== 202) throw new Error(`POST /v1/ocr/jobs answered ${r.status}: ${JSON.stringify(r.body)}`);
  return { job: r.body, startedAt, acceptedAt: now() };
}

export async function getJob(api: Api, id: string): Promise<JobView> {
  const r = await call<JobView>(api, "GET", `/v1/ocr/jobs/${id}`);
  if (r.status !== 200) throw new Error(`GET /v1/ocr/jobs/${id} answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body;
}

/** Polls the job every JOB_POLL_MS until it has ended; the job and when that was seen. */
export async function untilEnded(api: Api, id: string): Promise<{ job: JobView; at: number }> {
  for (;;) {
    const job = await getJob(api, id);
    if (job.status !== "queued" && job.status !== "running") return { job, at: now() };
    await sleep(JOB_POLL_MS);
  }
}

export interface SeenEvent {
  at: number;
  sequence: number;
  type: string;
  job: JobView;
}

/** Follows GET …/events to the final event (reconnecting with Last-Event-ID when the stream breaks); calls `onEvent` for each. */
export async function followEvents(api: Api, id: string, onEvent: (e: SeenEvent) => void): Promise<SeenEvent> {
  let last: number | undefined;
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await fetch(`${api.url}/v1/ocr/jobs/${id}/events`, {
        headers: { authorization: `Bearer ${api.key}`, accept: "text/event-stream", ...(last !== undefined ? { "last-event-id": String(last) } : {}) },
        dispatcher: agent,
      });
      if (res.status !== 200 || !res.body) throw new Error(`GET …/events answered ${res.status}: ${await res.text()}`);
      const decoder = new TextDecoder();
      let buffer = "";
      for await (const chunk of res.body) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true });
        for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = block
            .split("\n")
            .filter((l) => l.startsWith("data:"))
            .map((l) => l.slice(5).trimStart())
            .join("\n");
          if (!data) continue; // a keep-alive comment
          const e = JSON.parse(data) as { sequence: number; type: string; data: JobView };
          const seen = { at: now(), sequence: e.sequence, type: e.type, job: e.data };
          last = e.sequence;
          onEvent(seen);
          if (FINAL.has(e.type)) return seen;
        }
      }
      throw new Error("the event stream ended before the job's final event");
    } catch (err) {
      if (attempt >= 5) throw err;
      await sleep(1_000);
    }
  }
}

/** Polls GET …/pages?limit=1 every FIRST_PAGE_POLL_MS until a page is listed (undefined: the job ended with none). */
export async function firstPageReadable(api: Api, id: string, ended: () => boolean): Promise<number | undefined> {
  for (;;) {
    const r = await call<{ data: unknown[] }>(api, "GET", `/v1/ocr/jobs/${id}/pages?limit=1`);
    if (r.status !== 200) throw new Error(`GET …/pages answered ${r.status}: ${JSON.stringify(r.body)}`);
    if (r.body.data.length > 0) return now();
    if (ended()) return undefined;
    await sleep(FIRST_PAGE_POLL_MS);
  }
}

/** What GET …/pages lists, all of it: each page number once, in order, 1..pages, and how many failed or read nothing. */
export async function checkPages(api: Api, id: string, pages: number): Promise<{ listed: number; inOrderOnce: boolean; failed: number; empty: number }> {
  const numbers: number[] = [];
  let failed = 0;
  let empty = 0;
  let after = 0;
  for (;;) {
    const r = await call<{ data: { page_number: number; text: string; error?: unknown }[]; has_more: boolean }>(api, "GET", `/v1/ocr/jobs/${id}/pages?starting_after=${after}&limit=200`);
    if (r.status !== 200) throw new Error(`GET …/pages answered ${r.status}: ${JSON.stringify(r.body)}`);
    for (const p of r.body.data) {
      numbers.push(p.page_number);
      if (p.error) failed++;
      else if (!p.text.trim()) empty++;
    }
    if (!r.body.has_more || r.body.data.length === 0) break;
    after = r.body.data.at(-1)!.page_number;
  }
  return { listed: numbers.length, inOrderOnce: numbers.length === pages && numbers.every((n, i) => n === i + 1), failed, empty };
}
