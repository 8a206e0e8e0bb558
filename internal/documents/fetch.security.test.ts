/**
 * SSRF: every spelling of an internal address, names that resolve inside,
 * redirects that lead inside, other schemes and credentials are refused
 * before any connection is made, and the connection goes to the address
 * that was checked even when the name re-resolves elsewhere (DNS rebinding).
 * Real loopback servers stand behind every refused URL and count the
 * connections they receive: it must be zero.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer as createTlsServer, createSecureContext, type Server as TlsServer } from "node:tls";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fetchDocument } from "./fetch.ts";
import { policy, refusal, startServer, startServerOnAny, tableLookup, type TestServer } from "./testserver.ts";

/** A lookup that fails the test if it is ever asked: address literals must never reach DNS. */
const noDns = tableLookup({});

// Listening on both loopbacks with one port: whichever loopback a refused
// address would have reached, the connection would be counted.
let trap4: TestServer;
let trap6: TestServer | null;
const traps = () => [trap4, ...(trap6 ? [trap6] : [])];
const trapConnections = () => traps().reduce((n, s) => n + s.connections, 0);

beforeAll(async () => {
  const handler = (_req: unknown, res: { end: (s: string) => void }) => res.end("internal secret");
  trap4 = await startServer(handler, "127.0.0.1");
  trap6 = await startServerOnAny(handler, ["::1"], trap4.port);
});
afterAll(async () => {
  for (const s of traps()) await s.close();
});

describe("address literals", () => {
  const table: [host: string, phrase: string][] = [
    ["127.0.0.1", "a loopback address"],
    ["127.1", "a loopback address"],
    ["2130706433", "a loopback address"],
    ["0x7f000001", "a loopback address"],
    ["0177.0.0.1", "a loopback address"],
    ["0x7f.0.0.1", "a loopback address"],
    ["[::1]", "a loopback address"],
    ["[::ffff:127.0.0.1]", "a loopback address"],
    ["[::ffff:7f00:1]", "a loopback address"],
    ["[0:0:0:0:0:0:0:1]", "a loopback address"],
    ["10.0.0.1", "a private address"],
    ["172.16.0.1", "a private address"],
    ["192.168.1.1", "a private address"],
    ["100.64.0.1", "a carrier-grade NAT address"],
    ["169.254.169.254", "a cloud metadata address"],
    ["[fe80::1]", "a link-local address"],
    ["[fd00::1]", "a private address"],
    ["[fd00:ec2::254]", "a cloud metadata address"],
    ["0.0.0.0", "an unspecified address"],
    ["[::]", "an unspecified address"],
    ["224.0.0.1", "a multicast address"],
    ["255.255.255.255", "a broadcast address"],
    ["[64:ff9b::7f00:1]", "a loopback address"],
    ["[2002:7f00:1::]", "a loopback address"],
  ];

  it.each(table)("refuses http://%s:<port>/ as %s without connecting", async (host, phrase) => {
    const before = trapConnections();
    const err = await refusal(fetchDocument(`http://${host}:${trap4.port}/doc`, policy({ lookup: noDns, timeoutMs: 2000 })));
    expect(err.code, err.message).toBe("invalid_request");
    expect(err.param).toBe("url");
    expect(err.message).toBe(`url resolves to ${phrase}; Folio only fetches public addresses`);
    expect(trapConnections(), "connections the loopback servers received").toBe(before);
    expect(noDns.calls, "DNS lookups for address literals").toEqual([]);
  });

  it("refuses with the caller's field name", async () => {
    const param = "messages[0].content[1].image_url.url";
    const err = await refusal(fetchDocument(`http://127.0.0.1:${trap4.port}/`, policy(), param));
    expect(err.param).toBe(param);
    expect(err.message).toMatch(new RegExp(`^${param.replace(/[[\].]/g, "\\$&")} resolves to a loopback address`));
  });

  it("never echoes the address a URL named or resolved to", async () => {
    const err = await refusal(fetchDocument("http://internal.example/", policy({ lookup: tableLookup({ "internal.example": ["10.1.2.3"] }) })));
    expect(err.message).not.toMatch(/10\.1\.2\.3/);
  });
});

