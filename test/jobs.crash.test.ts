/**
 * Durable jobs survive SIGKILL of every Folio process (issue 28, docs/jobs.md):
 * an edge, an extraction service and two workers run as real `folio`
 * processes against a Postgres database of this file's own; in the middle of
 * a job every one of them is SIGKILLed (no shutdown runs), then all are
 * started again. The job finishes with every page stored once, each page's
 * text right, the ledger equal to the pricing rule on the pages read (one
 * charge per page, never two), one usage entry, nothing held. At least one
 * range shows it was claimed again after its holder died. An office document
 * killed while the conversion service converts it (runsc sandboxes) is
 * converted again after the restart and its conversion charged once.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Decimal, chargeComponent } from "../internal/billing/index.ts";
import { adminCreateAccount } from "../internal/cli/admin/index.ts";
import { migrateToLatest, type DatabaseHandle } from "../internal/platform/db/index.ts";
import { cer } from "./cer.ts";
import { startFolio, type FolioProcess } from "./folio-processes.ts";
import { pagedDocx } from "../internal/sandbox/testdocs.ts";
import { call, privateDatabase } from "./harness.ts";
import { freePort } from "./support.ts";
import { sharingAssets } from "./sandbox-assets.ts";

const FIXTURES = join(import.meta.dirname, "fixtures", "ocr");
const PDF = readFileSync(join(FIXTURES, "ten-pages.pdf"));
/** Pages of the office document: enough that LibreOffice takes a while over it, so the kill lands while it converts. */
const DOCX_PAGES = 40;
const truth = (n: number) => readFileSync(join(FIXTURES, `ten-pages.page-${n}.txt`), "utf8");
const PAGE_CENTS = new Decimal("0.1");
/** Short leases: a killed worker's range is claimed again 3 s after its last renewal. */
const LEASE_SECONDS = "3";

let database: DatabaseHandle & { url: string };
let running: FolioProcess[] = [];
const ports = { edge: 0, extraction: 0, extractionMetrics: 0, conversion: 0, conversionMetrics: 0, workers: [0, 0] };
/** The conversion service's sandboxes, this file's own. */
let sandboxDir: string;

async function startAll(): Promise<void> {
  const conversionAddress = `127.0.0.1:${ports.conversion}`;
  const base = { DATABASE_URL: database.url, FOLIO_JOB_RANGE_PAGES: "2", FOLIO_CONVERSION_ADDRESS: conversionAddress };
  const [extraction, conversion] = await Promise.all([
    startFolio(
      "extraction",
      { FOLIO_GRPC_HOST: "127.0.0.1", FOLIO_GRPC_PORT: String(ports.extraction), FOLIO_METRICS_HOST: "127.0.0.1", FOLIO_METRICS_PORT: String(ports.extractionMetrics) },
      `http://127.0.0.1:${ports.extractionMetrics}/metrics`,
    ),
    startFolio(
      "conversion",
      {
        FOLIO_GRPC_HOST: "127.0.0.1",
        FOLIO_GRPC_PORT: String(ports.conversion),
        FOLIO_METRICS_HOST: "127.0.0.1",
        FOLIO_METRICS_PORT: String(ports.conversionMetrics),
        FOLIO_SANDBOX: "runsc",
        FOLIO_SANDBOX_WORK_DIR: sandboxDir,
        FOLIO_CONVERSION_CONCURRENCY: "1",
        FOLIO_RUNSC_RESTORE: "false",
      },
      `http://127.0.0.1:${ports.conversionMetrics}/metrics`,
    ),
  ]);
  const address = `127.0.0.1:${ports.extraction}`;
  const [edge, ...workers] = await Promise.all([
    startFolio(
      "edge",
      { ...base, FOLIO_HTTP_HOST: "127.0.0.1", FOLIO_HTTP_PORT: String(ports.edge), FOLIO_METRICS_ENABLED: "false", FOLIO_EXTRACTION_ADDRESS: address, FOLIO_AUTH_FAILURES_PER_MINUTE: "0" },
      `http://127.0.0.1:${ports.edge}/healthz`,
    ),
    ...ports.workers.map((port) =>
      startFolio(
        "worker",
        {
          ...base,
          FOLIO_EXTRACTION_ADDRESS: address,
          FOLIO_METRICS_HOST: "127.0.0.1",
          FOLIO_METRICS_PORT: String(port),
          FOLIO_WORKER_CONCURRENCY: "1",
          FOLIO_JOB_LEASE_SECONDS: LEASE_SECONDS,
          FOLIO_WORKER_POLL_SECONDS: "0.1",
        },
        `http://127.0.0.1:${port}/metrics`,
      ),
    ),
  ]);
  running = [extraction, conversion, edge!, ...workers];
}

/**
 * The sandboxes' folder, gone: a conversion service killed and not started
 * again (a test that failed in between) leaves its sandboxes' job folders
 * mounted (tmpfs), which the next service to start there would remove.
 */
