/**
 * Provider cost of extraction work from catalog prices, exact, in cents
 * (before the platform fee; the fee and rounding are billing/pricing.ts).
 */
import { Decimal, unitCostCents } from "../billing/index.ts";
import type { CatalogModel } from "./types.ts";

export interface WorkDone {
  promptTokens: number;
  completionTokens: number;
  /** Images sent to the model. */
  images: number;
  /** Requests made to the provider. */
  requests: number;
  /** Pages processed (local engines price per page). */
  pages: number;
}

export function computedCostCents(model: CatalogModel, w: WorkDone): Decimal {
  const p = model.pricing;
  let cents = unitCostCents(w.promptTokens, p.prompt).add(unitCostCents(w.completionTokens, p.completion));
  if (p.image) cents = cents.add(unitCostCents(w.images, p.image));
  if (p.request) cents = cents.add(unitCostCents(w.requests, p.request));
  if (p.page) cents = cents.add(unitCostCents(w.pages, p.page));
  return cents;
}

/** Prompt tokens assumed per page image when estimating (a 200-DPI A4 page is ~1-2k tokens on current models). */
export const ESTIMATE_PROMPT_TOKENS_PER_PAGE = 3500;

/**
 * An upper-bound estimate of the provider cost of extracting `pages` pages,
 * for the credit hold: prompt tokens per page as above, and the completion
 * capped by `maxCompletionTokens` (which is sent to the provider as max_tokens).
 */
export function estimateCostCents(model: CatalogModel, pages: number, maxCompletionTokens: number): Decimal {
  if (model.source === "local") return computedCostCents(model, { promptTokens: 0, completionTokens: 0, images: 0, requests: 0, pages });
  return computedCostCents(model, {
    promptTokens: ESTIMATE_PROMPT_TOKENS_PER_PAGE * pages,
    completionTokens: maxCompletionTokens * pages,
    images: pages,
    requests: pages,
    pages: 0,
  });
}

export { Decimal };
