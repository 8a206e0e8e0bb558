/**
 * Paid traffic under faults, and the books checked against it: clients that
 * send a paced stream of paid requests the way docs/idempotency.md asks (an
 * `Idempotency-Key` on some of them, the same key again after an answer a
 * retry may change, after its `Retry-After`), recording every answer; and
 * one checker of the account's usage rows, ledger, balance, holds and keys
 * against those answers ({@link reconcile}).
 */
import { expect } from "vitest";
import { call, testDb, type Call } from "./harness.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One answer a client got (or did not get: status 0). */
export interface Answer {
  /** HTTP status; 0 when no answer came (the client gave up, the connection failed). */
  status: number;
  /** `error.code` of an error answer; "aborted" or "network" when no answer came. */
  code?: string;
  /** The result's id (a 200). */
  id?: string;
  /** `usage.total_cost_cents` of a 200. */
  costCents?: number;
  replayed: boolean;
  retryAfter: string | null;
  /** Date.now() when the attempt was sent and when its answer (or failure) came. */
  sentAt: number;
  at: number;
}

/** One request as its client sees it: one or more attempts under the same key. */
export interface SentRequest {
  n: number;
  label: string;
  path: string;
  /** `model` of its body: what its usage rows are logged under. */
  model?: string;
  key?: string;
  answers: Answer[];
  /** Its client gave up waiting on purpose (it disconnected): the work may have been done and charged. */
  abandoned: boolean;
  done: boolean;
}

export interface RequestSpec {
  label: string;
  body: unknown;
  /** Default /v1/ocr. */
  path?: string;
  /** Sent as Idempotency-Key; the client retries under it until a final answer. */
  key?: string;
  /** The first attempt's connection is closed when this settles (a client that goes away). */
  disconnectOn?: Promise<unknown>;
}

/** Answers a retry under the same key may change (docs/idempotency.md): no answer at all, 409, 429, any 5xx not replayed. */
const retryable = (a: Answer) => !a.replayed && (a.status === 0 || a.status === 409 || a.status === 429 || a.status >= 500);

export class PaidTraffic {
  readonly requests: SentRequest[] = [];
  readonly #running = new Set<Promise<unknown>>();

  constructor(
    private readonly edge: { url: string },
    private readonly apiKey: string,
    /** How long a client keeps retrying one request. */
    private readonly patienceMs = 45_000,
  ) {}

  /** Sends one request and retries it (with a key) until a final answer; resolves with what its client saw. */
  send(spec: RequestSpec): Promise<SentRequest> {
    const model = (spec.body as { model?: unknown }).model;
    const req: SentRequest = {
      n: this.requests.length,
      label: spec.label,
      path: spec.path ?? "/v1/ocr",
      ...(typeof model === "string" ? { model } : {}),
      ...(spec.key ? { key: spec.key } : {}),
      answers: [],
      abandoned: false,
      done: false,
    };
    this.requests.push(req);
    const run = this.#run(req, spec);
    this.#running.add(run);
    void run.finally(() => this.#running.delete(run));
    return run;
  }

  /** Sends `make(i)` every `everyMs` until stopped; `stop()` resolves once every request has its final answer. */
  stream(everyMs: number, make: (i: number) => RequestSpec): { stop(): Promise<void> } {
    let i = 0;
    const timer = setInterval(() => void this.send(make(i++)), everyMs);
    return {
      stop: async () => {
        clearInterval(timer);
        await this.settled();
      },
    };
  }

  async settled(): Promise<void> {
    while (this.#running.size) await Promise.all(this.#running);
  }

  /** When the first 200 came among attempts (of requests `which` picks) sent at or after `t`, waiting up to `timeoutMs`. */
  async firstSuccessAfter(t: number, timeoutMs: number, which: (r: SentRequest) => boolean = () => true): Promise<number> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const hits = this.requests.filter(which).flatMap((r) => r.answers.filter((a) => a.status === 200 && a.sentAt >= t).map((a) => a.at));
      if (hits.length) return Math.min(...hits);
      if (Date.now() > until) throw new Error(`no 200 within ${timeoutMs} ms of the fault's end; answers since: ${summary(this.requests.filter(which).flatMap((r) => r.answers.filter((a) => a.sentAt >= t)))}`);
      await sleep(50);
    }
  }

