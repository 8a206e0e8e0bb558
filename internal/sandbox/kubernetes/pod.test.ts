/**
 * Broker mode of the sandbox program against a real SandboxBroker on
 * loopback, with real LibreOffice (no sandbox around it: what is tested is
 * the exchange): the embedded service description matches the .proto, a
 * document converts and its pages arrive at the broker, a conversion failure
 * is a submitted result (exit 0), a page selection goes to the converter and
 * the document's page count comes back, output pdf submits LibreOffice's PDF
 * and no page, a refused token or an unreachable broker is
 * exit 1, and the esbuild bundle of `cmd/sandbox` does the same in broker mode.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as protoLoader from "@grpc/proto-loader";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SandboxBroker, registerBroker, type BrokerJobInput } from "./broker.ts";
import { startGrpcServer, type RunningGrpcServer } from "../../platform/grpc/index.ts";
import { createLogger } from "../../platform/log/index.ts";
import type { TerminationMessage } from "../../operator/types.ts";
import { PROJECT_ROOT, buildSandboxProgram, resolveNodeBinary } from "../assets.ts";
import { prepareProfile } from "../profile.ts";
import { conversionDescriptor } from "../../gen/proto/descriptors.ts";
import { PROTO_LOAD_OPTIONS } from "../../platform/grpc/load-options.ts";
import { runBrokerMode, type BrokerModeOptions } from "./pod.ts";
import { pagedDocx, pngInfo } from "../testdocs.ts";

const FIXTURES = join(PROJECT_ROOT, "test", "fixtures", "convert");
const work = mkdtempSync(join(tmpdir(), "folio-remote-test-"));
const profileDir = join(work, "profile");
const broker = new SandboxBroker({ log: createLogger("silent") });
let server: RunningGrpcServer;

beforeAll(async () => {
  server = await startGrpcServer("127.0.0.1", 0, (s) => {
    registerBroker(s, broker);
    return [];
  });
  await prepareProfile(profileDir);
}, 120_000);

afterAll(async () => {
  await server?.close();
  rmSync(work, { recursive: true, force: true });
});

function job(document: Buffer, overrides: Partial<BrokerJobInput> = {}): BrokerJobInput {
  return { document, format: "DOCX", maxPages: 5, timeoutMs: 60_000, maxOutputBytes: 64 * 1024 * 1024, expiresAt: Date.now() + 120_000, ...overrides };
}

function options(token: string, name: string, overrides: Partial<BrokerModeOptions> = {}): BrokerModeOptions {
  return { address: server.address, token, profileDir, terminationLog: join(work, `${name}.termination-log`), scratchDir: work, ...overrides };
}

const terminationMessage = (path: string) => JSON.parse(readFileSync(path, "utf8")) as TerminationMessage;

describe("the generated descriptor the bundled program loads", () => {
  it("gives the same SandboxBroker and messages as proto/folio/conversion/v1/conversion.proto", () => {
    const opts = PROTO_LOAD_OPTIONS;
    const fromFile = protoLoader.loadSync("folio/conversion/v1/conversion.proto", { ...opts, includeDirs: [join(PROJECT_ROOT, "proto")] });
    const embedded = protoLoader.fromJSON(conversionDescriptor as unknown as Parameters<typeof protoLoader.fromJSON>[0], opts);
    const describe = (def: protoLoader.PackageDefinition) => {
      const out: Record<string, unknown> = {};
      for (const [name, value] of Object.entries(def)) {
        if (name.startsWith("folio.conversion.v1.") && "type" in value && name in embedded) out[name] = value.type;
      }
      const service = def["folio.conversion.v1.SandboxBroker"] as protoLoader.ServiceDefinition;
      out.methods = Object.fromEntries(
        Object.entries(service).map(([m, d]) => [m, { path: d.path, requestStream: d.requestStream, responseStream: d.responseStream, request: d.requestType.type, response: d.responseType.type }]),
      );
      return JSON.parse(JSON.stringify(out)) as unknown;
    };
    const embeddedNames = Object.keys(embedded).filter((n) => n.startsWith("folio.conversion.v1.")).sort();
    expect(embeddedNames).toContain("folio.conversion.v1.JobOutcome");
    expect(describe(embedded)).toEqual(describe(fromFile));
  });
});

describe("runBrokerMode", () => {
  it("fetches the document, converts it and submits 200-DPI pages", async () => {
    const reg = broker.register(job(readFileSync(join(FIXTURES, "two-pages.docx"))));
    const lines: Record<string, unknown>[] = [];
    const opts = options(reg.token, "ok", { log: (l) => lines.push(l) });
    const { exitCode, message } = await runBrokerMode(opts);
    expect({ exitCode, message: { ...message, computeMillis: 0 } }).toEqual({ exitCode: 0, message: { ok: true, pageCount: 2, computeMillis: 0 } });
    expect(message.computeMillis).toBeGreaterThan(0);
    expect(terminationMessage(opts.terminationLog)).toEqual(message);
    const result = await reg.result;
    expect(result.pageCount).toBe(2);
    for (const page of result.pages) expect(pngInfo(page)).toMatchObject({ width: 1654, height: 2339, phys: { x: 7874, y: 7874, unit: 1 } });
    expect(JSON.stringify(lines)).not.toContain(reg.token);
  }, 90_000);

  it("carries the page selection both ways: only the selected pages come back, with the document's page count", async () => {
    const reg = broker.register(job(pagedDocx(4), { pages: [{ first: 2 }] }));
    const { exitCode, message } = await runBrokerMode(options(reg.token, "pages"));
    expect({ exitCode, ok: message.ok, pageCount: message.pageCount }).toEqual({ exitCode: 0, ok: true, pageCount: 3 });
    const result = await reg.result;
    expect({ pageCount: result.pageCount, documentPageCount: result.documentPageCount, pages: result.pages.length }).toEqual({ pageCount: 3, documentPageCount: 4, pages: 3 });
    const beyond = broker.register(job(pagedDocx(2), { pages: [{ first: 3, last: 3 }] }));
    await runBrokerMode(options(beyond.token, "beyond"));
    expect((await beyond.result).outcome).toMatchObject({ ok: false, errorCode: "invalid_pages", errorMessage: 'the document has 2 pages; "pages": "3" asks for page 3' });
  }, 90_000);

  it("submits the PDF with output pdf: every page of the document in it, none rendered", async () => {
    const reg = broker.register(job(pagedDocx(4), { output: "pdf" }));
    const { exitCode, message } = await runBrokerMode(options(reg.token, "pdf"));
    expect({ exitCode, ok: message.ok, pageCount: message.pageCount }).toEqual({ exitCode: 0, ok: true, pageCount: 0 });
    const result = await reg.result;
    expect({ pages: result.pages.length, pageCount: result.pageCount, documentPageCount: result.documentPageCount, pdfHeader: result.pdf?.subarray(0, 5).toString("latin1") }).toEqual({
      pages: 0,
      pageCount: 0,
      documentPageCount: 4,
      pdfHeader: "%PDF-",
    });
    // The document's pages bound a PDF too: more than maxPages is over_limit (a 400 at the edge), submitted as such.
    const over = broker.register(job(pagedDocx(4), { output: "pdf", maxPages: 3 }));
    expect((await runBrokerMode(options(over.token, "pdf-over"))).exitCode).toBe(0);
    expect((await over.result).outcome).toMatchObject({ ok: false, errorCode: "over_limit" });
  }, 90_000);

  it("submits a conversion failure as a result and exits 0", async () => {
    const reg = broker.register(job(Buffer.from("PK\u0003\u0004 this is not really a zip file at all")));
    const opts = options(reg.token, "corrupt");
    const { exitCode, message } = await runBrokerMode(opts);
    expect({ exitCode, ok: message.ok, errorCode: message.errorCode }).toEqual({ exitCode: 0, ok: false, errorCode: "conversion_failed" });
    expect(message.message).toMatch(/LibreOffice could not read the document/);
    const result = await reg.result;
    expect(result.outcome).toMatchObject({ ok: false, errorCode: "conversion_failed" });
  }, 90_000);

  it("exits 1 with broker_error when the token is refused", async () => {
    const opts = options("not-a-token", "refused");
    const { exitCode, message } = await runBrokerMode(opts);
    expect({ exitCode, ok: message.ok, errorCode: message.errorCode }).toEqual({ exitCode: 1, ok: false, errorCode: "broker_error" });
    expect(message.message).toMatch(/FetchJob failed \(PERMISSION_DENIED\)/);
    expect(terminationMessage(opts.terminationLog)).toEqual(message);
  });

  it("exits 1 when the broker cannot be reached before the deadline", async () => {
    const started = Date.now();
    const { exitCode, message } = await runBrokerMode(options("x".repeat(43), "unreachable", { address: "127.0.0.1:1", fetchDeadlineMs: 1000 }));
    expect({ exitCode, errorCode: message.errorCode }).toEqual({ exitCode: 1, errorCode: "broker_error" });
    expect(message.message).toMatch(/FetchJob failed \(DEADLINE_EXCEEDED\)/);
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});

describe("the bundled sandbox program", () => {
  it("runs broker mode from the esbuild bundle", async () => {
    const program = await buildSandboxProgram(join(work, "bundle", "sandbox.mjs"));
    const node = await resolveNodeBinary();
    const reg = broker.register(job(readFileSync(join(FIXTURES, "one-page.docx"))));
    const terminationLog = join(work, "bundle.termination-log");
    const child = spawn(node, [program], {
      env: {
        PATH: "/usr/bin:/bin",
        FOLIO_BROKER_ADDRESS: server.address,
        FOLIO_BROKER_TOKEN: reg.token,
        FOLIO_PROFILE_DIR: profileDir,
        FOLIO_TERMINATION_LOG: terminationLog,
        TMPDIR: work,
      },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString("utf8")));
    const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
    expect({ code, stderr: code === 0 ? "" : stderr }).toEqual({ code: 0, stderr: "" });
    expect(terminationMessage(terminationLog)).toMatchObject({ ok: true, pageCount: 1 });
    expect((await reg.result).pageCount).toBe(1);
    expect(stderr).not.toContain(reg.token);
  }, 120_000);
});
