/**
 * Loopback HTTP servers for the fetch tests. Each one records every TCP
 * connection and request it receives, so a test can prove a refused
 * address was never contacted at all.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { FolioError } from "../platform/errors/index.ts";
import type { FetchedDocument, FetchPolicy, HostLookup, ResolvedAddress } from "./fetch.ts";

export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
}

export interface TestServer {
  host: string;
  port: number;
  /** `http://host:port` with IPv6 hosts bracketed. */
  origin: string;
  /** TCP connections accepted, whether or not a request followed. */
  connections: number;
  requests: SeenRequest[];
  close(): Promise<void>;
}

export type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** Starts a server on `host:port` (port 0: any free one). */
export async function startServer(handler: Handler, host = "127.0.0.1", port = 0): Promise<TestServer> {
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    state.requests.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers });
    handler(req, res);
  });
  server.on("connection", (socket: Socket) => {
    state.connections++;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  const state: TestServer = {
    host,
    port: bound,
    origin: `http://${host.includes(":") ? `[${host}]` : host}:${bound}`,
    connections: 0,
    requests: [],
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return state;
}

/** Starts a server on the first of `hosts` that can be bound with `port`; null when none can. */
export async function startServerOnAny(handler: Handler, hosts: readonly string[], port: number): Promise<TestServer | null> {
  for (const host of hosts) {
    try {
      return await startServer(handler, host, port);
    } catch {
      // address not available on this machine (no IPv6, or only 127.0.0.1 on lo): try the next
    }
  }
  return null;
}

/** A lookup from a fixed table that counts its calls; unknown names fail like NXDOMAIN. */
export function tableLookup(table: Record<string, readonly string[]>): HostLookup & { calls: string[] } {
  const calls: string[] = [];
  const lookup = async (hostname: string): Promise<ResolvedAddress[]> => {
    calls.push(hostname);
    const found = table[hostname];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
    return found.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  };
  return Object.assign(lookup, { calls });
}

export function policy(overrides: Partial<FetchPolicy> = {}): FetchPolicy {
  return { maxBytes: 1024 * 1024, timeoutMs: 3000, maxRedirects: 5, allow: [], ...overrides };
}

/** The FolioError a fetch fails with; a fetch that succeeds fails the test, showing what came back. */
export async function refusal(p: Promise<FetchedDocument>): Promise<FolioError> {
  let got: FetchedDocument;
  try {
    got = await p;
  } catch (err) {
    if (err instanceof FolioError) return err;
    throw err;
  }
  throw new Error(`expected a refusal, got HTTP body ${JSON.stringify(got.bytes.toString("utf8").slice(0, 200))} from ${got.finalUrl}`);
}