  async #run(req: SentRequest, spec: RequestSpec): Promise<SentRequest> {
    const until = Date.now() + this.patienceMs;
    for (let attempt = 0; ; attempt++) {
      const disconnect = attempt === 0 ? spec.disconnectOn : undefined;
      const a = await this.#attempt(req.path, spec, disconnect);
      req.answers.push(a);
      if (a.code === "aborted") req.abandoned = true;
      if (!req.key || !retryable(a) || Date.now() > until) break;
      await sleep(Math.min(3, Number(a.retryAfter ?? "0.5") || 0.5) * 1000);
    }
    req.done = true;
    return req;
  }

  async #attempt(path: string, spec: RequestSpec, disconnect?: Promise<unknown>): Promise<Answer> {
    const sentAt = Date.now();
    const abort = new AbortController();
    void disconnect?.then(() => abort.abort());
    let r: Call;
    try {
      r = await call(this.edge, "POST", path, this.apiKey, spec.body, { headers: spec.key ? { "idempotency-key": spec.key } : {}, signal: abort.signal });
    } catch {
      return { status: 0, code: abort.signal.aborted ? "aborted" : "network", replayed: false, retryAfter: null, sentAt, at: Date.now() };
    }
    const ok = r.status === 200;
    return {
      status: r.status,
      ...(ok ? { id: r.body.id, costCents: r.body.usage?.total_cost_cents } : { code: r.body?.error?.code ?? String(r.body).slice(0, 80) }),
      replayed: r.headers.get("idempotent-replayed") === "true",
      retryAfter: r.headers.get("retry-after"),
      sentAt,
      at: Date.now(),
    };
  }
}

