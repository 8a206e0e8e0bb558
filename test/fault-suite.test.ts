/**
 * The fault suite (issue 12): one production-shaped stack (edge, extraction
 * and runsc conversion services over loopback gRPC, real Postgres behind a
 * proxy that can restart or freeze it, a private real Redis, real tesseract;
 * the fake OpenRouter upstream is the only test double) serves a paced
 * stream of paid POST /v1/ocr from clients that behave as
 * docs/idempotency.md asks, while one fault at a time is injected. After each:
 * the books reconcile with what the clients got (test/paid-traffic.ts
 * `reconcile`), and the same processes serve again, none restarted but the
 * one the fault killed. Recovery (fault end → first 200 of a request sent
 * after it) is printed per scenario; docs/benchmarks/faults.md "Faults: recovery".
 * Bounds are for a loaded 2-core machine, not benchmarks.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Decimal, chargeComponent } from "../internal/billing/index.ts";
import { startFolio, type FolioProcess } from "./folio-processes.ts";
import { call, createTestAccount, databaseUrl, startStack, startTestExtraction, testDb, type TestStack } from "./harness.ts";
import { PrivateRedis, killSandboxInFlight, proxyFor, viaPort, type FreezableProxy } from "./faults.ts";
import { startFakeUpstream, type FakeUpstream } from "./fake-upstream.ts";
import { PaidTraffic, reconcile, summary, type Allowed, type Books, type RequestSpec, type SentRequest } from "./paid-traffic.ts";
import { freePort, ocrFixturePath } from "./support.ts";
import { sharingAssets } from "./sandbox-assets.ts";

/**
 * Models of the fake upstream (it answers at once unless scripted). Requests
 * with a key use one set, requests without one another: the usage rows say
 * which kind each charge was (`reconcile`).
 */
const KEYED = { fast: "openai/gpt-4.1-mini", slow: "openai/gpt-4.1-nano", local: "local/tesseract" };
const BARE = { fast: "google/gemini-2.0-flash-001", slow: "openai/gpt-4.1" };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One line per scenario, printed at the end (docs/benchmarks/faults.md "Faults: recovery"). */
const recoveries: string[] = [];
let redis: PrivateRedis;
let postgres: FreezableProxy;
let upstream: FakeUpstream;
let sandboxDir: string;
let stack: TestStack;
/** A small page (a heading and four lines of english.png at 200 DPI): tesseract reads it in a fraction of a second. */
let smallPage: string;

beforeAll(async () => {
  smallPage = (await sharp(ocrFixturePath("english.png")).extract({ left: 150, top: 200, width: 1400, height: 320 }).png().toBuffer()).toString("base64");
  redis = new PrivateRedis(await freePort());
  await redis.start();
  postgres = await proxyFor(databaseUrl(), 5432);
  upstream = await startFakeUpstream();
  // The sandboxes of this file only, so that killing one never touches another test's.
  sandboxDir = sharingAssets(await mkdtemp(join(tmpdir(), "folio-fault-suite-")));
  stack = await startStack({
    upstream,
    // deny: while Redis is down requests are refused (503), so its recovery shows; `local` would serve through it.
    edgeEnv: { DATABASE_URL: viaPort(databaseUrl(), postgres.port), REDIS_URL: redis.url, FOLIO_RATELIMIT_ON_REDIS_ERROR: "deny" },
    // Pre-started sandboxes, not restored ones: with restored (woken) pool sandboxes, run after the other
    // faults of this file, killSandboxInFlight (test/faults.ts) found no sandbox converting the keyed document
    // within 90 s and both documents converted (200): the kill missed them. Not yet understood; restores are
    // tested in internal/sandbox/runsc.restore.test.ts.
    conversion: { FOLIO_SANDBOX: "runsc", FOLIO_SANDBOX_WORK_DIR: sandboxDir, FOLIO_CONVERSION_CONCURRENCY: "1", FOLIO_RUNSC_PRESTART: "true", FOLIO_RUNSC_RESTORE: "false" },
  });
}, 180_000);

afterAll(async () => {
  postgres?.thaw();
  await postgres?.up();
  // Every request has its answer by now. After an aborted request the fetch client opens a spare
  // connection it may never send on; the edge's close would wait for it until Fastify's keep-alive
  // timeout (72 s), past this hook's limit.
  stack?.edge.app.server.closeAllConnections();
  await stack?.close();
  await upstream?.close();
  await postgres?.close();
  await redis?.stop();
  if (sandboxDir) await rm(sandboxDir, { recursive: true, force: true });
  console.log(`Faults: recovery (fault end → first 200 sent after it)\n${recoveries.join("\n")}`);
});

