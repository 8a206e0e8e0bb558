/**
 * Network faults for tests, on loopback: a server that accepts connections
 * and never answers (a frozen primary), a port nothing listens on (a refused
 * connection), and a TCP proxy to a real server that can be frozen and
 * thawed while its connections stay open (a partition, a stopped process).
 */
import { createServer, connect, type AddressInfo, type Server, type Socket } from "node:net";

export interface Fault {
  port: number;
  close(): Promise<void>;
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port));
  });
}

function closeServer(server: Server, sockets: Set<Socket>): Promise<void> {
  for (const s of sockets) s.destroy();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** Accepts every connection, reads what it is sent, never writes a byte. */
export async function frozenListener(): Promise<Fault> {
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    sockets.add(s);
    s.on("error", () => {});
    s.on("close", () => sockets.delete(s));
  });
  const port = await listen(server);
  return { port, close: () => closeServer(server, sockets) };
}

/** A loopback port with nothing listening on it: connections are refused. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  const port = await listen(server);
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface FreezableProxy extends Fault {
  /** Stops forwarding both ways; connections stay open, bytes are held. */
  freeze(): void;
  /** Forwards what was held and carries on. */
  thaw(): void;
  /** Client connections open now (a client closing one is seen even while frozen). */
  openConnections(): number;
}

/** A TCP proxy to `target` that can be frozen. */
export async function freezableProxy(target: { host: string; port: number }): Promise<FreezableProxy> {
  let frozen = false;
  const held: (() => void)[] = [];
  const sockets = new Set<Socket>();
  const track = (s: Socket) => {
    sockets.add(s);
    s.on("error", () => {});
    s.on("close", () => sockets.delete(s));
  };
  const forward = (from: Socket, to: Socket) => {
    from.on("data", (chunk: Buffer) => {
      if (frozen) held.push(() => to.write(chunk));
      else to.write(chunk);
    });
    from.on("close", () => {
      if (frozen) held.push(() => to.destroy());
      else to.destroy();
    });
  };
  const clients = new Set<Socket>();
  const server = createServer((client) => {
    track(client);
    clients.add(client);
    client.on("close", () => clients.delete(client));
    const upstream = connect(target.port, target.host);
    track(upstream);
    forward(client, upstream);
    forward(upstream, client);
  });
  const port = await listen(server);
  return {
    port,
    freeze: () => {
      frozen = true;
    },
    thaw: () => {
      frozen = false;
      for (const release of held.splice(0)) release();
    },
    openConnections: () => clients.size,
    close: () => closeServer(server, sockets),
  };
}

/** `url` with its host and port replaced by loopback `port`. */
/** A freezable proxy in front of the server a URL names (`defaultPort` when the URL gives none). */
export function proxyFor(url: string, defaultPort: number): Promise<FreezableProxy> {
  const target = new URL(url);
  return freezableProxy({ host: target.hostname, port: Number(target.port || defaultPort) });
}

export function viaPort(url: string, port: number): string {
  const u = new URL(url);
  u.hostname = "127.0.0.1";
  u.port = String(port);
  return u.toString();
}
