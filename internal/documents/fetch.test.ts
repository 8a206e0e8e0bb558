/**
 * Fetching from an allowed loopback server: the bytes and Content-Type come
 * back; redirects are followed up to the limit and no further; bodies over
 * the byte limit, slow servers and HTTP errors become clear 4xx errors.
 */
import type { ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fetchDocument, parseFetchAllowList, type FetchPolicy } from "./fetch.ts";
import { policy, refusal, startServer, startServerOnAny, tableLookup, type TestServer } from "./testserver.ts";

const PDF = Buffer.from("%PDF-1.4\n% a tiny document\n%%EOF\n");

let server: TestServer;
let allowed: (overrides?: Partial<FetchPolicy>) => FetchPolicy;
/** Responses the slow and streaming routes left open, with whether the client hung up. */
const streams: { res: ServerResponse; closed: Promise<void> }[] = [];

beforeAll(async () => {
  server = await startServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    const redirect = (status: number, location: string) => {
      res.statusCode = status;
      res.setHeader("location", location);
      res.end();
    };
    const track = () => {
      const closed = new Promise<void>((resolve) => res.on("close", () => resolve()));
      streams.push({ res, closed });
    };
    switch (url.pathname) {
      case "/doc.pdf":
        res.setHeader("content-type", "application/pdf");
        return res.end(PDF);
      case "/exact":
        return res.end(Buffer.alloc(Number(url.searchParams.get("n")), 0x61));
      case "/big-declared":
        // Says how big it is up front; the fetcher should not wait for the body.
        res.setHeader("content-length", "5000");
        res.write(Buffer.alloc(100, 0x61));
        track();
        return;
      case "/big-chunked": {
        // No Content-Length: streams until the client goes away.
        track();
        const timer = setInterval(() => res.write(Buffer.alloc(16 * 1024, 0x61)), 5);
        res.on("close", () => clearInterval(timer));
        return;
      }
      case "/slow-headers":
        track();
        return; // never answers
      case "/slow-body": {
        res.setHeader("content-type", "text/plain");
        res.write("a");
        track();
        const timer = setInterval(() => res.write("a"), 50);
        res.on("close", () => clearInterval(timer));
        return;
      }
      case "/missing":
        res.statusCode = 404;
        return res.end("not here");
      case "/broken":
        res.statusCode = 500;
        return res.end("oops");
      case "/no-location":
        res.statusCode = 302;
        return res.end();
      case "/relative":
        return redirect(301, "/doc.pdf");
      case "/see-other":
        return redirect(303, `http://127.0.0.1:${server.port}/doc.pdf`);
      case "/by-name":
        return redirect(308, `http://docs.example:${server.port}/doc.pdf`);
      case "/loop":
        return redirect(302, `/loop?n=${Number(url.searchParams.get("n") ?? 0) + 1}`);
      case "/chain": {
        const left = Number(url.searchParams.get("left"));
        return left > 0 ? redirect(307, `/chain?left=${left - 1}`) : res.end("end of chain");
      }
      default:
        res.statusCode = 404;
        return res.end();
    }
  });
  allowed = (overrides = {}) => policy({ allow: [`127.0.0.1:${server.port}`], ...overrides });
});
afterAll(async () => {
  await server.close();
});

const requestsTo = (path: string) => server.requests.filter((r) => r.url.startsWith(path)).length;