describe("names that resolve inside", () => {
  it("refuses a name that resolves to loopback", async () => {
    const lookup = tableLookup({ "localhost.attacker.example": ["127.0.0.1"] });
    const err = await refusal(fetchDocument(`http://localhost.attacker.example:${trap4.port}/`, policy({ lookup })));
    expect(err.code).toBe("invalid_request");
    expect(err.param).toBe("url");
    expect(err.message).toBe("url resolves to a loopback address; Folio only fetches public addresses");
    expect(lookup.calls).toEqual(["localhost.attacker.example"]);
    expect(trapConnections()).toBe(0);
  });

  it("refuses a name with one public and one private address, whichever comes first", async () => {
    for (const addresses of [["93.184.216.34", "10.0.0.5"], ["10.0.0.5", "93.184.216.34"], ["2606:4700::1", "::1"]]) {
      const lookup = tableLookup({ "mixed.example": addresses });
      const err = await refusal(fetchDocument("http://mixed.example/", policy({ lookup })));
      expect(err.code, `${addresses.join(",")}: ${err.message}`).toBe("invalid_request");
      expect(err.message).toMatch(/resolves to a (private|loopback) address/);
    }
  });

  it("refuses a name whose resolver answers with a mapped loopback address", async () => {
    const lookup = tableLookup({ "mapped.example": ["::ffff:127.0.0.1"] });
    const err = await refusal(fetchDocument(`http://mapped.example:${trap4.port}/`, policy({ lookup })));
    expect(err.message).toMatch(/loopback/);
  });

  it("reports a name that does not resolve as invalid_request", async () => {
    const err = await refusal(fetchDocument("http://nxdomain.example/", policy({ lookup: tableLookup({}) })));
    expect(err.code).toBe("invalid_request");
    expect(err.param).toBe("url");
    expect(err.message).toBe("the host of url could not be resolved");
  });

  it("uses the system resolver by default, which also sends localhost to loopback", async () => {
    const err = await refusal(fetchDocument(`http://localhost:${trap4.port}/`, policy()));
    expect(err.message).toMatch(/resolves to a loopback address/);
    expect(trapConnections()).toBe(0);
  });
});

describe("schemes and credentials", () => {
  it.each(["ftp://127.0.0.1/doc.pdf", "file:///etc/passwd", "gopher://127.0.0.1:70/_GET", "javascript:alert(1)", "data:text/plain;base64,aGk=", "ws://example.com/"])(
    "refuses %s",
    async (url) => {
      const err = await refusal(fetchDocument(url, policy({ lookup: noDns })));
      expect(err.code).toBe("invalid_request");
      expect(err.param).toBe("url");
      expect(err.message).toMatch(/^url must be an http or https URL, not [a-z]+$/);
      expect(noDns.calls).toEqual([]);
    },
  );

  it.each(["http://user:secret@example.com/doc.pdf", "https://user@example.com/", "http://:pw@example.com/"])("refuses credentials in %s", async (url) => {
    const err = await refusal(fetchDocument(url, policy({ lookup: noDns })));
    expect(err.code).toBe("invalid_request");
    expect(err.message).toMatch(/must not contain credentials/);
    expect(err.message).not.toMatch(/secret/);
    expect(noDns.calls).toEqual([]);
  });

  it.each(["not a url", "//example.com/a", "http://", "http://exa mple.com/"])("refuses the malformed URL %j", async (url) => {
    const err = await refusal(fetchDocument(url, policy({ lookup: noDns })));
    expect(err.code).toBe("invalid_request");
    expect(err.param).toBe("url");
    expect(noDns.calls).toEqual([]);
  });
});

