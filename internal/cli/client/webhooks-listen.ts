/**
 * `folio webhooks listen`: a small local receiver for trying Folio's
 * webhooks. It checks each delivery's Standard Webhooks signature with the
 * endpoint's secret and prints a line per event; it answers 204 to a
 * delivery that verified and 400 to one that did not, so a sender sees the
 * same outcome a real receiver would give it.
 *
 * Everything it prints that came from the request (ids, types, reasons) is
 * escaped to printable ASCII: a delivery cannot move the terminal's cursor
 * or change its colours.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Command } from "commander";
import { secretKey, verify, WebhookSecretError } from "../../webhooks/index.ts";
import { processIo, type Io } from "./commands.ts";
import { ClientError } from "./http.ts";

export const DEFAULT_PORT = 8787;
export const DEFAULT_HOST = "127.0.0.1";
/** Folio's webhook bodies carry the job without page content (DESIGN.md): a few KB. 1 MiB bounds memory with room to spare. */
const MAX_BODY_BYTES = 1024 * 1024;

export interface ListenOptions {
  port?: string;
  host?: string;
  /** The endpoint's `whsec_…` secret (default: FOLIO_WEBHOOK_SECRET). */
  secret?: string;
  /** Print each verified body as one JSON line on stdout instead of the event lines. */
  json?: boolean;
}

export interface ReceiverOptions {
  /** The endpoint's secret; checked before the server starts. */
  secret: string;
  host: string;
  /** 0: any free port (the URL says which). */
  port: number;
  json: boolean;
  /** Where event lines go (the command: stdout), one call per line, without the newline. */
  print: (line: string) => void;
  /** With `json`, where refused deliveries are reported instead, so `print` stays pure NDJSON (the command: stderr). */
  printNote: (line: string) => void;
  /** Milliseconds since the epoch: the time printed and the clock the timestamp is checked against. */
  now?: () => number;
}

export interface Receiver {
  /** `http://host:port/`; any path is accepted. */
  url: string;
  close(): Promise<void>;
}

/** Starts the receiver and resolves once it listens. */
export async function startReceiver(o: ReceiverOptions): Promise<Receiver> {
  secretKey(o.secret);
  const now = o.now ?? Date.now;
  const server = createServer((req, res) => {
    receive(req, res, o, now).catch((err: unknown) => {
      o.printNote(`${new Date(now()).toISOString()} ✗ could not read the request: ${printable((err as Error).message)}`);
      if (!res.headersSent) answer(res, 400, "could not read the request");
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port, o.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { address, port } = server.address() as AddressInfo;
  return {
    url: `http://${address.includes(":") ? `[${address}]` : address}:${port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // A sender's keep-alive connection would otherwise hold close() open.
        server.closeAllConnections();
      }),
  };
}

async function receive(req: IncomingMessage, res: ServerResponse, o: ReceiverOptions, now: () => number): Promise<void> {
  if (req.method !== "POST") {
    res.setHeader("allow", "POST");
    answer(res, 405, "webhooks are POSTed");
    return;
  }
  const at = new Date(now()).toISOString();
  const body = await readBody(req);
  const headers = {
    "webhook-id": headerValue(req, "webhook-id"),
    "webhook-timestamp": headerValue(req, "webhook-timestamp"),
    "webhook-signature": headerValue(req, "webhook-signature"),
  };
  if (body === undefined) {
    const reason = `body over ${MAX_BODY_BYTES} bytes, not read`;
    report(o, eventLine(at, { ok: false, reason }, headers["webhook-id"], undefined));
    answer(res, 413, reason);
    return;
  }
  const result = verify(o.secret, headers, body, undefined, now() / 1000);
  const event = parseJson(body);
  if (result.ok && o.json && event !== undefined) o.print(JSON.stringify(event));
  else if (result.ok && o.json) o.printNote(`${eventLine(at, result, headers["webhook-id"], event)} (body is not JSON, not printed)`);
  else report(o, eventLine(at, result, headers["webhook-id"], event));
  if (result.ok) answer(res, 204);
  else answer(res, 400, result.reason);
}

/** An event line: on stdout, except with --json, where stdout is kept for verified bodies. */
function report(o: ReceiverOptions, line: string): void {
  if (o.json) o.printNote(line);
  else o.print(line);
}

type Verdict = { ok: true } | { ok: false; reason: string };

/**
 * `<time> ✓ <webhook-id> <type> seq=<sequence> job=<data.id>`, and for a
 * refused delivery `✗` and `(<reason>)` at the end; a value that is not
 * there is `-`. The fields of a refused delivery are what it claimed.
 */
function eventLine(at: string, result: Verdict, msgId: string | undefined, event: unknown): string {
  const e = (typeof event === "object" && event !== null ? event : {}) as { type?: unknown; sequence?: unknown; data?: { id?: unknown } };
  const jobId = typeof e.data === "object" && e.data !== null ? e.data.id : undefined;
  const fields = `${shown(msgId)} ${shown(e.type)} seq=${shown(e.sequence)} job=${shown(jobId)}`;
  return result.ok ? `${at} ✓ ${fields}` : `${at} ✗ ${fields} (${printable(result.reason)})`;
}

/** A value from the request as one printable word: as it is when it is short printable ASCII, else quoted and escaped. */
function shown(value: unknown): string {
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  if (typeof value !== "string" || value === "") return "-";
  const cut = value.length > 100 ? `${value.slice(0, 100)}...` : value;
  return /^[\x21-\x7e]+$/.test(cut) ? cut : `"${printable(cut.replace(/["\\]/g, (c) => `\\${c}`))}"`;
}

/** Every character outside printable ASCII as `\uXXXX`: control sequences, bidirectional overrides and look-alikes included. */
function printable(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

function headerValue(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return typeof v === "string" ? v : undefined;
}

/**
 * The body as sent, or undefined when it is over the cap. The rest of an
 * oversized body is read and dropped rather than the connection cut, so the
 * sender still gets its answer.
 */
async function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size <= MAX_BODY_BYTES) chunks.push(chunk);
  }
  return size > MAX_BODY_BYTES ? undefined : Buffer.concat(chunks);
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString("utf8")) as unknown;
  } catch {
    return undefined;
  }
}