describe("a successful fetch", () => {
  it("returns the bytes, the Content-Type and the final URL", async () => {
    const got = await fetchDocument(`${server.origin}/doc.pdf`, allowed());
    expect(got.bytes.equals(PDF), got.bytes.toString()).toBe(true);
    expect(got.contentType).toBe("application/pdf");
    expect(got.finalUrl).toBe(`${server.origin}/doc.pdf`);
    const sent = server.requests.at(-1);
    expect(sent?.method).toBe("GET");
    expect(sent?.headers["accept-encoding"]).toBe("identity");
    expect(sent?.headers.host).toBe(`127.0.0.1:${server.port}`);
  });

  it("reports a missing Content-Type as null", async () => {
    const got = await fetchDocument(`${server.origin}/exact?n=3`, allowed());
    expect(got.contentType).toBeNull();
    expect(got.bytes.toString()).toBe("aaa");
  });

  it("allows by CIDR and by address without a port", async () => {
    for (const allow of [["127.0.0.0/8"], ["127.0.0.1"], ["::ffff:127.0.0.1"]]) {
      const got = await fetchDocument(`${server.origin}/doc.pdf`, policy({ allow }));
      expect(got.bytes.equals(PDF), allow.join()).toBe(true);
    }
  });

  it("fetches from an allowed IPv6 literal", async (ctx) => {
    const v6 = await startServerOnAny((_req, res) => res.end("over IPv6"), ["::1"], 0);
    if (!v6) return ctx.skip(); // no IPv6 loopback on this machine
    try {
      const got = await fetchDocument(`${v6.origin}/doc`, policy({ allow: [`[::1]:${v6.port}`] }));
      expect(got.bytes.toString()).toBe("over IPv6");
      expect(got.finalUrl).toBe(`http://[::1]:${v6.port}/doc`);
      expect(v6.requests.at(-1)?.headers.host).toBe(`[::1]:${v6.port}`);
    } finally {
      await v6.close();
    }
  });

  it("follows relative, 303 and by-name redirects, checking each hop", async () => {
    const relative = await fetchDocument(`${server.origin}/relative`, allowed());
    expect(relative.finalUrl).toBe(`${server.origin}/doc.pdf`);
    expect(relative.bytes.equals(PDF)).toBe(true);
    const seeOther = await fetchDocument(`${server.origin}/see-other`, allowed());
    expect(seeOther.bytes.equals(PDF)).toBe(true);
    const lookup = tableLookup({ "docs.example": ["127.0.0.1"] });
    const byName = await fetchDocument(`${server.origin}/by-name`, allowed({ lookup }));
    expect(byName.finalUrl).toBe(`http://docs.example:${server.port}/doc.pdf`);
    expect(lookup.calls).toEqual(["docs.example"]);
  });
});

describe("redirect limit", () => {
  it("follows exactly maxRedirects redirects", async () => {
    const got = await fetchDocument(`${server.origin}/chain?left=5`, allowed());
    expect(got.bytes.toString()).toBe("end of chain");
  });

  it("refuses a redirect loop after maxRedirects hops, having asked 1 + maxRedirects times", async () => {
    const before = requestsTo("/loop");
    const err = await refusal(fetchDocument(`${server.origin}/loop`, allowed()));
    expect(err.code, err.message).toBe("invalid_request");
    expect(err.param).toBe("url");
    expect(err.message).toBe("url redirected more than 5 times");
    expect(requestsTo("/loop") - before).toBe(6);
  });

  it("honours a smaller limit, including zero", async () => {
    const before = requestsTo("/chain");
    const err = await refusal(fetchDocument(`${server.origin}/chain?left=1`, allowed({ maxRedirects: 0 })));
    expect(err.message).toBe("url redirected more than 0 times");
    expect(requestsTo("/chain") - before).toBe(1);
    const two = await refusal(fetchDocument(`${server.origin}/chain?left=3`, allowed({ maxRedirects: 2 })));
    expect(two.message).toBe("url redirected more than 2 times");
  });

  it("refuses a redirect without a Location header", async () => {
    const err = await refusal(fetchDocument(`${server.origin}/no-location`, allowed()));
    expect(err.message).toBe("fetching url returned HTTP 302 without a Location header");
  });
});

