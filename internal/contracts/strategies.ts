/**
 * The routing strategies (spec "Models"): names the API accepts in `strategy`
 * and as `folio/<strategy>` aliases. What each resolves to is the extraction
 * service's catalog (`internal/extraction/catalog/strategies.ts`).
 *
 * No imports: the playground page and the CLI use this module as it is.
 */

/** Every strategy name the API accepts, in the order tables list them. */
export const STRATEGIES = ["quality", "accuracy", "speed", "cost", "balanced"] as const;
export type Strategy = (typeof STRATEGIES)[number];

/** Used when a request names neither a model nor a strategy. */
export const DEFAULT_STRATEGY: Strategy = "balanced";
