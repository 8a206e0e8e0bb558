/**
 * Routing strategies: the spec's fixed static mapping from a strategy name to
 * one model (spec "Models", "Behaviours that hold"). Nothing here measures,
 * benchmarks or compares models: each strategy has an ordered preference list
 * of model ids from configuration, and the first id that is in the live
 * catalog right now wins.
 *
 * Fallback rule (docs/models.md "Strategies and fallback"):
 * 1. the first configured id present in the current catalog is used;
 * 2. a later configured id is used only when every id before it has left the
 *    catalog (reported as `fallback: true` with a reason);
 * 3. when no configured id is present (or no upstream is configured at all),
 *    the strategy resolves to the local engine, which is always present.
 *
 * `accuracy` is the same as `quality`, `balanced` the same as `speed` (and the
 * default). The alias model ids `folio/<strategy>` select the same models.
 */
import { DEFAULT_STRATEGY, STRATEGIES, type Strategy } from "../../contracts/index.ts";
import { FolioError } from "../../platform/errors/index.ts";

export { DEFAULT_STRATEGY, STRATEGIES, type Strategy };

/** Prefix of the alias model ids (`folio/quality` … `folio/balanced`). */
export const ALIAS_PREFIX = "folio/";

/**
 * Preference lists of model ids, one per distinct routing policy. Ids may
 * name upstream or local models; order matters (first present wins).
 */
export interface StrategyConfig {
  /** Backs `quality` and `accuracy`: the high-capability general vision model. */
  quality: string[];
  /** Backs `speed` and `balanced`: the fast general vision model. */
  speed: string[];
  /** Backs `cost`: the low-cost vision model. */
  cost: string[];
}

/**
 * Defaults, chosen from vision models that are in the recorded OpenRouter
 * catalog (test/fixtures/openrouter/openrouter_models_2025-05-23.json) and
 * that have stable, non-preview ids where one exists, so the first choice
 * normally holds. Operators override these by configuration.
 *
 * - quality: GPT-4.1, then Claude Sonnet 4, then Gemini 2.5 Pro (preview id).
 * - speed: GPT-4.1 mini, then Gemini 2.0 Flash.
 * - cost: GPT-4.1 nano, then Gemma 3 27B.
 */
export const DEFAULT_STRATEGY_CONFIG: Readonly<StrategyConfig> = Object.freeze({
  quality: ["openai/gpt-4.1", "anthropic/claude-sonnet-4", "google/gemini-2.5-pro-preview"],
  speed: ["openai/gpt-4.1-mini", "google/gemini-2.0-flash-001"],
  cost: ["openai/gpt-4.1-nano", "google/gemma-3-27b-it"],
});

export function isStrategy(value: unknown): value is Strategy {
  return typeof value === "string" && (STRATEGIES as readonly string[]).includes(value);
}

/**
 * Validates a strategy value from a request.
 * @param param the request field named in the error (`strategy`,
 *   `provider_preferences.strategy`)
 * @throws FolioError `invalid_request` (400) naming `param` and the allowed values
 */
export function parseStrategy(value: unknown, param: string): Strategy {
  if (isStrategy(value)) return value;
  const shown = typeof value === "string" ? `'${value.slice(0, 64)}'` : `a ${value === null ? "null" : typeof value}`;
  throw new FolioError("invalid_request", `${param} must be one of ${STRATEGIES.join(", ")}; got ${shown}`, { param });
}

/** The strategy an alias model id selects (`folio/speed` → `speed`), else undefined. */
export function aliasStrategy(modelId: string): Strategy | undefined {
  if (!modelId.startsWith(ALIAS_PREFIX)) return undefined;
  const name = modelId.slice(ALIAS_PREFIX.length);
  return isStrategy(name) ? name : undefined;
}

/** The alias model id of a strategy (`quality` → `folio/quality`). */
export function aliasId(strategy: Strategy): string {
  return `${ALIAS_PREFIX}${strategy}`;
}

/** The configured preference list behind a strategy. */
export function strategyPreferences(strategy: Strategy, config: StrategyConfig): readonly string[] {
  switch (strategy) {
    case "quality":
    case "accuracy":
      return config.quality;
    case "speed":
    case "balanced":
      return config.speed;
    case "cost":
      return config.cost;
  }
}

export interface StrategyResolution {
  /** The model id the strategy selects now. */
  model: string;
  /** True when the first configured id was not used. */
  fallback: boolean;
  /** Why a fallback happened; absent when the first choice holds. */
  reason?: string;
}

/**
 * Applies the fallback rule (see the file header).
 * @param available whether an id is in the current catalog
 * @param localFallback the local engine id used when no configured id is available
 */
export function resolveStrategy(
  strategy: Strategy,
  config: StrategyConfig,
  available: (id: string) => boolean,
  localFallback: string,
): StrategyResolution {
  const configured = strategyPreferences(strategy, config);
  const missing: string[] = [];
  for (const id of configured) {
    if (available(id)) {
      if (missing.length === 0) return { model: id, fallback: false };
      return {
        model: id,
        fallback: true,
        reason: `${listIds(missing)} ${missing.length === 1 ? "is" : "are"} not in the current catalog; using the next configured model ${id}`,
      };
    }
    missing.push(id);
  }
  const reason =
    configured.length === 0
      ? `no model is configured for ${strategy}; using the local engine ${localFallback}`
      : `none of the configured models (${listIds(configured)}) is in the current catalog; using the local engine ${localFallback}`;
  return { model: localFallback, fallback: true, reason };
}

function listIds(ids: readonly string[]): string {
  return ids.join(", ");
}