describe("size limit", () => {
  it("accepts a body of exactly maxBytes and refuses one byte more", async () => {
    const exact = await fetchDocument(`${server.origin}/exact?n=1000`, allowed({ maxBytes: 1000 }));
    expect(exact.bytes.length).toBe(1000);
    const over = await refusal(fetchDocument(`${server.origin}/exact?n=1001`, allowed({ maxBytes: 1000 })));
    expect(over.code, over.message).toBe("payload_too_large");
    expect(over.param).toBe("url");
    expect(over.message).toBe("the document at url is larger than the limit of 1000 bytes");
  });

  it("refuses on the Content-Length header without waiting for the body", async () => {
    const started = Date.now();
    const err = await refusal(fetchDocument(`${server.origin}/big-declared`, allowed({ maxBytes: 1000 })));
    expect(err.code, err.message).toBe("payload_too_large");
    expect(Date.now() - started).toBeLessThan(1000);
    await closedWithin(streams.at(-1), 1000);
  });

  it("stops reading a body without Content-Length as soon as it passes the limit", async () => {
    const err = await refusal(fetchDocument(`${server.origin}/big-chunked`, allowed({ maxBytes: 100_000, timeoutMs: 5000 })));
    expect(err.code, err.message).toBe("payload_too_large");
    // The server notices the client hung up: the fetcher did not keep draining the stream.
    await closedWithin(streams.at(-1), 1000);
  });
});

describe("time limit", () => {
  it("gives up on a server that never answers within about timeoutMs", async () => {
    const started = Date.now();
    const err = await refusal(fetchDocument(`${server.origin}/slow-headers`, allowed({ timeoutMs: 300 })));
    const elapsed = Date.now() - started;
    expect(err.code, err.message).toBe("invalid_request");
    expect(err.param).toBe("url");
    expect(err.message).toBe("url could not be fetched within 0.3 s");
    expect(elapsed).toBeGreaterThanOrEqual(250);
    expect(elapsed).toBeLessThan(1500);
    await closedWithin(streams.at(-1), 1000);
  });

  it("bounds the whole body, not the gap between chunks", async () => {
    const started = Date.now();
    const err = await refusal(fetchDocument(`${server.origin}/slow-body`, allowed({ timeoutMs: 400 })));
    expect(err.message).toBe("url could not be fetched within 0.4 s");
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it("bounds DNS resolution too", async () => {
    const started = Date.now();
    const lookup = () => new Promise<never>(() => undefined);
    const err = await refusal(fetchDocument("http://slow-dns.example/", policy({ timeoutMs: 300, lookup })));
    expect(err.message).toBe("url could not be fetched within 0.3 s");
    expect(Date.now() - started).toBeLessThan(1500);
  });
});

describe("remote errors", () => {
  it.each([
    ["/missing", 404],
    ["/broken", 500],
  ])("reports %s as invalid_request with HTTP %i", async (path, status) => {
    const err = await refusal(fetchDocument(`${server.origin}${path}`, allowed()));
    expect(err.code, err.message).toBe("invalid_request");
    expect(err.param).toBe("url");
    expect(err.message).toBe(`fetching url returned HTTP ${status}`);
  });

  it("reports a refused connection without naming the address", async () => {
    const closed = await startServer(() => undefined);
    const port = closed.port;
    await closed.close();
    const err = await refusal(fetchDocument(`http://127.0.0.1:${port}/`, policy({ allow: [`127.0.0.1:${port}`] })));
    expect(err.code).toBe("invalid_request");
    expect(err.message).toBe("url could not be fetched: the connection was refused");
  });
});

describe("parseFetchAllowList", () => {
  it("parses address:port pairs, bracketed IPv6, bare addresses and CIDRs", () => {
    expect(parseFetchAllowList(["127.0.0.1:8081", "[::1]:8081", "10.0.0.5", "::1", "10.0.0.0/8", "fd00::/8"])).toMatchObject([
      { kind: "address", address: "127.0.0.1", port: 8081 },
      { kind: "address", address: "::1", port: 8081 },
      { kind: "address", address: "10.0.0.5", port: null },
      { kind: "address", address: "::1", port: null },
      { kind: "cidr" },
      { kind: "cidr" },
    ]);
  });

  it.each(["localhost:8081", "127.0.0.1:http", "127.0.0.1:70000", "10.0.0.0/33", "example.com", ""])("refuses %j", (entry) => {
    expect(() => parseFetchAllowList([entry])).toThrow(/fetch allow entry/);
  });
});

async function closedWithin(stream: { closed: Promise<void> } | undefined, ms: number): Promise<void> {
  if (!stream) throw new Error("the server did not record the response");
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the server's response was still open ${ms} ms after the fetch gave up`)), ms);
  });
  try {
    await Promise.race([stream.closed, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