/** The stream: every other request with a key; one in eight read by tesseract (with a key), the rest by the (fake) upstream. */
const mixed =
  (scenario: string) =>
  (i: number): RequestSpec => {
    if (i % 2) return { label: "upstream", body: { base64: smallPage, model: BARE.fast } };
    const local = i % 8 === 6;
    return { label: local ? "tesseract" : "upstream", body: { base64: smallPage, model: local ? KEYED.local : KEYED.fast }, key: `${scenario}-${i}` };
  };

/** A slow page (the fake upstream waits `ms` before answering it) with a key and one without. */
function slowPages(ms: number): { keyed: RequestSpec; bare: RequestSpec; reading: Promise<void> } {
  for (const model of [KEYED.slow, BARE.slow]) upstream.script(model, { kind: "delay", ms }, { times: 1 });
  return {
    keyed: { label: "slow", body: { base64: smallPage, model: KEYED.slow }, key: `slow-${ms}` },
    bare: { label: "slow", body: { base64: smallPage, model: BARE.slow } },
    reading: upstreamReading([KEYED.slow, BARE.slow]),
  };
}

/** How long a kill waits for a sandbox converting a document (test/faults.ts killSandboxInFlight). */
const KILL_WAIT_MS = 90_000;

/** An office document, read by the keyed or the bare fast model. */
const docx = async (keyed: boolean) => ({
  base64: (await readFile(new URL("./fixtures/convert/one-page.docx", import.meta.url))).toString("base64"),
  model: keyed ? KEYED.fast : BARE.fast,
});

interface FaultWindow {
  start: number;
  end: number;
}

/**
 * Runs the stream on a fresh account, injects the fault after 1.5 s of
 * steady traffic, waits for the first 200 of a request (that `which` picks)
 * sent after the fault's end, runs 1.5 s more, then checks: the fault was
 * seen, every request sent a second after recovery ended in 200, the books
 * reconcile, recovery within `recoveryWithinMs`.
 */
async function underFault(
  name: string,
  inject: (traffic: PaidTraffic) => Promise<FaultWindow>,
  o: { allowed?: Allowed; which?: (r: SentRequest) => boolean; recoveryWithinMs?: number } = {},
): Promise<{ traffic: PaidTraffic; books: Books; recoveryMs: number }> {
  const which = o.which ?? (() => true);
  const acc = await createTestAccount({ creditsCents: 100_000 });
  const traffic = new PaidTraffic(stack.edge, acc.adminKey);
  const stream = traffic.stream(200, mixed(name));
  let fault: FaultWindow;
  let recovered: number;
  try {
    await sleep(1500);
    fault = await inject(traffic);
    recovered = await traffic.firstSuccessAfter(fault.end, 30_000, which);
    await sleep(1500);
  } finally {
    await stream.stop();
  }
  const recoveryMs = recovered - fault.end;
  const during = traffic.requests.flatMap((r) => r.answers.filter((a) => a.sentAt >= fault.start - 1000 && a.sentAt <= fault.end));
  const after = traffic.requests.filter((r) => which(r) && r.answers[0]!.sentAt >= recovered + 1000);
  const books = await reconcile(acc.accountId, traffic, o.allowed);
  const line = `${name}: fault ${fault.end - fault.start} ms, recovery ${recoveryMs} ms; ${books.requests} requests, answers ${books.answers}; ${books.successes} paid 200s, ${books.unanswered} charged without a 200, ${books.chargedCents} cents; holds and keys closed ${books.closedMs} ms after the traffic`;
  console.log(line);
  recoveries.push(line);
  expect(during.filter((a) => a.status !== 200).length, `the fault was seen: answers around it ${summary(during)}`).toBeGreaterThan(0);
  expect(
    after.filter((r) => r.answers.at(-1)!.status !== 200).map((r) => `${r.n} ${r.label}: ${summary(r.answers)}`),
    "every request sent a second after recovery ended in 200",
  ).toEqual([]);
  expect(recoveryMs, line).toBeLessThan(o.recoveryWithinMs ?? 15_000);
  return { traffic, books, recoveryMs };
}

/** A dependency down for `ms`: what `down` and `up` do to it. */
const outage =
  (ms: number, down: () => unknown, up: () => unknown) =>
  async (): Promise<FaultWindow> => {
    const start = Date.now();
    await down();
    await sleep(ms);
    await up();
    return { start, end: Date.now() };
  };

const byLabel = (traffic: PaidTraffic, label: string) => traffic.requests.filter((r) => r.label === label);
const show = (r: SentRequest) => `${r.label} key=${r.key ?? "-"}: ${r.answers.map((a) => `${a.status}${a.code ? ` ${a.code}` : ""}${a.replayed ? " (replayed)" : ""}`).join(", ")}`;

