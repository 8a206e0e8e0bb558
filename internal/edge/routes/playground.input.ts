/**
 * The two bodies `/v1/playground/process` takes (JSON with url/base64, or a
 * multipart form with the file) and how each becomes one reading request.
 */
import { Type, type Static } from "typebox";
import { FolioError } from "../../platform/errors/index.ts";
import type { Upload } from "../multipart.ts";
import { ocrOptions, strategyOf, type DocumentSource } from "../pipeline.ts";
import { JsonReadingFields, OcrOptions, PagesField, ReadingFields, StringEnum } from "../schemas.ts";

const Common = {
  url: Type.Optional(Type.String({ minLength: 1, maxLength: 8192, description: "Publicly accessible document URL (http or https), instead of a file." })),
  ...ReadingFields,
  filename: Type.Optional(Type.String({ maxLength: 255, pattern: "^[^\\u0000]*$", description: "Echoed in the result (a file part's own name is used when absent)." })),
  pages: Type.Optional(PagesField),
};

export const JsonBody = Type.Object(
  {
    ...Common,
    ...JsonReadingFields,
    options: Type.Optional(OcrOptions),
    include_images: Type.Optional(Type.Boolean({ description: "Return each page's image as a data URL (default true)." })),
  },
  { additionalProperties: false, description: "Exactly one of url or base64." },
);
export type JsonBody = Static<typeof JsonBody>;

const Flag = StringEnum(["true", "false"]);
/** Form fields are strings; the options are flat (`extract_tables=true`). */
export const MultipartBody = Type.Object(
  {
    file: Type.Optional(Type.Unsafe<Buffer>({ format: "binary", description: "The document, as a file part (exactly one of file or url)." })),
    ...Common,
    ...OcrOptions.properties,
    extract_tables: Type.Optional(Flag),
    include_layout: Type.Optional(StringEnum(["true", "false", "blocks", "words"])),
    include_images: Type.Optional(Flag),
  },
  { additionalProperties: false },
);
export type MultipartBody = Static<typeof MultipartBody>;

/** A normalised request, whichever body it came in. */
export interface PlaygroundInput {
  source: DocumentSource;
  param: string;
  mimeType?: string;
  filename?: string;
  model?: string;
  strategy: { strategy?: string; param: string };
  options: ReturnType<typeof ocrOptions>;
  /** The `pages` text as sent (`pageSelectionOf` reads it). */
  pages?: string;
  includeImages: boolean;
}

export function fromJson(b: JsonBody): PlaygroundInput {
  if ((b.url === undefined) === (b.base64 === undefined)) {
    throw new FolioError("invalid_request", "send exactly one of 'url' or 'base64'", { param: b.url === undefined ? "base64" : "url" });
  }
  return {
    ...(b.url !== undefined ? { source: { url: b.url }, param: "url" } : { source: { base64: b.base64! }, param: "base64" }),
    ...(b.mime_type !== undefined ? { mimeType: b.mime_type } : {}),
    ...(b.filename !== undefined ? { filename: b.filename } : {}),
    ...(b.model !== undefined ? { model: b.model } : {}),
    strategy: strategyOf(b),
    options: ocrOptions(b.options),
    ...(b.pages !== undefined ? { pages: b.pages } : {}),
    includeImages: b.include_images ?? true,
  };
}

export function fromMultipart(b: MultipartBody, upload: Upload | undefined): PlaygroundInput {
  if ((b.file === undefined) === (b.url === undefined)) {
    throw new FolioError("invalid_request", "send exactly one of a 'file' part or a 'url' field", { param: b.file === undefined ? "file" : "url" });
  }
  // Browsers label unknown files application/octet-stream: no hint at all is better than that one.
  const partType = upload?.mimetype && upload.mimetype !== "application/octet-stream" ? upload.mimetype : undefined;
  const mimeType = b.mime_type ?? partType;
  const filename = b.filename ?? (upload?.filename || undefined);
  return {
    ...(b.file !== undefined ? { source: { bytes: b.file }, param: "file" } : { source: { url: b.url! }, param: "url" }),
    ...(mimeType !== undefined ? { mimeType } : {}),
    ...(filename !== undefined ? { filename } : {}),
    ...(b.model !== undefined ? { model: b.model } : {}),
    strategy: strategyOf({ ...(b.strategy !== undefined ? { strategy: b.strategy } : {}) }),
    options: ocrOptions({
      extract_tables: b.extract_tables === "true",
      ...(b.language !== undefined ? { language: b.language } : {}),
      ...(b.output_format !== undefined ? { output_format: b.output_format } : {}),
      ...(b.include_layout !== undefined && b.include_layout !== "false" ? { include_layout: b.include_layout === "true" ? true : b.include_layout } : {}),
    }),
    ...(b.pages !== undefined ? { pages: b.pages } : {}),
    includeImages: b.include_images !== "false",
  };
}