function removeSandboxDir(dir: string): void {
  const mounts = readFileSync("/proc/mounts", "utf8").split("\n").map((l) => l.split(" ")[1] ?? "").filter((m) => m.startsWith(`${dir}/`));
  for (const m of mounts) spawnSync("umount", ["--lazy", m]);
  rmSync(dir, { recursive: true, force: true });
}

beforeAll(async () => {
  database = await privateDatabase("jobs_crash");
  await migrateToLatest(database.db);
  ports.edge = await freePort();
  ports.extraction = await freePort();
  ports.extractionMetrics = await freePort();
  ports.conversion = await freePort();
  ports.conversionMetrics = await freePort();
  ports.workers = [await freePort(), await freePort()];
  sandboxDir = sharingAssets(mkdtempSync(join(tmpdir(), "folio-jobs-crash-")));
}, 60_000);
afterAll(async () => {
  await Promise.all(running.map((p) => p.stop()));
  await database?.close();
  if (sandboxDir) removeSandboxDir(sandboxDir);
});

describe("a durable job through SIGKILL of every process", () => {
  it("finishes after a restart with every page stored once and the money exact", async () => {
    await startAll();
    const edge = { url: `http://127.0.0.1:${ports.edge}` };
    const made = await adminCreateAccount({ db: database.db }, { email: `crash-${process.pid}@test.invalid`, name: "crash", creditsCents: 10_000, requestsPerMinute: 10_000 });
    const key = made.api_key.key;
    const accountId = made.account.id;
    const created = await call(edge, "POST", "/v1/ocr/jobs", key, { base64: PDF.toString("base64"), model: "local/tesseract" });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    const id = created.body.id as string;

    // Mid-job: some ranges stored, some not.
    const stored = async () => Number((await database.db.selectFrom("ocr_job_pages").select(sql<string>`count(*)`.as("n")).where("job_id", "=", id).executeTakeFirstOrThrow()).n);
    await vi.waitFor(async () => expect(await stored()).toBeGreaterThanOrEqual(2), { timeout: 120_000, interval: 50 });
    await Promise.all(running.map((p) => p.kill()));
    const atKill = await stored();
    expect(atKill, "the job was over before the kill: the test proves nothing").toBeLessThan(10);
    const leasedAtKill = await database.db.selectFrom("ocr_job_ranges").select("first_page").where("job_id", "=", id).where("status", "=", "leased").execute();

    await startAll();
    await vi.waitFor(async () => expect((await call(edge, "GET", `/v1/ocr/jobs/${id}`, key)).body.status).toBe("succeeded"), { timeout: 180_000, interval: 250 });
    const job = (await call(edge, "GET", `/v1/ocr/jobs/${id}`, key)).body;
    expect(job).toMatchObject({ page_count: 10, pages_completed: 10, pages_failed: 0 });

    // Every page once, read right.
    const pages = await database.db.selectFrom("ocr_job_pages").select(["page_number", "page"]).where("job_id", "=", id).orderBy("page_number").execute();
    expect(pages.map((p) => p.page_number)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    for (const p of pages) expect(cer((p.page as { page: { text: string } }).page.text, truth(p.page_number))).toBeLessThan(0.1);

    // The money: the rule on ten pages, one usage entry, nothing held.
    const expected = chargeComponent(PAGE_CENTS.mul(10)).chargedCents;
    const debited = await database.db.selectFrom("ledger_entries").select(sql<string>`coalesce(-sum(amount_cents), 0)`.as("n")).where("request_id", "=", id).executeTakeFirstOrThrow();
    expect(Number(debited.n)).toBe(expected);
    const usage = await database.db.selectFrom("usage_logs").selectAll().where("id", "=", id).execute();
    expect(usage).toHaveLength(1);
    expect(usage[0]).toMatchObject({ status: "success", pages_processed: 10, cost_cents: String(expected) });
    const account = await database.db.selectFrom("accounts").select(["balance_cents", "held_cents"]).where("id", "=", accountId).executeTakeFirstOrThrow();
    expect({ balance: Number(account.balance_cents), held: Number(account.held_cents) }).toEqual({ balance: 10_000 - expected, held: 0 });
    const holds = await database.db.selectFrom("holds").select("status").where("account_id", "=", accountId).execute();
    expect(holds.map((h) => h.status)).toEqual(["settled"]);

    // The ranges the dead workers held were claimed again after their leases.
    expect(leasedAtKill.length, "no range was being read at the kill").toBeGreaterThan(0);
    const again = await database.db.selectFrom("ocr_job_ranges").select(["first_page", "attempts"]).where("job_id", "=", id).where("first_page", "in", leasedAtKill.map((r) => r.first_page)).execute();
    for (const r of again) expect(r.attempts, `range from page ${r.first_page}`).toBeGreaterThanOrEqual(2);
    // The events: numbered without a gap, one final.
    const events = await database.db.selectFrom("ocr_job_events").select(["sequence", "type"]).where("job_id", "=", id).orderBy("sequence").execute();
    expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1));
    expect(events.filter((e) => e.type === "ocr.job.succeeded")).toHaveLength(1);
  }, 400_000);

  it("an office document killed while it converts is converted again after the restart, its conversion charged once", async () => {
    // The processes the first test restarted, or new ones when it failed before that.
    if (!running.length || running.some((p) => p.child.exitCode !== null || p.child.signalCode !== null)) {
      await Promise.all(running.map((p) => p.kill()));
      await startAll();
    }
    const edge = { url: `http://127.0.0.1:${ports.edge}` };
    const made = await adminCreateAccount({ db: database.db }, { email: `crash-office-${process.pid}@test.invalid`, name: "crash", creditsCents: 50, requestsPerMinute: 10_000 });
    const key = made.api_key.key;
    const created = await call(edge, "POST", "/v1/ocr/jobs", key, { base64: pagedDocx(DOCX_PAGES).toString("base64"), model: "local/tesseract" });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    const id = created.body.id as string;

    // A worker holds the conversion range (the job's pages not counted yet); the conversion takes seconds in a sandbox.
    const converting = async () => {
      const leased = await database.db.selectFrom("ocr_job_ranges").select("status").where("job_id", "=", id).where("status", "=", "leased").execute();
      const job = await database.db.selectFrom("ocr_jobs").select("page_count").where("id", "=", id).executeTakeFirstOrThrow();
      return leased.length > 0 && job.page_count === null;
    };
    await vi.waitFor(async () => expect(await converting()).toBe(true), { timeout: 60_000, interval: 10 });
    await Promise.all(running.map((p) => p.kill()));
    const atKill = await database.db.selectFrom("ocr_jobs").select("page_count").where("id", "=", id).executeTakeFirstOrThrow();
    expect(atKill.page_count, "the conversion had committed before the kill: the test proves nothing").toBeNull();
    const chargedAtKill = await database.db.selectFrom("ledger_entries").select("id").where("request_id", "=", id).execute();
    expect(chargedAtKill).toHaveLength(0);

    await startAll();
    await vi.waitFor(async () => expect((await call(edge, "GET", `/v1/ocr/jobs/${id}`, key)).body.status).toBe("succeeded"), { timeout: 180_000, interval: 250 });
    const job = (await call(edge, "GET", `/v1/ocr/jobs/${id}`, key)).body;
    expect(job).toMatchObject({ page_count: DOCX_PAGES, pages_completed: DOCX_PAGES, pages_failed: 0 });
    const pages = await database.db.selectFrom("ocr_job_pages").select(["page_number", "page"]).where("job_id", "=", id).orderBy("page_number").execute();
    expect(pages.map((p) => p.page_number)).toEqual(Array.from({ length: DOCX_PAGES }, (_, i) => i + 1));
    // Each page's number is in its heading ("Page N") and its body text ("… of page N."): one of the two read is enough.
    for (const p of pages) expect((p.page as { page: { text: string } }).page.text).toMatch(new RegExp(`\\bpage ${p.page_number}\\b`, "i"));

    // The conversion ran in the restarted service and is charged once, beside the pages at 0.1 cent each,
    // each component in whole cents (the conversion at least 1): one usage entry, nothing held.
    const metrics = await (await fetch(`http://127.0.0.1:${ports.conversionMetrics}/metrics`)).text();
    expect(metrics).toMatch(/folio_conversions_total\{[^}]*outcome="ok"[^}]*\} [1-9]/);
    const ledger = await database.db.selectFrom("ledger_entries").select(["amount_cents", "description"]).where("request_id", "=", id).execute();
    expect(ledger.filter((l) => /conversion/.test(l.description ?? "")), JSON.stringify(ledger)).toHaveLength(1);
    const pagesCents = chargeComponent(PAGE_CENTS.mul(DOCX_PAGES)).chargedCents;
    const conversionCents = -ledger.filter((l) => /conversion/.test(l.description ?? "")).reduce((n, l) => n + Number(l.amount_cents), 0);
    expect(conversionCents).toBeGreaterThanOrEqual(1);
    const debited = -ledger.reduce((n, l) => n + Number(l.amount_cents), 0);
    expect(debited).toBe(pagesCents + conversionCents);
    expect(job.usage.total_cost_cents).toBe(debited);
    const usage = await database.db.selectFrom("usage_logs").selectAll().where("id", "=", id).execute();
    expect(usage).toHaveLength(1);
    expect(usage[0]).toMatchObject({ status: "success", pages_processed: DOCX_PAGES, cost_cents: String(debited) });
    const account = await database.db.selectFrom("accounts").select(["balance_cents", "held_cents"]).where("id", "=", made.account.id).executeTakeFirstOrThrow();
    expect({ balance: Number(account.balance_cents), held: Number(account.held_cents) }).toEqual({ balance: 50 - debited, held: 0 });
  }, 400_000);
});
