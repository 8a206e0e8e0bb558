/**
 * The live model catalog: local engines (always present) plus the vision
 * models of an OpenRouter-compatible upstream, refreshed in the background.
 *
 * - Refresh: `GET {baseUrl}/models` with `Authorization: Bearer <key>` every
 *   `refreshMs`. A failed refresh (network error, timeout, non-2xx, a body
 *   that is not a model list, or a list with no usable model while the last
 *   good one had some) keeps serving the last good list and records the error;
 *   nothing is thrown to callers.
 * - Staleness: with an upstream configured, the catalog is stale when it never
 *   loaded, when the last refresh failed, or when the list is older than two
 *   refresh periods. `snapshot()` reports it so responses and metrics can say
 *   how old the list is.
 * - Without an upstream: only local models, every strategy resolves to the
 *   local engine, and nothing is ever fetched.
 * - Validation of a requested `model` always uses the current list.
 */
import { FolioError } from "../../platform/errors/index.ts";
import type { CatalogModel, CatalogSnapshot } from "../types.ts";
import {
  DEFAULT_STRATEGY,
  STRATEGIES,
  aliasStrategy,
  parseStrategy,
  resolveStrategy,
  strategyPreferences,
  type Strategy,
  type StrategyConfig,
  type StrategyResolution,
} from "./strategies.ts";
import { parseUpstreamModels, type ExcludedModel } from "./upstream.ts";
import { readBounded } from "../util.ts";

export interface CatalogLogger {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface CatalogOptions {
  /** The OpenRouter-compatible API; absent = local models only. */
  upstream?: { baseUrl: string; apiKey: string };
  /** Background refresh period, milliseconds (> 0). */
  refreshMs: number;
  /** Local engines, always listed; the first one is the strategies' fallback. */
  localModels: CatalogModel[];
  strategies: StrategyConfig;
  fetchImpl?: typeof fetch;
  log?: CatalogLogger;
  /** Milliseconds since the epoch; `Date.now` by default. */
  clock?: () => number;
  /** Called after every upstream refresh attempt (metrics). */
  onRefresh?: (ok: boolean) => void;
  /** Time limit of one `GET /models`, milliseconds (default 15 000). */
  requestTimeoutMs?: number;
}


export interface ResolvedModel {
  model: CatalogModel;
  /** How it was chosen: an explicit id, an alias id, or a strategy. */
  via: "model" | "alias" | "strategy";
  /** The strategy behind an alias or strategy choice. */
  strategy?: Strategy;
}

export interface ResolveRequest {
  model?: string;
  strategy?: string;
  /** The request field named when `strategy` is invalid (default `strategy`). */
  param?: string;
}

export interface StrategyRow {
  strategy: Strategy;
  configured: string[];
  resolved: string;
  fallback: boolean;
  reason?: string;
}

const DEFAULT_REQUEST_TIMEOUT_MS = 15_000;
/** Bound on the model list body; the real list is a few megabytes at most. */
const MAX_MODELS_BODY_BYTES = 32 * 1024 * 1024;

export class Catalog {
  readonly #upstream: { baseUrl: string; apiKey: string } | undefined;
  readonly #refreshMs: number;
  readonly #local: CatalogModel[];
  readonly #strategies: StrategyConfig;
  readonly #fetch: typeof fetch;
  readonly #log: CatalogLogger | undefined;
  readonly #clock: () => number;
  readonly #onRefresh: ((ok: boolean) => void) | undefined;
  readonly #timeoutMs: number;

  #upstreamModels: CatalogModel[] = [];
  #models: CatalogModel[];
  #byId: Map<string, CatalogModel>;
  #excluded: ExcludedModel[] = [];
  #fetchedAtMs: number | null = null;
  #lastRefreshOk = false;
  #lastError: string | null = null;
  #inflight: Promise<boolean> | null = null;
  #timer: NodeJS.Timeout | null = null;

