/**
 * Output pdf over gRPC, with a stand-in sandbox backend (what a sandbox
 * returns is scripted): a PDF larger than one message crosses in 1 MiB
 * parts and arrives whole, and the client refuses a service that answers
 * pages where a PDF was asked for (a conversion service older than output
 * pdf ignores the field).
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { docx, png } from "../documents/testdata.ts";
import { grpc, startGrpcServer, type RunningGrpcServer } from "../platform/grpc/index.ts";
import { createLogger } from "../platform/log/index.ts";
import type { SandboxResult } from "../sandbox/index.ts";
import { folioFailure as failure } from "../../test/support.ts";
import { ConversionClient } from "./client.ts";
import { PDF_CHUNK_BYTES, conversionProto, registerConversion } from "./grpc.ts";
import { ConversionService } from "./service.ts";

const DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
/** Two and a half parts' worth, so the last part is a short one. */
const PDF = Buffer.concat([Buffer.from("%PDF-1.7\n"), randomBytes(Math.floor(PDF_CHUNK_BYTES * 2.5))]);

let answer: () => Omit<SandboxResult, "computeMillis">;
let server: RunningGrpcServer;
let client: ConversionClient;

beforeAll(async () => {
  const limits = { timeoutMs: 60_000, maxDocumentBytes: 1 << 20, maxPages: 10, maxOutputBytes: 64 << 20, concurrency: 1, queueLimit: 1 };
  const backend = { convert: async () => ({ ...answer(), computeMillis: 900 }) };
  const svc = new ConversionService({ backend, backendName: "unsandboxed", limits, log: createLogger("silent") });
  server = await startGrpcServer("127.0.0.1", 0, (s) => registerConversion(s, svc));
  client = new ConversionClient(server.address, { infoDeadlineMs: 5_000, convertDeadlineMs: 30_000 });
});
afterAll(async () => {
  await server?.close();
});

describe("Convert with output pdf over gRPC", () => {
  it("streams a PDF of several messages and the client puts it back together, with its page count and cost", async () => {
    answer = () => ({ pages: [], pageCount: 0, documentPageCount: 321, pdf: PDF });
    const r = await client.convert({ document: docx(), mimeType: DOCX, maxPages: 5000, output: "pdf" });
    expect(r).toMatchObject({ pages: [], pageCount: 0, documentPageCount: 321, computeMillis: 900 });
    expect(r.pdf?.length).toBe(PDF.length);
    expect(r.pdf?.equals(PDF)).toBe(true);
    expect(r.providerCostCents.toNumber()).toBeGreaterThan(0);
  });

  it("refuses pages where a PDF was asked for: a service older than output pdf ignores the field", async () => {
    // That older service, answering as it would: one page and a summary of one page.
    const old = await startGrpcServer("127.0.0.1", 0, (s) => {
      s.addService(conversionProto().folio.conversion.v1.ConversionService.service, {
        Convert: (call: grpc.ServerWritableStream<unknown, unknown>) => {
          call.write({ page: { page_number: 1, png: png(), width: 10, height: 10 } });
          call.write({ summary: { page_count: 1, document_page_count: 1, compute_millis: 900, format: "DOCX", backend: "runsc", provider_cost_cents: "0.1" } });
          call.end();
        },
        Estimate: (_call: unknown, done: grpc.sendUnaryData<unknown>) => done({ code: grpc.status.UNIMPLEMENTED }),
        Pricing: (_call: unknown, done: grpc.sendUnaryData<unknown>) => done({ code: grpc.status.UNIMPLEMENTED }),
      });
      return [];
    });
    try {
      const oldClient = new ConversionClient(old.address, { infoDeadlineMs: 5_000, convertDeadlineMs: 30_000 });
      expect((await oldClient.convert({ document: docx(), mimeType: DOCX, maxPages: 5 })).pageCount).toBe(1);
      const refused = await failure(oldClient.convert({ document: docx(), mimeType: DOCX, maxPages: 5, output: "pdf" }));
      expect(refused.message).toMatch(/did not answer with a PDF/);
    } finally {
      await old.close();
    }
  });
});
