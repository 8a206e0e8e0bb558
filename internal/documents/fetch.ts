/**
 * Fetches a client's document URL without letting the client reach inside
 * our network (SSRF).
 *
 * For every hop (the URL, then each redirect, followed by hand):
 *  1. only http and https, no credentials in the URL;
 *  2. the host is resolved once, and every address it resolves to must be
 *     public (see `address.ts`) or listed in the operator's allow list;
 *  3. the connection goes to the address that was checked: the socket is
 *     opened by our own connector on that IP, never by a second DNS lookup,
 *     so a name that re-resolves (DNS rebinding) cannot move it. TLS keeps
 *     the URL's host name for SNI and certificate checks, and the Host
 *     header keeps it too.
 * The whole fetch, redirects included, is bounded by one deadline and the
 * body by a byte limit that stops reading as soon as it is passed.
 */
import { lookup as dnsLookup } from "node:dns/promises";
import ipaddr from "ipaddr.js";
import { Client, buildConnector } from "undici";
import type { Dispatcher } from "undici";
import { FolioError, invalid } from "../platform/errors/index.ts";
import { describeReason, isForbiddenAddress, normalizeAddress, parseHostLiteral, type ForbiddenReason } from "./address.ts";

/** One address a host name resolves to. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to all of its addresses (like `dns.promises.lookup(name, { all: true })`). */
export type HostLookup = (hostname: string) => Promise<ResolvedAddress[]>;

/** How a document URL may be fetched. */
export interface FetchPolicy {
  /** Largest body accepted, in bytes; one more byte fails the fetch. */
  maxBytes: number;
  /** Deadline for the whole fetch, redirects and body included, in milliseconds. */
  timeoutMs: number;
  /** Redirects followed at most (Folio's default is {@link DEFAULT_MAX_REDIRECTS}). */
  maxRedirects: number;
  /**
   * Operator exceptions to the public-address rule: `ip:port` pairs
   * (`127.0.0.1:8081`, `[::1]:8081`), single addresses (any port) or CIDRs
   * (`10.0.0.0/8`). Empty by default. A CIDR never opens a cloud metadata
   * address; only an entry naming that exact address does.
   */
  allow: readonly string[];
  /** DNS resolution, injectable for tests; defaults to the system resolver. */
  lookup?: HostLookup;
}

/** A fetched document. */
export interface FetchedDocument {
  bytes: Buffer;
  /** The response's Content-Type header as sent, or null. Only a hint: sniff the bytes. */
  contentType: string | null;
  /** The URL the bytes came from, after redirects. */
  finalUrl: string;
}

export const DEFAULT_MAX_REDIRECTS = 5;

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

const REQUEST_HEADERS = {
  "user-agent": "Folio-DocumentFetcher/1",
  accept: "*/*",
  // undici does not decompress: ask for the bytes as stored so the limit counts real bytes.
  "accept-encoding": "identity",
};

/**
 * Fetches `url` under `policy`. Every refusal is a {@link FolioError} naming
 * `param`: `invalid_request` for a refused scheme, credentials or address
 * class, a DNS failure, an HTTP error status, too many redirects or the
 * deadline; `payload_too_large` for a body over `maxBytes`. Messages name
 * the address class, never the address a name resolved to.
 */
export async function fetchDocument(url: string, policy: FetchPolicy, param = "url"): Promise<FetchedDocument> {
  const allow = parseFetchAllowList(policy.allow);
  const lookup = policy.lookup ?? systemLookup;
  const signal = AbortSignal.timeout(policy.timeoutMs);
  let current = parseFetchUrl(url, param, false);
  try {
    for (let redirects = 0; ; redirects++) {
      const target = await resolveChecked(current, lookup, allow, param, redirects > 0, signal);
      const client = pinnedClient(current, target, policy.timeoutMs);
      try {
        const res = await client.request({
          method: "GET",
          path: `${current.pathname}${current.search}`,
          headers: REQUEST_HEADERS,
          signal,
        });
        if (REDIRECT_STATUSES.has(res.statusCode)) {
          discard(res.body);
          const location = firstHeader(res.headers.location);
          if (location === undefined) {
            throw invalid(param, `fetching ${param} returned HTTP ${res.statusCode} without a Location header`);
          }
          if (redirects >= policy.maxRedirects) {
            throw invalid(param, `${param} redirected more than ${policy.maxRedirects} times`);
          }
          current = parseFetchUrl(resolveLocation(location, current, param), param, true);
          continue;
        }
        if (res.statusCode < 200 || res.statusCode > 299) {
          discard(res.body);
          throw invalid(param, `fetching ${param} returned HTTP ${res.statusCode}`);
        }
        const bytes = await readBounded(res, policy.maxBytes, param);
        return { bytes, contentType: firstHeader(res.headers["content-type"]) ?? null, finalUrl: current.href };
      } finally {
        await client.destroy().catch(() => undefined);
      }
    }
  } catch (err) {
    if (err instanceof FolioError) throw err;
    if (signal.aborted || isTimeoutError(err)) {
      throw new FolioError("invalid_request", `${param} could not be fetched within ${seconds(policy.timeoutMs)} s`, {
        param,
        retryable: true,
        cause: err,
      });
    }
    throw new FolioError("invalid_request", `${param} could not be fetched: ${describeNetworkError(err)}`, {
      param,
      retryable: true,
      cause: err,
    });
  }
}