  constructor(opts: CatalogOptions) {
    if (!(opts.refreshMs > 0)) throw new RangeError("refreshMs must be > 0");
    this.#upstream = opts.upstream ? { baseUrl: opts.upstream.baseUrl.replace(/\/+$/, ""), apiKey: opts.upstream.apiKey } : undefined;
    this.#refreshMs = opts.refreshMs;
    this.#local = opts.localModels.map(freezeModel);
    this.#strategies = {
      quality: [...opts.strategies.quality],
      speed: [...opts.strategies.speed],
      cost: [...opts.strategies.cost],
    };
    this.#fetch = opts.fetchImpl ?? fetch;
    this.#log = opts.log;
    this.#clock = opts.clock ?? Date.now;
    this.#onRefresh = opts.onRefresh;
    this.#timeoutMs = opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.#models = [...this.#local];
    this.#byId = new Map(this.#models.map((m) => [m.id, m]));
  }

  get upstreamConfigured(): boolean {
    return this.#upstream !== undefined;
  }

  /** Loads the list once (awaited, never throws), then refreshes in the background. */
  async start(): Promise<void> {
    if (!this.#upstream) return;
    await this.refresh();
    if (this.#timer === null) {
      this.#timer = setInterval(() => void this.refresh(), this.#refreshMs);
      this.#timer.unref();
    }
  }

  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  /**
   * Fetches the upstream list now. Concurrent calls share one request.
   * @returns whether the list was refreshed (true without an upstream: there is nothing to refresh)
   */
  refresh(): Promise<boolean> {
    if (!this.#upstream) return Promise.resolve(true);
    this.#inflight ??= this.#refreshOnce(this.#upstream).finally(() => {
      this.#inflight = null;
    });
    return this.#inflight;
  }