/** Resolves once the upstream has been asked one more page of each of `models` than when called. */
function upstreamReading(models: string[]): Promise<void> {
  const asked = () => models.map((m) => upstream.chatRequests().filter((r) => r.model === m).length);
  const before = asked();
  return (async () => {
    while (asked().some((n, i) => n <= before[i]!)) await sleep(10);
  })();
}

describe("faults while paid requests flow, on one stack", () => {
  it("Redis killed and started empty: 503 with Retry-After while it is down, nothing charged without a 200, served again without a restart", async () => {
    await underFault("Redis restart, data lost", outage(2000, () => redis.stop(), () => redis.start()));
  }, 120_000);

  it("Postgres restarting (every connection cut, new ones refused for 3 s): 503s, no lost hold or key, served again on the same pool", async () => {
    await underFault("Postgres restart", outage(3000, () => postgres.down(), () => postgres.up()), { allowed: { lostCommits: true } });
  }, 120_000);

  it("Postgres frozen for 4 s (connections open, nothing answered): 503s within the timeouts, no lost hold or key, served again once it answers", async () => {
    await underFault("Postgres freeze", outage(4000, () => postgres.freeze(), () => postgres.thaw()), { allowed: { lostCommits: true } });
  }, 120_000);

  it("the extraction service killed while pages are read, then started again on its address: 503 uncharged, the keyed retry succeeds, the edge reconnects by itself", async () => {
    const { traffic } = await underFault("extraction killed", async (t) => {
      const slow = slowPages(10_000);
      void t.send(slow.keyed);
      void t.send(slow.bare);
      await slow.reading;
      const start = Date.now();
      const port = stack.extraction.grpc.address.split(":").at(-1)!;
      stack.extraction.grpc.server.forceShutdown();
      await stack.extraction.close();
      await sleep(2000);
      stack.extraction = await startTestExtraction({ upstream, env: { FOLIO_GRPC_PORT: port } });
      return { start, end: Date.now() };
    });
    const [keyed, bare] = [byLabel(traffic, "slow").find((r) => r.key)!, byLabel(traffic, "slow").find((r) => !r.key)!];
    expect(keyed.answers[0], show(keyed)).toMatchObject({ status: 503, code: "service_unavailable" });
    expect(keyed.answers.at(-1), show(keyed)).toMatchObject({ status: 200, replayed: false });
    expect(bare.answers, show(bare)).toMatchObject([{ status: 503, code: "service_unavailable" }]);
  }, 120_000);

  it("a conversion sandbox killed mid-document: that document fails uncharged, its keyed retry converts, and the next documents convert", async () => {
    const [keyedDoc, bareDoc] = [await docx(true), await docx(false)];
    const { traffic } = await underFault(
      "conversion sandbox killed",
      async (t) => {
        const start = Date.now();
        const bare = t.send({ label: "office", body: bareDoc });
        await killSandboxInFlight(sandboxDir, KILL_WAIT_MS);
        await bare;
        void t.send({ label: "office", body: keyedDoc, key: "office-doc" });
        // Under a loaded machine (the whole suite in parallel) the killed sandbox's cleanup and its
        // replacement can hold the one slot for tens of seconds before the next document is handed in.
        await killSandboxInFlight(sandboxDir, KILL_WAIT_MS);
        const end = Date.now();
        // A new document after the fault, besides the keyed retry.
        void t.send({ label: "office", body: bareDoc });
        return { start, end };
      },
      { which: (r) => r.label === "office", recoveryWithinMs: 30_000 },
    );
    const office = byLabel(traffic, "office");
    const [bare, keyed, next] = [office[0]!, office.find((r) => r.key)!, office.at(-1)!];
    console.log(`conversion sandbox killed: ${office.map(show).join(" | ")}`);
    // A sandbox killed by a signal reads as a document it could not hold (runsc.ts): 500 conversion_failed,
    // uncharged (reconcile allows no charged failure here), so the key is given back and the retry runs.
    expect(bare.answers, show(bare)).toMatchObject([{ status: 500, code: "conversion_failed" }]);
    expect(keyed.answers[0], show(keyed)).toMatchObject({ status: 500, code: "conversion_failed" });
    expect(keyed.answers.at(-1), show(keyed)).toMatchObject({ status: 200 });
    expect(next.answers, show(next)).toMatchObject([{ status: 200 }]);
  }, 300_000);

  it("a client that disconnects while its page is read: with a key its retry gets the one answer (409 meanwhile); without one the work is charged once", async () => {
    const { traffic, books } = await underFault(
      "client disconnects",
      async (t) => {
        const start = Date.now();
        const slow = slowPages(3000);
        void t.send({ ...slow.keyed, disconnectOn: slow.reading });
        void t.send({ ...slow.bare, disconnectOn: slow.reading });
        await slow.reading;
        return { start, end: Date.now() };
      },
      { allowed: { abandoned: true } },
    );
    const [keyed, bare] = [byLabel(traffic, "slow").find((r) => r.key)!, byLabel(traffic, "slow").find((r) => !r.key)!];
    expect(keyed.answers[0], show(keyed)).toMatchObject({ status: 0, code: "aborted" });
    expect(keyed.answers.at(-1), show(keyed)).toMatchObject({ status: 200, replayed: true });
    expect(bare.answers, show(bare)).toMatchObject([{ status: 0, code: "aborted" }]);
    // /v1/ocr does not stop work its client left: the unkeyed page was read and charged, once.
    expect(books.unanswered).toBe(1);
  }, 120_000);

  it("a jobs worker SIGKILLed mid-job while requests flow: another worker finishes the job, every page once, billed once; the traffic's books reconcile", async () => {
    const jobAccount = await createTestAccount({ creditsCents: 10_000 });
    const acc = await createTestAccount({ creditsCents: 100_000 });
    const traffic = new PaidTraffic(stack.edge, acc.adminKey);
    const stream = traffic.stream(200, mixed("worker killed"));
    const workerEnv = async () => {
      const port = await freePort();
      return {
        env: {
          DATABASE_URL: viaPort(databaseUrl(), postgres.port),
          FOLIO_EXTRACTION_ADDRESS: stack.extraction.grpc.address,
          FOLIO_METRICS_HOST: "127.0.0.1",
          FOLIO_METRICS_PORT: String(port),
          FOLIO_WORKER_CONCURRENCY: "1",
          FOLIO_JOB_LEASE_SECONDS: "3",
          FOLIO_WORKER_POLL_SECONDS: "0.1",
        },
        ready: `http://127.0.0.1:${port}/metrics`,
      };
    };
    let second: FolioProcess | undefined;
    try {
      const created = await call(stack.edge, "POST", "/v1/ocr/jobs", jobAccount.adminKey, { base64: (await readFile(ocrFixturePath("ten-pages.pdf"))).toString("base64"), model: KEYED.local });
      expect(created.status, JSON.stringify(created.body)).toBe(202);
      const id = created.body.id as string;
      const w = await workerEnv();
      const first = await startFolio("worker", w.env, w.ready);
      // Every read of the job must answer it: a failure shows what the edge said instead.
      const job = async () => {
        const got = await call(stack.edge, "GET", `/v1/ocr/jobs/${id}`, jobAccount.adminKey);
        expect(got.status, JSON.stringify(got.body)).toBe(200);
        return got;
      };
      await vi.waitFor(async () => expect((await job()).body.pages_completed).toBeGreaterThanOrEqual(2), { timeout: 60_000, interval: 100 });
      await first.kill();
      expect((await job()).body.pages_completed, "the job was over before the kill").toBeLessThan(10);
      const w2 = await workerEnv();
      second = await startFolio("worker", w2.env, w2.ready);
      await vi.waitFor(async () => expect((await job()).body.status).toBe("succeeded"), { timeout: 90_000, interval: 250 });
      const done = (await job()).body;
      expect(done).toMatchObject({ pages_completed: 10, pages_failed: 0 });
      const { db } = await testDb();
      const pages = await db.selectFrom("ocr_job_pages").select("page_number").where("job_id", "=", id).orderBy("page_number").execute();
      expect(pages.map((p) => p.page_number)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      const usage = await db.selectFrom("usage_logs").select(["cost_cents", "pages_processed"]).where("id", "=", id).execute();
      expect(usage).toEqual([{ cost_cents: String(done.usage.total_cost_cents), pages_processed: 10 }]);
      const debited = await db.selectFrom("ledger_entries").select(sql<string>`coalesce(-sum(amount_cents), 0)`.as("n")).where("request_id", "=", id).executeTakeFirstOrThrow();
      expect(Number(debited.n)).toBe(chargeComponent(new Decimal("0.1").mul(10)).chargedCents);
      const account = await db.selectFrom("accounts").select(["balance_cents", "held_cents"]).where("id", "=", jobAccount.accountId).executeTakeFirstOrThrow();
      expect(Number(account.held_cents)).toBe(0);
      expect(Number(account.balance_cents)).toBe(10_000 - Number(debited.n));
    } finally {
      await stream.stop();
      await second?.stop();
    }
    const books = await reconcile(acc.accountId, traffic);
    expect(books.successes).toBeGreaterThan(0);
  }, 240_000);
});

