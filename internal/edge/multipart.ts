/**
 * multipart/form-data for the one route that takes uploads
 * (`/v1/playground/process`): registered in that route's scope only, so every
 * other route keeps the JSON-only parser (a non-JSON body elsewhere stays
 * 415). The form is parsed before validation, so the same schema machinery
 * (and the same 400s) applies to it.
 */
import { createHash } from "node:crypto";
import { once } from "node:events";
import { createWriteStream } from "node:fs";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import multipart, { type MultipartFile } from "@fastify/multipart";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { FolioError } from "../platform/errors/index.ts";

/** The uploaded file's own name and type, kept beside the body (the body holds the bytes only). */
export interface Upload {
  filename: string;
  mimetype: string;
}

const uploads = new WeakMap<FastifyRequest, Upload>();

/** The file part of a request parsed by {@link readMultipart}, if it had one. */
export function uploadOf(req: FastifyRequest): Upload | undefined {
  return uploads.get(req);
}

/** How long the rest of a refused upload may take to read and drop. */
const DRAIN_TIMEOUT_MS = 30_000;

/** Registers the multipart parser in `scope`, with one file of at most `fileLimit` bytes (field `file`) and short text fields. */
export async function registerMultipart(scope: FastifyInstance, o: { fileLimit: number; bodyLimit: number }): Promise<void> {
  await scope.register(multipart, {
    limits: { fileSize: o.fileLimit, files: 1, fields: 20, fieldSize: 16 * 1024, parts: 21, headerPairs: 100 },
  });
  // A refusal before the body is read (rate limit, permission) closes the
  // connection mid-upload, and HTTP clients then report a broken pipe instead
  // of the answer. For a caller whose key is valid, the rest of an upload of
  // allowed size is read and dropped first, so "429, retry in 17 s" arrives
  // as such. Anonymous and oversized requests are still cut off.
  const drainLimit = Math.max(o.bodyLimit, o.fileLimit + 1024 * 1024);
  scope.addHook("onError", async (req) => {
    if (!req.raw.complete && req.principal) await discardBody(req.raw, drainLimit, DRAIN_TIMEOUT_MS);
  });
}

/** Reads and drops the rest of a request body, unless it is over `limit` bytes or takes over `timeoutMs`. */
async function discardBody(raw: FastifyRequest["raw"], limit: number, timeoutMs: number): Promise<void> {
  const declared = Number(raw.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) return;
  await new Promise<void>((resolve) => {
    let seen = 0;
    const done = () => {
      clearTimeout(timer);
      raw.off("data", onData).off("end", done).off("error", done).off("close", done);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > limit) {
        raw.pause();
        done();
      }
    };
    const timer = setTimeout(() => {
      raw.pause();
      done();
    }, timeoutMs);
    raw.on("data", onData).once("end", done).once("error", done).once("close", done);
    raw.resume();
  });
}

/**
 * Reads the form's parts in order: text fields into the body (each once),
 * the one file part (field `file`) through `takeFile`, which puts what the
 * body should hold for it; anything else is a 400 naming the field.
 */
async function readForm(req: FastifyRequest, fileLimit: number, takeFile: (part: MultipartFile, body: Record<string, unknown>) => Promise<void>): Promise<Record<string, unknown>> {
  const body: Record<string, unknown> = {};
  try {
    for await (const part of req.parts()) {
      if (part.type === "file") {
        if (part.fieldname !== "file") {
          // Read and dropped, not buffered: a job's form allows a 500 MB file.
          part.file.resume();
          await once(part.file, "end").catch(() => undefined);
          throw new FolioError("invalid_request", `unknown field '${part.fieldname}'; send the document in the field 'file'`, { param: part.fieldname });
        }
        await takeFile(part, body);
      } else {
        if (body[part.fieldname] !== undefined) throw new FolioError("invalid_request", `field '${part.fieldname}' is given more than once`, { param: part.fieldname });
        body[part.fieldname] = String(part.value);
      }
    }
  } catch (err) {
    throw multipartError(err, fileLimit);
  }
  return body;
}

/** Reads the form: at most one file (field `file`) and short text fields, within the limits. */
export function readMultipart(req: FastifyRequest, fileLimit: number): Promise<Record<string, unknown>> {
  return readForm(req, fileLimit, async (part, body) => {
    body.file = await part.toBuffer();
    uploads.set(req, { filename: part.filename, mimetype: part.mimetype });
  });
}

/** An upload streamed to a file (a durable job's document): its path, size and hash, never its bytes in memory. */
export interface StoredUpload extends Upload {
  path: string;
  bytes: number;
  sha256: string;
}

const stored = new WeakMap<FastifyRequest, StoredUpload>();

/** The file part of a request parsed by {@link readMultipartToFile}, if it had one. */
export function storedUploadOf(req: FastifyRequest): StoredUpload | undefined {
  return stored.get(req);
}

/**
 * Reads the form like {@link readMultipart}, but streams the file part to
 * `path` as it arrives (hashing it on the way): a 500 MB upload costs disk,
 * not memory. The body gets `file: { bytes, sha256 }` in its place, so the
 * schema and the Idempotency-Key's fingerprint see the file by its hash.
 */
export function readMultipartToFile(req: FastifyRequest, fileLimit: number, path: string): Promise<Record<string, unknown>> {
  return readForm(req, fileLimit, async (part, body) => {
    const hash = createHash("sha256");
    let bytes = 0;
    await pipeline(
      part.file,
      new Transform({
        transform(chunk: Buffer, _enc, done) {
          hash.update(chunk);
          bytes += chunk.length;
          done(null, chunk);
        },
      }),
      createWriteStream(path, { mode: 0o600 }),
    );
    // The plugin truncates a file over the limit and marks it so, rather than failing the stream.
    if (part.file.truncated) throw Object.assign(new Error("file too large"), { code: "FST_REQ_FILE_TOO_LARGE" });
    const upload: StoredUpload = { filename: part.filename, mimetype: part.mimetype, path, bytes, sha256: hash.digest("hex") };
    stored.set(req, upload);
    body.file = { bytes, sha256: upload.sha256 };
  });
}

/** The multipart plugin's own errors, as domain errors with the one error shape. */
function multipartError(err: unknown, fileLimit: number): unknown {
  if (err instanceof FolioError) return err;
  const code = (err as { code?: string }).code;
  switch (code) {
    case "FST_REQ_FILE_TOO_LARGE":
      return new FolioError("payload_too_large", `the file is larger than ${fileLimit} bytes`, { param: "file", extra: { max_bytes: fileLimit } });
    case "FST_FILES_LIMIT_REACHED":
      return new FolioError("invalid_request", "send one file per request", { param: "file" });
    case "FST_FIELDS_LIMIT_REACHED":
    case "FST_PARTS_LIMIT_REACHED":
      return new FolioError("invalid_request", "the form has too many fields");
    case "FST_PROTO_VIOLATION":
      return new FolioError("invalid_request", "form field names must not be reserved words");
  }
  const message = (err as { message?: string }).message ?? "";
  if (/field value too large|fieldSize/i.test(message)) return new FolioError("invalid_request", "a form field is too long (16 KiB at most)");
  return new FolioError("invalid_request", `the multipart body could not be read: ${message || "malformed"}`);
}