  async #refreshOnce(upstream: { baseUrl: string; apiKey: string }): Promise<boolean> {
    let ok = false;
    try {
      const json = await this.#fetchModels(upstream);
      const parsed = parseUpstreamModels(json, Math.floor(this.#clock() / 1000));
      if (parsed.models.length === 0 && this.#upstreamModels.length > 0) {
        throw new Error(`the upstream list has no usable vision model (${parsed.excluded.length} entries excluded); keeping the last good list`);
      }
      this.#install(parsed.models);
      this.#excluded = parsed.excluded;
      this.#fetchedAtMs = this.#clock();
      this.#lastError = null;
      ok = true;
      this.#log?.info({ models: parsed.models.length, excluded: parsed.excluded.length }, "model catalog refreshed");
    } catch (err) {
      this.#lastError = describe(err, upstream.apiKey);
      this.#log?.warn(
        { error: this.#lastError, lastGoodAgeSeconds: this.snapshot().ageSeconds },
        "model catalog refresh failed; serving the last good list",
      );
    }
    this.#lastRefreshOk = ok;
    try {
      this.#onRefresh?.(ok);
    } catch {
      // A metrics callback must not break the catalog.
    }
    return ok;
  }

  async #fetchModels(upstream: { baseUrl: string; apiKey: string }): Promise<unknown> {
    const res = await this.#fetch(`${upstream.baseUrl}/models`, {
      method: "GET",
      headers: { authorization: `Bearer ${upstream.apiKey}`, accept: "application/json" },
      signal: AbortSignal.timeout(this.#timeoutMs),
    });
    const text = await readBounded(res, MAX_MODELS_BODY_BYTES, "GET /models body");
    if (!res.ok) throw new Error(`GET /models answered HTTP ${res.status}`);
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new Error("GET /models answered with a body that is not JSON");
    }
  }

  #install(upstreamModels: CatalogModel[]): void {
    const localIds = new Set(this.#local.map((m) => m.id));
    this.#upstreamModels = upstreamModels.filter((m) => !localIds.has(m.id)).map(freezeModel);
    this.#models = [...this.#local, ...this.#upstreamModels];
    this.#byId = new Map(this.#models.map((m) => [m.id, m]));
  }

  snapshot(): CatalogSnapshot {
    const now = this.#clock();
    const fetchedAtMs = this.#fetchedAtMs;
    const ageMs = fetchedAtMs === null ? null : Math.max(0, now - fetchedAtMs);
    const stale = this.#upstream !== undefined && (fetchedAtMs === null || !this.#lastRefreshOk || (ageMs ?? 0) > 2 * this.#refreshMs);
    return {
      models: [...this.#models],
      fetchedAtMs,
      ageSeconds: ageMs === null ? null : Math.floor(ageMs / 1000),
      stale,
      lastError: this.#lastError,
      upstreamConfigured: this.#upstream !== undefined,
    };
  }

  /** Entries the last successful refresh left out, with reasons (diagnostics). */
  excluded(): readonly ExcludedModel[] {
    return this.#excluded;
  }

  /** A model of the current list by its real id (aliases are not models). */
  get(id: string): CatalogModel | undefined {
    return this.#byId.get(id);
  }

  /**
   * Chooses the model for a request: `model` wins over `strategy`; alias ids
   * select their strategy; without either, the default strategy (balanced).
   * A given `strategy` is validated even when `model` wins, so a typo is a
   * 400 rather than silently ignored.
   * @throws FolioError `unsupported_model` (param `model`) for an id not in the current list;
   *   `invalid_request` (param `req.param ?? "strategy"`) for an unknown strategy
   */
  resolve(req: ResolveRequest): ResolvedModel {
    const strategy = req.strategy === undefined ? undefined : parseStrategy(req.strategy, req.param ?? "strategy");
    if (req.model !== undefined) {
      const alias = aliasStrategy(req.model);
      if (alias !== undefined) return { model: this.#resolveStrategyModel(alias), via: "alias", strategy: alias };
      const model = this.#byId.get(req.model);
      if (model === undefined) {
        const shown = req.model.length > 200 ? `${req.model.slice(0, 200)}…` : req.model;
        throw new FolioError(
          "unsupported_model",
          `model '${shown}' is not in the current catalog of priced image models; GET /v1/models lists the models you can use`,
          { param: "model" },
        );
      }
      return { model, via: "model" };
    }
    const chosen = strategy ?? DEFAULT_STRATEGY;
    return { model: this.#resolveStrategyModel(chosen), via: "strategy", strategy: chosen };
  }

  /** What every strategy resolves to now (for `/v1/models/recommended`). */
  strategyTable(): StrategyRow[] {
    return STRATEGIES.map((strategy) => {
      const r = this.#resolution(strategy);
      const row: StrategyRow = {
        strategy,
        configured: [...strategyPreferences(strategy, this.#strategies)],
        resolved: r.model,
        fallback: r.fallback,
      };
      if (r.reason !== undefined) row.reason = r.reason;
      return row;
    });
  }

  #resolution(strategy: Strategy): StrategyResolution {
    const fallbackId = this.#local[0]?.id ?? "";
    const r = resolveStrategy(strategy, this.#strategies, (id) => this.#byId.has(id), fallbackId);
    if (!this.#upstream && r.fallback && r.model === fallbackId) {
      return { model: fallbackId, fallback: true, reason: `no upstream is configured; using the local engine ${fallbackId}` };
    }
    return r;
  }

  #resolveStrategyModel(strategy: Strategy): CatalogModel {
    const r = this.#resolution(strategy);
    const model = this.#byId.get(r.model);
    if (model === undefined) {
      throw new FolioError("service_unavailable", `no model is available for strategy '${strategy}'`, { retryable: true });
    }
    return model;
  }
}

function freezeModel(m: CatalogModel): CatalogModel {
  return Object.freeze({
    ...m,
    inputKinds: Object.freeze([...m.inputKinds]) as CatalogModel["inputKinds"],
    pricing: Object.freeze({ ...m.pricing }),
    ...(m.languages ? { languages: Object.freeze([...m.languages]) as string[] } : {}),
  });
}

function describe(err: unknown, apiKey: string): string {
  let msg: string;
  if (err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError")) msg = "GET /models timed out";
  else if (err instanceof Error) {
    const cause = (err as { cause?: { code?: unknown } }).cause;
    msg = typeof cause?.code === "string" ? `${err.message} (${cause.code})` : err.message;
  } else msg = String(err);
  return apiKey === "" ? msg : msg.split(apiKey).join("[redacted]");
}

/** Reads a body as text, refusing more than `max` bytes. */
