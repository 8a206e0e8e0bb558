/**
 * POST /v1/ocr/jobs: a document of any length read in the background by the
 * jobs workers (docs/jobs.md). JSON (/v1/ocr's body plus `metadata`), or
 * multipart/form-data with the document streamed to disk as the `file` part.
 * Answers 202 with the job and its Location.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Type, type Static } from "typebox";
import { PRICE_TEXT } from "../../billing/index.ts";
import { FolioError } from "../../platform/errors/index.ts";
import { idempotent } from "../idempotency.ts";
import { submitJob, type JobDocumentSource } from "../jobs-intake.ts";
import { readMultipartToFile, registerMultipart, storedUploadOf } from "../multipart.ts";
import { ocrOptions, strategyOf, urlOrBase64 } from "../pipeline.ts";
import { OcrOptions, OcrRouteOptions, PagesField, ReadingFields, StringEnum, paid } from "../schemas.ts";
import { extractionOf } from "../services.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { OcrJob } from "./jobs.shared.ts";
import { OcrBody } from "./ocr.ts";

export const JOBS_PATH = "/v1/ocr/jobs";

const Metadata = Type.Record(Type.String({ minLength: 1, maxLength: 40, pattern: "^[^\\u0000]*$" }), Type.String({ maxLength: 500, pattern: "^[^\\u0000]*$" }), {
  maxProperties: 16,
  description: "Up to 16 string pairs (keys up to 40 characters, values up to 500), kept with the job and echoed back.",
});

/** /v1/ocr's body and the job's metadata. */
const JsonBody = Type.Object({ ...OcrBody.properties, metadata: Type.Optional(Metadata) }, { additionalProperties: false, description: "Exactly one of url or base64." });

const Flag = StringEnum(["true", "false"]);
/** Form fields are strings: the options flat, `metadata` as a JSON object. */
const MultipartBody = Type.Object(
  {
    file: Type.Unsafe<{ bytes: number; sha256: string }>({ format: "binary", description: "The document, as a file part, streamed to disk as it arrives." }),
    ...ReadingFields,
    pages: Type.Optional(PagesField),
    extract_tables: Type.Optional(Flag),
    language: OcrOptions.properties.language,
    output_format: OcrOptions.properties.output_format,
    include_layout: Type.Optional(StringEnum(["true", "false", "blocks", "words"])),
    searchable_pdf: Type.Optional(Flag),
    metadata: Type.Optional(Type.String({ maxLength: 16 * 1024, description: "The metadata object as JSON text." })),
  },
  { additionalProperties: false },
);

/** The temporary folder an upload was streamed to, removed once the answer is out. */
const uploadDirs = new WeakMap<object, string>();

export default function register(app: App, deps: EdgeDeps): void {
  void app.register(async (scope) => {
    await registerMultipart(scope, { fileLimit: deps.jobs.maxBytes, bodyLimit: deps.bodyLimitBytes });
    scope.addHook("onResponse", async (req) => {
      const dir = uploadDirs.get(req);
      if (dir) await rm(dir, { recursive: true, force: true });
    });
    scope.post(
      JOBS_PATH,
      {
        ...paid(
          ["ocr:write"],
          {
            summary: "Start a durable OCR job: a document of any length, read in the background",
            description:
              `Up to FOLIO_JOB_MAX_PAGES pages (default 5,000). JSON takes /v1/ocr's body plus metadata; multipart/form-data takes the document as the \`file\` part, streamed ` +
              `(a PDF up to FOLIO_JOB_MAX_BYTES, default 500 MB). Answers 202 with the job; poll it, read its pages as they come, or follow its events. ` +
              `A hold for the whole job is taken now; pages are charged as they are stored (${PRICE_TEXT.rule}). See docs/jobs.md.`,
            tags: ["OCR jobs"],
            body: { content: { "application/json": { schema: JsonBody }, "multipart/form-data": { schema: MultipartBody } } } as never,
            response: { 202: OcrJob },
          },
          [402, 413, 500, 502, 503],
        ),
        preValidation: async (req) => {
          if (!req.isMultipart()) return;
          const dir = await mkdtemp(join(tmpdir(), "folio-upload-"));
          uploadDirs.set(req, dir);
          req.body = await readMultipartToFile(req, deps.jobs.maxBytes, join(dir, "document"));
        },
      },
      async (req, reply) => {
        const multipart = req.isMultipart();
        const input = multipart ? fromMultipart(req.body as Static<typeof MultipartBody>, req) : fromJson(req.body as Static<typeof JsonBody>);
        const { strategy, param } = strategyOf(input.strategy);
        const model = await extractionOf(deps).resolveModel({ model: input.model, strategy, strategyParam: param });
        const job = await submitJob(deps, {
          payer: principalOf(req),
          model,
          document: input.document,
          ...(input.mimeType !== undefined ? { mimeType: input.mimeType } : {}),
          ...(input.pages !== undefined ? { pages: input.pages } : {}),
          options: ocrOptions(input.options),
          rawOptions: input.options ?? {},
          metadata: input.metadata,
          ...idempotent(deps, req, reply),
        });
        return reply.status(202).header("location", `${JOBS_PATH}/${String(job.id)}`).send(job);
      },
    );
  });
}