describe("redirects", () => {
  let a: TestServer; // a "public" server: explicitly allowed by the policy
  let b: TestServer; // an internal server nobody allowed
  let allow: string[];

  beforeAll(async () => {
    b = await startServer((_req, res) => res.end("internal secret"));
    a = await startServer((req, res) => {
      const to = (location: string) => {
        res.statusCode = 302;
        res.setHeader("location", location);
        res.end();
      };
      if (req.url === "/to-b") return to(`http://127.0.0.1:${b.port}/secret`);
      if (req.url === "/to-b-mapped") return to(`http://[::ffff:7f00:1]:${b.port}/secret`);
      if (req.url === "/to-b-decimal") return to(`http://2130706433:${b.port}/secret`);
      if (req.url === "/to-name") return to(`http://internal.example:${b.port}/secret`);
      if (req.url === "/to-metadata") return to("http://169.254.169.254/latest/meta-data/");
      if (req.url === "/to-file") return to("file:///etc/passwd");
      if (req.url === "/to-creds") return to(`http://user:pw@127.0.0.1:${a.port}/ok`);
      res.end("public document");
    });
    allow = [`127.0.0.1:${a.port}`];
  });
  afterAll(async () => {
    await a.close();
    await b.close();
  });

  it.each(["/to-b", "/to-b-mapped", "/to-b-decimal"])("refuses a redirect from the allowed server to another loopback port (%s)", async (path) => {
    const err = await refusal(fetchDocument(`${a.origin}${path}`, policy({ allow, lookup: noDns })));
    expect(err.code, err.message).toBe("invalid_request");
    expect(err.param).toBe("url");
    expect(err.message).toBe("url redirected to a location that resolves to a loopback address; Folio only fetches public addresses");
    expect(b.connections, "connections to the internal server").toBe(0);
  });

  it("refuses a redirect to a name that resolves to loopback", async () => {
    const lookup = tableLookup({ "internal.example": ["127.0.0.1"] });
    const err = await refusal(fetchDocument(`${a.origin}/to-name`, policy({ allow, lookup })));
    expect(err.message).toMatch(/^url redirected to a location that resolves to a loopback address/);
    expect(lookup.calls).toEqual(["internal.example"]);
    expect(b.connections).toBe(0);
  });

  it("refuses a redirect to the metadata service even when all of 169.254/16 is allowed", async () => {
    const err = await refusal(fetchDocument(`${a.origin}/to-metadata`, policy({ allow: [...allow, "169.254.0.0/16"] })));
    expect(err.message).toMatch(/cloud metadata address/);
  });

  it("refuses redirects to other schemes and to URLs with credentials", async () => {
    const file = await refusal(fetchDocument(`${a.origin}/to-file`, policy({ allow })));
    expect(file.message).toBe("url redirected to a file URL; Folio only fetches http and https URLs");
    const creds = await refusal(fetchDocument(`${a.origin}/to-creds`, policy({ allow })));
    expect(creds.message).toMatch(/redirected to a URL with credentials/);
  });

  it("fetches from the allowed server itself, and only from its allowed port", async () => {
    const ok = await fetchDocument(`${a.origin}/doc`, policy({ allow }));
    expect(ok.bytes.toString()).toBe("public document");
    const other = await refusal(fetchDocument(`http://127.0.0.1:${b.port}/`, policy({ allow })));
    expect(other.message).toMatch(/loopback/);
    expect(b.connections).toBe(0);
  });
});

