/**
 * Network faults for tests, on loopback: a server that accepts connections
 * and never answers (a frozen primary), a port nothing listens on (a refused
 * connection), a TCP proxy to a real server that can be frozen and thawed
 * while its connections stay open (a partition, a stopped process) or taken
 * down and up again (a restart), and a private redis-server that can be
 * killed and started again empty; a runsc sandbox killed mid-document; and
 * a database whose answer to a statement it applied is lost.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile, readdir } from "node:fs/promises";
import { createServer, connect, type AddressInfo, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { Kysely, PostgresDialect } from "kysely";
import pg from "pg";
import type { Database, DB } from "../internal/platform/db/index.ts";
import { guardedPool } from "../internal/platform/db/pool.ts";

export interface Fault {
  port: number;
  close(): Promise<void>;
}

function listen(server: Server, port = 0): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", reject);
      resolve((server.address() as AddressInfo).port);
    });
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
  /**
   * A restart: cuts every open connection and stops listening, so new ones
   * are refused until {@link up}. Also ends a freeze (what was held is dropped).
   */
  down(): Promise<void>;
  /** Listens again on the same port. */
  up(): Promise<void>;
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
    down: async () => {
      frozen = false;
      held.length = 0;
      if (server.listening) await closeServer(server, sockets);
    },
    up: async () => {
      if (!server.listening) await listen(server, port);
    },
    close: () => (server.listening ? closeServer(server, sockets) : Promise.resolve()),
  };
}

/** A freezable proxy in front of the server a URL names (`defaultPort` when the URL gives none). */
export function proxyFor(url: string, defaultPort: number): Promise<FreezableProxy> {
  const target = new URL(url);
  return freezableProxy({ host: target.hostname, port: Number(target.port || defaultPort) });
}

/** `url` with its host and port replaced by loopback `port`. */
export function viaPort(url: string, port: number): string {
  const u = new URL(url);
  u.hostname = "127.0.0.1";
  u.port = String(port);
  return u.toString();
}

/** A redis-server of the test's own, on loopback, keeping nothing on disk: a restart loses every key. */
export class PrivateRedis {
  #child: ChildProcess | null = null;
  constructor(readonly port: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const child = spawn("redis-server", ["--bind", "127.0.0.1", "--port", String(this.port), "--save", "", "--appendonly", "no"], { stdio: ["ignore", "pipe", "pipe"] });
    this.#child = child;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("redis-server did not start within 10 s")), 10_000);
      child.stdout!.on("data", (d: Buffer) => {
        if (/Ready to accept connections/.test(d.toString())) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once("exit", (code) => reject(new Error(`redis-server exited with ${code}`)));
    });
  }

  /** Kills it (SIGKILL: no shutdown, nothing saved). */
  async stop(): Promise<void> {
    const child = this.#child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGKILL");
    await exited;
    this.#child = null;
  }
}

/**
 * Kills the runsc sandbox that is converting a document under `workDir` (the
 * conversion service's FOLIO_SANDBOX_WORK_DIR: keep it private to the test,
 * so no other test's sandbox is touched). Waits until a job folder holds its
 * `job.json` (the document was handed in), then SIGKILLs that sandbox's
 * `runsc-sandbox` process: gVisor's kernel, with LibreOffice and everything
 * else inside it. A waiting (pre-started) sandbox's process is looked up
 * while it waits, so the kill follows the hand-in within one look (25 ms):
 * a warm sandbox converts a page in about a second, and a search of /proc
 * after the hand-in could outlast that on a loaded machine.
 */
export async function killSandboxInFlight(workDir: string, timeoutMs = 30_000): Promise<{ sandbox: string; pid: number }> {
  const jobs = join(workDir, "jobs");
  const until = Date.now() + timeoutMs;
  const pids = new Map<string, number>();
  while (Date.now() < until) {
    for (const id of await readdir(jobs).catch(() => [] as string[])) {
      const pid = pids.get(id) ?? (await processWithArgs("runsc-sandbox", `--bundle=${join(jobs, id, "bundle")}`));
      if (pid === undefined) continue;
      pids.set(id, pid);
      if (!existsSync(join(jobs, id, "job", "job.json"))) continue;
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        continue; // done already: its job folder goes with it
      }
      return { sandbox: id, pid };
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`no sandbox under ${workDir} was converting a document within ${timeoutMs} ms`);
}

/** The pid of a process named `name` with `arg` among its arguments (from /proc). */
async function processWithArgs(name: string, arg: string): Promise<number | undefined> {
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const argv = (await readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "")).split("\0");
    if (argv[0]?.endsWith(name) && argv.includes(arg)) return Number(entry);
  }
  return undefined;
}

export interface AnswerLost {
  /** Kysely over the production pool guard, like a process's database. */
  db: DB;
  /** The next statement whose SQL matches is applied by Postgres, and its caller gets a lost connection (a 503). */
  loseNext(sql: RegExp): void;
  close(): Promise<void>;
}

/**
 * A database whose answer to a statement it applied never arrives: the
 * connection was cut just after the server committed (a restart, a
 * partition), or a frozen server ran what it had been sent once it resumed.
 * The caller cannot tell that from a statement that never ran.
 */
export function answerLost(databaseUrl: string): AnswerLost {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  let lose: RegExp | undefined;
  const patched = new WeakSet<pg.PoolClient>();
  const connect = pool.connect.bind(pool) as () => Promise<pg.PoolClient>;
  pool.connect = (async () => {
    const client = await connect();
    if (!patched.has(client)) {
      patched.add(client);
      const query = client.query.bind(client) as (text: string, values?: unknown[]) => Promise<unknown>;
      client.query = (async (text: string, values?: unknown[]) => {
        const result = await query(text, values);
        if (lose?.test(text)) {
          lose = undefined;
          throw new Error("Connection terminated unexpectedly");
        }
        return result;
      }) as typeof client.query;
    }
    return client;
  }) as typeof pool.connect;
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: guardedPool(pool) }) });
  return {
    db,
    loseNext: (sql) => {
      lose = sql;
    },
    close: () => db.destroy(),
  };
}