/**
 * A client for one request to `raw` under the rules of a document fetch
 * (http or https, no credentials, every address the host resolves to public
 * unless `allow` lets it, the connection pinned to the checked address),
 * for a caller that sends rather than fetches (webhooks). One hop: the
 * caller follows no redirect. Refusals are {@link FolioError}s naming `param`.
 */
export async function checkedClient(
  raw: string,
  policy: Pick<FetchPolicy, "allow" | "lookup" | "timeoutMs">,
  param: string,
  signal: AbortSignal,
): Promise<{ url: URL; client: Client }> {
  const url = parseFetchUrl(raw, param, false);
  const target = await resolveChecked(url, policy.lookup ?? systemLookup, parseFetchAllowList(policy.allow), param, false, signal);
  return { url, client: pinnedClient(url, target, policy.timeoutMs) };
}

/** Parses and checks the parts of a URL that need no network: scheme and credentials. */
function parseFetchUrl(raw: string, param: string, redirected: boolean): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw invalid(param, redirected ? `${param} redirected to an invalid URL` : `${param} is not a valid URL`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    const scheme = u.protocol.slice(0, -1);
    throw invalid(
      param,
      redirected
        ? `${param} redirected to a ${scheme} URL; Folio only fetches http and https URLs`
        : `${param} must be an http or https URL, not ${scheme}`,
    );
  }
  if (u.username !== "" || u.password !== "") {
    throw invalid(
      param,
      redirected
        ? `${param} redirected to a URL with credentials; Folio does not send credentials`
        : `${param} must not contain credentials (user:password@); Folio only fetches public documents`,
    );
  }
  return u;
}

function resolveLocation(location: string, base: URL, param: string): string {
  try {
    return new URL(location, base).href;
  } catch {
    throw invalid(param, `${param} redirected to an invalid URL`);
  }
}

/**
 * Resolves the URL's host once and checks every address. Returns the
 * address to connect to: the first one, already checked.
 */
async function resolveChecked(
  url: URL,
  lookup: HostLookup,
  allow: readonly AllowRule[],
  param: string,
  redirected: boolean,
  signal: AbortSignal,
): Promise<ResolvedAddress> {
  const port = url.port !== "" ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
  // WHATWG URL already turns 0x7f.1 and friends into dotted quads; parsing
  // again is a second line in case a host ever reaches here unnormalised.
  const literal = parseHostLiteral(url.hostname);
  let found: ResolvedAddress[];
  if (literal !== null) {
    found = [{ address: literal, family: literal.includes(":") ? 6 : 4 }];
  } else {
    try {
      found = await abortable(lookup(url.hostname), signal);
    } catch (err) {
      if (signal.aborted) throw err;
      throw new FolioError("invalid_request", `the host of ${param} could not be resolved`, { param, cause: err });
    }
    if (found.length === 0) throw invalid(param, `the host of ${param} could not be resolved`);
  }
  for (const { address } of found) {
    const reason = isForbiddenAddress(address);
    if (reason !== null && !isAllowed(allow, address, port, reason)) {
      const where = redirected ? `${param} redirected to a location that resolves to` : `${param} resolves to`;
      throw invalid(param, `${where} ${describeReason(reason)}; Folio only fetches public addresses`);
    }
  }
  // Only the first address is tried: falling back to the others would need
  // one pinned connection attempt per address, and every one is checked anyway.
  const first = (found[0] as ResolvedAddress).address;
  const canonical = parseHostLiteral(first) ?? first;
  return { address: canonical, family: canonical.includes(":") ? 6 : 4 };
}

/**
 * A one-hop client whose only way to open a socket is to the checked
 * address. undici asks its connector for every connection; ours replaces
 * the host name with the address, so no lookup happens after the check.
 */
function pinnedClient(url: URL, target: ResolvedAddress, timeoutMs: number): Client {
  const connector = buildConnector({ timeout: timeoutMs, allowH2: false, maxCachedSessions: 0 });
  const tls = url.protocol === "https:";
  const servername = tls && parseHostLiteral(url.hostname) === null ? url.hostname : undefined;
  const connect: buildConnector.connector = (options, callback) => {
    connector({ ...options, hostname: target.address, ...(servername !== undefined ? { servername } : {}) }, callback);
  };
  return new Client(url.origin, {
    connect,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    pipelining: 1,
  });
}