/** "200×41 503 service_unavailable×7 …": what a set of answers was, for messages. */
export function summary(answers: Answer[]): string {
  const counts = new Map<string, number>();
  for (const a of answers) {
    const k = a.status === 200 ? "200" : `${a.status} ${a.code ?? ""}`.trim();
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  return [...counts].map(([k, n]) => `${k}×${n}`).join(" ") || "none";
}

/**
 * Charges without a 200 that docs/billing.md and docs/idempotency.md allow;
 * every other charge must belong to a 200 its client got.
 */
export interface Allowed {
  /**
   * A request without a key whose client disconnected may have been charged:
   * /v1/ocr runs to its end (and settles) once started; the answer is lost
   * with the connection. docs/idempotency.md: such a client should have sent
   * a key (a retry then replays the answer, a 200 this checker sees).
   */
  abandoned?: boolean;
  /**
   * A request without a key answered 503 while the database failed may have
   * been charged: its settlement's COMMIT was sent and its answer lost
   * (docs/billing.md "When the database is down").
   */
  lostCommits?: boolean;
  /**
   * Error codes of failures that may carry a charge: work billed before the
   * request failed is charged and logged as an error row with its charge
   * (docs/billing.md); its client got that error.
   */
  billedFailures?: string[];
}

export interface Books {
  requests: number;
  answers: string;
  successes: number;
  /** Success rows no client got a 200 for (each one allowed, or the check failed). */
  unanswered: number;
  chargedCents: number;
  /** From the end of the traffic until no hold and no running key was left. */
  closedMs: number;
}

/**
 * Checks the account's books against what its clients got, once every
 * request has its final answer:
 *
 * - every 200 has exactly one usage row with its id, status success and the
 *   cost it stated, and (when it cost anything) exactly one ledger debit;
 *   every 200 under one key is the same answer (the same id);
 * - every charged usage row has exactly one debit and every debit a usage
 *   row; a request with a key is charged at most once, and only with the 200
 *   its client got (requests with and without keys must use different
 *   models, which tells their usage rows apart); no charge without a 200 but
 *   those {@link Allowed} says;
 * - no 500 internal_error (only bugs are), and every 503 and 429 carries
 *   Retry-After;
 * - balance = credits − debits = credits − charged usage;
 * - within `closeWithinMs` (the give-back of a hold or key the database
 *   could not take tries every 2 s), no hold is open, `held_cents` is 0 and
 *   no Idempotency-Key is still running; every key answered 200 is stored
 *   done with that answer's id.
 */
export async function reconcile(accountId: string, traffic: PaidTraffic, allowed: Allowed = {}, closeWithinMs = 15_000): Promise<Books> {
  const { db } = await testDb();
  const reqs = traffic.requests;
  const answers = reqs.flatMap((r) => r.answers);
  const got = `answers: ${summary(answers)}`;
  expect(reqs.every((r) => r.done), `every request has its final answer; ${got}`).toBe(true);

  // Holds and keys first: the books are read once nothing can change them any more.
  const ended = Date.now();
  let open: { holds: number; held: number; running: number };
  for (;;) {
    const [holds, account, running] = await Promise.all([
      db.selectFrom("holds").select("id").where("account_id", "=", accountId).where("status", "=", "held").execute(),
      db.selectFrom("accounts").select("held_cents").where("id", "=", accountId).executeTakeFirstOrThrow(),
      db.selectFrom("idempotency_keys").select("key").where("account_id", "=", accountId).where("status", "=", "running").execute(),
    ]);
    open = { holds: holds.length, held: account.held_cents, running: running.length };
    if ((open.holds === 0 && open.held === 0 && open.running === 0) || Date.now() - ended > closeWithinMs) break;
    await sleep(250);
  }
  const closedMs = Date.now() - ended;
  expect(open, `no open hold, nothing held and no running Idempotency-Key within ${closeWithinMs} ms of the traffic's end; ${got}`).toEqual({ holds: 0, held: 0, running: 0 });

  const [usage, ledger, account, keys] = await Promise.all([
    db.selectFrom("usage_logs").selectAll().where("account_id", "=", accountId).execute(),
    db.selectFrom("ledger_entries").selectAll().where("account_id", "=", accountId).execute(),
    db.selectFrom("accounts").select(["balance_cents", "held_cents"]).where("id", "=", accountId).executeTakeFirstOrThrow(),
    db.selectFrom("idempotency_keys").select(["key", "status", "request_id", "response_status"]).where("account_id", "=", accountId).execute(),
  ]);
  const usageById = new Map(usage.map((u) => [u.id, u]));
  const debits = ledger.filter((l) => l.kind === "debit");
  const debitsOf = (id: string) => debits.filter((l) => l.request_id === id);

  // Every 200: its usage row and its one debit.
  const ok = answers.filter((a) => a.status === 200);
  const answered = new Set(ok.map((a) => a.id!));
  for (const id of answered) {
    const row = usageById.get(id);
    const a = ok.find((x) => x.id === id)!;
    expect(row, `a usage row for the 200 ${id}`).toBeDefined();
    expect({ status: row!.status, cost: Number(row!.cost_cents) }, `the usage row of the 200 ${id}`).toEqual({ status: "success", cost: a.costCents });
    expect(
      debitsOf(id).map((l) => l.amount_cents),
      `the debits of the 200 ${id}`,
    ).toEqual(a.costCents! > 0 ? [-a.costCents!] : []);
  }
  // One answer per key: a retry got the first one again.
  for (const r of reqs.filter((x) => x.key)) {
    const ids = new Set(r.answers.filter((a) => a.status === 200).map((a) => a.id));
    expect(ids.size, `request ${r.n} (${r.label}, key ${r.key}) got one answer, not several; its answers: ${summary(r.answers)}`).toBeLessThanOrEqual(1);
    const final = r.answers.at(-1)!;
    if (final.status === 200) {
      expect(keys.find((k) => k.key === r.key), `key ${r.key} keeps its 200`).toMatchObject({ status: "done", request_id: final.id, response_status: 200 });
    }
  }
  // Every charge has exactly one debit, every debit a charge.
  for (const u of usage.filter((x) => Number(x.cost_cents) > 0)) {
    expect(debitsOf(u.id).map((l) => l.amount_cents), `the debits of usage row ${u.id} (${u.status} ${u.error_code ?? ""})`).toEqual([-Number(u.cost_cents)]);
  }
  for (const l of debits) expect(usageById.has(l.request_id ?? ""), `debit ${l.id} of ${l.request_id} has its usage row`).toBe(true);

  // No charge without a 200 but the allowed ones. Requests with and without a key use different
  // models, so each usage row is known to be of one kind or the other.
  const keyedModels = new Set(reqs.filter((r) => r.key).map((r) => r.model));
  const bareModels = new Set(reqs.filter((r) => !r.key).map((r) => r.model));
  expect([...keyedModels].filter((m) => bareModels.has(m)), "requests with and without a key use different models").toEqual([]);
  const unanswered = usage.filter((u) => u.status === "success" && !answered.has(u.id));
  expect(
    unanswered.filter((u) => keyedModels.has(u.model)).map((u) => `${u.id} ${u.model}`),
    `a request with a key is charged once, with the 200 its client got (a retry replays it): success rows of keyed requests no 200 named; ${got}`,
  ).toEqual([]);
  const finals = reqs.filter((r) => !r.key).map((r) => r.answers.at(-1)!);
  const mayBeUnanswered =
    (allowed.abandoned ? reqs.filter((r) => !r.key && r.abandoned).length : 0) + (allowed.lostCommits ? finals.filter((a) => a.status === 503).length : 0);
  expect(unanswered.length, `success rows no client got a 200 for (allowed: ${JSON.stringify(allowed)}): ${unanswered.map((u) => u.id).join(", ")}; ${got}`).toBeLessThanOrEqual(mayBeUnanswered);
  const billedFailures = usage.filter((x) => x.status === "error" && Number(x.cost_cents) > 0);
  for (const u of billedFailures) {
    expect(allowed.billedFailures ?? [], `a charged failure ${u.id} (${u.error_code}, ${u.cost_cents} cents) is one the docs allow`).toContain(u.error_code);
    const told = answers.filter((a) => a.code === u.error_code && !a.replayed).length;
    expect(billedFailures.filter((x) => x.error_code === u.error_code).length, `each charged ${u.error_code} was answered to its client`).toBeLessThanOrEqual(told);
  }

  // Failures map once: no bug answers, and every "try again" says when.
  const bugs = answers.filter((a) => a.code === "internal_error");
  expect(bugs.length, `500 internal_error is only ever a bug; ${got}`).toBe(0);
  const noWhen = answers.filter((a) => (a.status === 503 || a.status === 429) && !/^[1-9]\d*$/.test(a.retryAfter ?? ""));
  expect(noWhen.length, `every 503 and 429 carries Retry-After; ${got}`).toBe(0);

  // The balance is the credits minus what was charged.
  const credits = ledger.filter((l) => l.kind === "credit").reduce((n, l) => n + l.amount_cents, 0);
  const debited = -debits.reduce((n, l) => n + l.amount_cents, 0);
  const charged = usage.reduce((n, u) => n + Number(u.cost_cents), 0);
  expect({ balance: account.balance_cents, charged }, `balance = credits (${credits}) − debits (${debited})`).toEqual({ balance: credits - debited, charged: debited });

  return { requests: reqs.length, answers: summary(answers), successes: answered.size, unanswered: unanswered.length, chargedCents: charged, closedMs };
}