describe("DNS rebinding", () => {
  // The name resolves to the allowed server on the first lookup and to an
  // internal one on every later lookup. A fetcher that checks one answer and
  // then lets the connection resolve the name again reaches the internal
  // server; a pinned one reaches the server it checked.
  let allowed: TestServer;
  let internal: TestServer | null;

  beforeAll(async () => {
    allowed = await startServer((req, res) => {
      if (req.url === "/hop") {
        res.statusCode = 307;
        res.setHeader("location", `http://second.rebind.example:${allowed.port}/doc`);
        return res.end();
      }
      res.end("checked server");
    });
    internal = await startServerOnAny((_req, res) => res.end("internal secret"), ["::1", "127.0.0.2"], allowed.port);
  });
  afterAll(async () => {
    await allowed.close();
    await internal?.close();
  });

  function rebindingLookup() {
    const calls: string[] = [];
    const lookup = async (hostname: string) => {
      calls.push(hostname);
      const first = calls.filter((h) => h === hostname).length === 1;
      const address = first ? "127.0.0.1" : (internal as TestServer).host;
      return [{ address, family: address.includes(":") ? (6 as const) : (4 as const) }];
    };
    return Object.assign(lookup, { calls });
  }

  it("connects to the address it checked, resolving the name once", async (ctx) => {
    if (!internal) return ctx.skip(); // neither ::1 nor 127.0.0.2 can be bound here
    const lookup = rebindingLookup();
    const got = await fetchDocument(`http://rebind.example:${allowed.port}/doc`, policy({ allow: [`127.0.0.1:${allowed.port}`], lookup }));
    expect(got.bytes.toString(), "the body must come from the server that was checked").toBe("checked server");
    expect(lookup.calls).toEqual(["rebind.example"]);
    expect(internal.connections, "connections to the rebinding target").toBe(0);
    expect(allowed.requests.at(-1)?.headers.host, "Host header keeps the URL's name").toBe(`rebind.example:${allowed.port}`);
  });

  it("pins each redirect hop to its own checked address", async (ctx) => {
    if (!internal) return ctx.skip();
    const lookup = rebindingLookup();
    const got = await fetchDocument(`http://first.rebind.example:${allowed.port}/hop`, policy({ allow: [`127.0.0.1:${allowed.port}`], lookup }));
    expect(got.bytes.toString()).toBe("checked server");
    expect(got.finalUrl).toBe(`http://second.rebind.example:${allowed.port}/doc`);
    expect(lookup.calls).toEqual(["first.rebind.example", "second.rebind.example"]);
    expect(internal.connections).toBe(0);
  });

  it("refuses when the first answer is already internal, before connecting", async (ctx) => {
    if (!internal) return ctx.skip();
    const lookup = tableLookup({ "rebind.example": [internal.host] });
    const err = await refusal(fetchDocument(`http://rebind.example:${allowed.port}/doc`, policy({ allow: [`127.0.0.1:${allowed.port}`], lookup })));
    expect(err.message).toMatch(/loopback/);
    expect(internal.connections).toBe(0);
  });
});

describe("https pinning", () => {
  // A TLS server on loopback with a self-signed certificate for docs.example.
  // The name exists only in the injected lookup, so reaching the server at
  // all proves the socket went to the checked address; the server records
  // the SNI it was sent, which must be the URL's name, not the address.
  let server: TlsServer | null = null;
  let port = 0;
  const sni: (string | undefined)[] = [];
  let dir = "";

  beforeAll(() => {
    try {
      dir = mkdtempSync(join(tmpdir(), "folio-tls-"));
      execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", "/CN=docs.example", "-addext", "subjectAltName=DNS:docs.example", "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")], { stdio: "ignore" });
    } catch {
      return; // no openssl: the tests below skip
    }
    const context = createSecureContext({ key: readFileSync(join(dir, "key.pem")), cert: readFileSync(join(dir, "cert.pem")) });
    server = createTlsServer({
      SNICallback: (name, cb) => {
        sni.push(name);
        cb(null, context);
      },
    });
    server.on("secureConnection", (socket) => socket.end("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"));
    server.on("tlsClientError", () => undefined);
    return new Promise<void>((resolve) => {
      (server as TlsServer).listen(0, "127.0.0.1", () => {
        port = ((server as TlsServer).address() as AddressInfo).port;
        resolve();
      });
    });
  });
  afterAll(() => {
    server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("connects to the checked address with SNI set to the URL's name, and does not accept an untrusted certificate", async (ctx) => {
    if (!server) return ctx.skip();
    const lookup = tableLookup({ "docs.example": ["127.0.0.1"] });
    const err = await refusal(fetchDocument(`https://docs.example:${port}/doc.pdf`, policy({ allow: [`127.0.0.1:${port}`], lookup })));
    expect(err.code, err.message).toBe("invalid_request");
    expect(err.message).toBe("url could not be fetched: its TLS certificate could not be verified");
    expect(sni).toEqual(["docs.example"]);
    expect(lookup.calls).toEqual(["docs.example"]);
  });
});