function answer(res: ServerResponse, status: number, reason?: string): void {
  if (reason === undefined) {
    res.writeHead(status).end();
    return;
  }
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", connection: "close" }).end(`${reason}\n`);
}

function parsePort(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_PORT;
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port > 65535) throw new ClientError(`--port is a port number from 0 to 65535 (0: any free port), not '${raw}'`);
  return port;
}

/**
 * Runs the receiver until Ctrl-C. Only failures to start are errors
 * (ClientError); a delivery that does not verify is a line, not a failure.
 */
export async function runWebhooksListen(o: ListenOptions, io: Io = processIo()): Promise<void> {
  const secret = (o.secret ?? io.env.FOLIO_WEBHOOK_SECRET ?? "").trim();
  if (!secret) throw new ClientError("no webhook secret: set FOLIO_WEBHOOK_SECRET (or pass --secret) to the whsec_… secret shown when the endpoint was created");
  try {
    secretKey(secret);
  } catch (err) {
    if (err instanceof WebhookSecretError) throw new ClientError(`the webhook secret is not usable: ${err.message}`);
    throw err;
  }
  const port = parsePort(o.port);
  const host = o.host ?? DEFAULT_HOST;
  let receiver: Receiver;
  try {
    receiver = await startReceiver({
      secret,
      host,
      port,
      json: o.json === true,
      print: (line) => io.stdout.write(`${line}\n`),
      printNote: (line) => io.stderr.write(`${line}\n`),
    });
  } catch (err) {
    const code = (err as { code?: string }).code;
    const hint = code === "EADDRINUSE" ? " (another program uses it: choose another with --port)" : "";
    throw new ClientError(`cannot listen on ${host}:${port}: ${code ?? (err as Error).message}${hint}`);
  }
  io.stderr.write(`folio: listening for webhooks on ${receiver.url} (any path); Ctrl-C stops\n`);
  await new Promise<void>((resolve) => {
    const off = io.onInterrupt?.(() => {
      off?.();
      resolve();
    });
  });
  await receiver.close();
}

const OUTPUT_HELP = `
Output, one line per delivery (POST, any path):
  <time> ✓ <webhook-id> <type> seq=<sequence> job=<data.id>
  <time> ✗ <webhook-id> <type> seq=<sequence> job=<data.id> (<reason>)
<time> is when it arrived (ISO 8601, UTC); a field that is not there is "-";
the fields of a ✗ line are what the refused delivery claimed. Text from the
request is escaped to printable ASCII. Answers: 204 when the signature
verified, 400 (the reason as text) when not, 413 for a body over 1 MiB.
With --json, stdout carries each verified body as one JSON line and the
✗ lines go to stderr.

Example:
  FOLIO_WEBHOOK_SECRET=whsec_… folio webhooks listen --port 8787
`;

export function registerWebhooksCommands(program: Command): void {
  const webhooks = program.command("webhooks").description("Tools for Folio's webhooks (Standard Webhooks signatures)");
  webhooks
    .command("listen")
    .description("A local receiver for trying webhooks: verifies each delivery's signature and prints a line per event")
    .option("--port <n>", `port to listen on (0: any free port)`, String(DEFAULT_PORT))
    .option("--host <address>", "address to listen on", DEFAULT_HOST)
    .option("--secret <whsec>", "the endpoint's secret (default: FOLIO_WEBHOOK_SECRET; prefer the variable, arguments are visible to other users of the machine)")
    .option("--json", "print each verified body as one JSON line on stdout (refused deliveries on stderr)")
    .addHelpText("after", OUTPUT_HELP)
    .action(async (o: ListenOptions) => runWebhooksListen(o));
}