async function readBounded(res: Dispatcher.ResponseData, maxBytes: number, param: string): Promise<Buffer> {
  const tooLarge = () =>
    new FolioError("payload_too_large", `the document at ${param} is larger than the limit of ${maxBytes} bytes`, {
      param,
      extra: { max_bytes: maxBytes },
    });
  const declared = firstHeader(res.headers["content-length"]);
  if (declared !== undefined && /^\d+$/.test(declared.trim()) && Number(declared.trim()) > maxBytes) {
    discard(res.body);
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of res.body) {
    const buf = chunk as Buffer;
    total += buf.length;
    if (total > maxBytes) {
      discard(res.body);
      throw tooLarge();
    }
    chunks.push(buf);
  }
  return Buffer.concat(chunks, total);
}

/** One allow-list entry, parsed. */
export type AllowRule =
  | { kind: "cidr"; range: [ipaddr.IPv4 | ipaddr.IPv6, number] }
  | { kind: "address"; address: string; port: number | null };

/**
 * Parses {@link FetchPolicy.allow}. Throws a FolioError (`internal_error`)
 * naming the bad entry, so a configuration loader can call it at start.
 */
export function parseFetchAllowList(entries: readonly string[]): AllowRule[] {
  return entries.map((entry) => {
    const bad = (why: string) => new FolioError("internal_error", `fetch allow entry '${entry}' is invalid: ${why}`);
    const e = entry.trim();
    if (e.includes("/")) {
      if (!ipaddr.isValidCIDR(e)) throw bad("not a CIDR");
      const [addr, bits] = ipaddr.parseCIDR(e);
      return { kind: "cidr", range: [addr, bits] };
    }
    let host = e;
    let port: number | null = null;
    const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(e);
    if (bracketed) {
      host = bracketed[1] as string;
      port = bracketed[2] !== undefined ? Number(bracketed[2]) : null;
    } else if (e.split(":").length === 2) {
      const [h, p] = e.split(":") as [string, string];
      if (!/^\d+$/.test(p)) throw bad("the port is not a number");
      host = h;
      port = Number(p);
    }
    if (port !== null && (port < 1 || port > 65535)) throw bad("the port is out of range");
    const addr = normalizeAddress(host);
    if (addr === null) throw bad("not an IP address");
    return { kind: "address", address: addr.toString(), port };
  });
}

function isAllowed(rules: readonly AllowRule[], address: string, port: number, reason: ForbiddenReason): boolean {
  if (reason === "invalid") return false;
  const addr = normalizeAddress(address);
  if (addr === null) return false;
  return rules.some((rule) => {
    if (rule.kind === "address") return rule.address === addr.toString() && (rule.port === null || rule.port === port);
    // A broad range must not open the metadata service by accident.
    if (reason === "metadata") return false;
    const [net, bits] = rule.range;
    return net.kind() === addr.kind() && addr.match(net, bits);
  });
}

async function systemLookup(hostname: string): Promise<ResolvedAddress[]> {
  const found = await dnsLookup(hostname, { all: true, order: "verbatim" });
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}

/**
 * Stops reading a body we will not use. undici reports a body destroyed
 * before its end as an `error` event; with nobody listening that would be
 * an uncaught exception, so listen and drop it.
 */
function discard(body: Dispatcher.ResponseData["body"]): void {
  body.on("error", () => undefined);
  body.destroy();
}

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function seconds(ms: number): string {
  return String(Math.round(ms / 10) / 100);
}

function errorCode(err: unknown): string | undefined {
  if (typeof err === "object" && err !== null && "code" in err && typeof err.code === "string") return err.code;
  return undefined;
}

function isTimeoutError(err: unknown): boolean {
  const code = errorCode(err);
  return code === "UND_ERR_CONNECT_TIMEOUT" || code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_BODY_TIMEOUT" || code === "ETIMEDOUT";
}

/** A reason a client can act on, without addresses, ports or stack details. */
/** A network failure in a few words, without addresses. */
export function describeNetworkError(err: unknown): string {
  const code = errorCode(err) ?? "";
  if (code === "ECONNREFUSED") return "the connection was refused";
  if (code === "ECONNRESET" || code === "UND_ERR_SOCKET" || code === "EPIPE") return "the connection was closed early";
  if (code === "EHOSTUNREACH" || code === "ENETUNREACH") return "the host is unreachable";
  if (/CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code)) return "its TLS certificate could not be verified";
  if (code === "HPE_INVALID_CONSTANT" || code.startsWith("HPE_") || code === "UND_ERR_INFO") return "the server's response was not valid HTTP";
  return "the connection failed";
}
