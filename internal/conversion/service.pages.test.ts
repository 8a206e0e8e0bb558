/**
 * The conversion service with a page selection, over a stand-in backend
 * (what a sandbox returns is scripted): the selection reaches the backend,
 * the pages come back numbered as in the document, a selection over the limit
 * is refused before any sandbox, and a sandbox whose pages do not fit the
 * selection fails the conversion.
 */
import { describe, expect, it } from "vitest";
import { docx, png } from "../documents/testdata.ts";
import { parsePages, type PageSelection } from "../formats/pages.ts";
import { createLogger } from "../platform/log/index.ts";
import type { SandboxBackend, SandboxInput, SandboxResult } from "../sandbox/index.ts";
import { folioFailure as failure } from "../../test/support.ts";
import { ConversionService } from "./service.ts";

const DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";

function selection(text: string): PageSelection {
  const parsed = parsePages(text);
  if (!parsed.ok) throw new Error(parsed.problem);
  return parsed.selection;
}

/** A service whose backend answers `answer(input)` and records what it was asked. */
function service(answer: (input: SandboxInput) => Omit<SandboxResult, "computeMillis">): { svc: ConversionService; asked: SandboxInput[] } {
  const asked: SandboxInput[] = [];
  const backend: SandboxBackend = {
    convert: async (input) => {
      asked.push(input);
      return { ...answer(input), computeMillis: 1200 };
    },
  };
  const limits = { timeoutMs: 60_000, maxDocumentBytes: 1 << 20, maxPages: 10, maxOutputBytes: 1 << 20, concurrency: 1, queueLimit: 1 };
  return { svc: new ConversionService({ backend, backendName: "unsandboxed", limits, log: createLogger("silent") }), asked };
}

const pagesOf = (n: number) => Array.from({ length: n }, () => png());

describe("ConversionService with pages", () => {
  it("hands the selection to the backend and numbers the pages it returns as in the document", async () => {
    const { svc, asked } = service(() => ({ pages: pagesOf(3), pageCount: 3, documentPageCount: 30 }));
    const r = await svc.convert({ document: docx(), mimeType: DOCX, pages: selection("29-,7") });
    expect(asked.map((a) => a.pages)).toEqual([selection("7,29-")]);
    expect({ pageCount: r.pageCount, numbers: r.pages.map((p) => p.pageNumber) }).toEqual({ pageCount: 3, numbers: [7, 29, 30] });
  });

  it("refuses a selection of more pages than its limit before any sandbox: 400 naming pages", async () => {
    const { svc, asked } = service(() => ({ pages: [], pageCount: 0, documentPageCount: 0 }));
    const err = await failure(svc.convert({ document: docx(), mimeType: DOCX, maxPages: 5, pages: selection("1-6") }));
    expect({ code: err.code, param: err.param, message: err.message }).toEqual({
      code: "invalid_request",
      param: "pages",
      message: '"pages": "1-6" selects 6 pages; at most 5 are processed per request',
    });
    expect(asked).toEqual([]);
  });

  it.each([
    ["fewer pages than selected", { pages: pagesOf(2), pageCount: 2, documentPageCount: 30 }],
    ["a document too short for the selection", { pages: pagesOf(3), pageCount: 3, documentPageCount: 20 }],
    ["every page of a longer document", { pages: pagesOf(3), pageCount: 3, documentPageCount: 3 }],
  ])("fails a sandbox that returns %s: conversion_failed", async (_what, result) => {
    const { svc } = service(() => result);
    const err = await failure(svc.convert({ document: docx(), mimeType: DOCX, pages: selection("7,29-") }));
    expect(err.code).toBe("conversion_failed");
  });

  it("without a selection, a sandbox that converted part of the document fails the conversion", async () => {
    const { svc } = service(() => ({ pages: pagesOf(2), pageCount: 2, documentPageCount: 3 }));
    expect((await failure(svc.convert({ document: docx(), mimeType: DOCX }))).code).toBe("conversion_failed");
  });
});

describe("ConversionService with output pdf", () => {
  const PDF = Buffer.from("%PDF-1.7\n%%EOF\n");

  it("asks the backend for the PDF under the caller's page limit, not its own limit of rendered pages, and hands it back", async () => {
    const { svc, asked } = service(() => ({ pages: [], pageCount: 0, documentPageCount: 400, pdf: PDF }));
    const r = await svc.convert({ document: docx(), mimeType: DOCX, maxPages: 5000, output: "pdf" });
    expect(asked[0]).toMatchObject({ output: "pdf", maxPages: 5000 });
    expect(r).toMatchObject({ pages: [], pageCount: 0, documentPageCount: 400 });
    expect(r.pdf?.equals(PDF)).toBe(true);
  });

  it("refuses a page selection with output pdf before any sandbox", async () => {
    const { svc, asked } = service(() => ({ pages: [], pageCount: 0, documentPageCount: 1, pdf: PDF }));
    expect(await failure(svc.convert({ document: docx(), mimeType: DOCX, output: "pdf", pages: selection("1-2") }))).toMatchObject({ code: "invalid_request", param: "pages" });
    expect(asked).toHaveLength(0);
  });

  it("fails a sandbox that answers pages, no PDF, something else than a PDF, or more pages than asked", async () => {
    for (const answer of [
      { pages: pagesOf(1), pageCount: 1, documentPageCount: 1 },
      { pages: [], pageCount: 0, documentPageCount: 3 },
      { pages: [], pageCount: 0, documentPageCount: 3, pdf: Buffer.from("<html>") },
      { pages: [], pageCount: 0, documentPageCount: 30, pdf: PDF },
    ]) {
      const { svc } = service(() => answer);
      expect(await failure(svc.convert({ document: docx(), mimeType: DOCX, maxPages: 20, output: "pdf" }))).toMatchObject({ code: "conversion_failed" });
    }
  });
});