type Options = Static<typeof OcrRouteOptions>;

interface JobInput {
  document: JobDocumentSource;
  mimeType?: string;
  model?: string;
  strategy: { strategy?: string; provider_preferences?: { strategy?: string } };
  pages?: string;
  options?: Options;
  metadata: Record<string, string>;
}

function fromJson(b: Static<typeof JsonBody>): JobInput {
  return {
    document: urlOrBase64(b),
    ...(b.mime_type !== undefined ? { mimeType: b.mime_type } : {}),
    ...(b.model !== undefined ? { model: b.model } : {}),
    strategy: { ...(b.strategy !== undefined ? { strategy: b.strategy } : {}), ...(b.provider_preferences ? { provider_preferences: b.provider_preferences } : {}) },
    ...(b.pages !== undefined ? { pages: b.pages } : {}),
    ...(b.options ? { options: b.options } : {}),
    metadata: b.metadata ?? {},
  };
}

function fromMultipart(b: Static<typeof MultipartBody>, req: Parameters<typeof storedUploadOf>[0]): JobInput {
  const upload = storedUploadOf(req);
  if (!upload) throw new FolioError("invalid_request", "send the document as a file part named 'file'", { param: "file" });
  // Browsers label unknown files application/octet-stream: no hint at all is better than that one.
  const partType = upload.mimetype && upload.mimetype !== "application/octet-stream" ? upload.mimetype : undefined;
  const mimeType = b.mime_type ?? partType;
  const layout = b.include_layout === "true" ? true : b.include_layout === "false" ? undefined : b.include_layout;
  const options: Options = {
    ...(b.extract_tables !== undefined ? { extract_tables: b.extract_tables === "true" } : {}),
    ...(b.language !== undefined ? { language: b.language } : {}),
    ...(b.output_format !== undefined ? { output_format: b.output_format } : {}),
    ...(layout !== undefined ? { include_layout: layout } : {}),
    ...(b.searchable_pdf !== undefined ? { searchable_pdf: b.searchable_pdf === "true" } : {}),
  };
  return {
    document: { file: { path: upload.path, bytes: upload.bytes, ...(upload.filename ? { filename: upload.filename } : {}) }, param: "file" },
    ...(mimeType !== undefined ? { mimeType } : {}),
    ...(b.model !== undefined ? { model: b.model } : {}),
    strategy: { ...(b.strategy !== undefined ? { strategy: b.strategy } : {}) },
    ...(b.pages !== undefined ? { pages: b.pages } : {}),
    options,
    metadata: metadataOf(b.metadata),
  };
}

/** The multipart `metadata` field: a JSON object of up to 16 string pairs, as in a JSON body. */
function metadataOf(text: string | undefined): Record<string, string> {
  if (text === undefined) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new FolioError("invalid_request", "metadata must be a JSON object of strings", { param: "metadata" });
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) throw new FolioError("invalid_request", "metadata must be a JSON object of strings", { param: "metadata" });
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > 16) throw new FolioError("invalid_request", `metadata has ${entries.length} pairs; at most 16`, { param: "metadata" });
  for (const [k, v] of entries) {
    if (typeof v !== "string") throw new FolioError("invalid_request", `metadata.${k} must be a string`, { param: `metadata.${k}` });
    if (k.length < 1 || k.length > 40 || v.length > 500 || k.includes("\u0000") || v.includes("\u0000")) {
      throw new FolioError("invalid_request", `metadata.${k}: keys are 1 to 40 characters, values up to 500, without NUL`, { param: `metadata.${k}` });
    }
  }
  return Object.fromEntries(entries) as Record<string, string>;
}
