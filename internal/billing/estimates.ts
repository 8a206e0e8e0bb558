/**
 * Every cost that is worked out from prices and counts rather than reported
 * by a provider: a model's cost from its catalog prices and the work done,
 * a conversion's from its compute time, the PDF parser's from its pages;
 * and every hold, the upper-bound estimate reserved before work starts.
 * All exact, in cents, before the platform fee; `pricing.ts` turns them into
 * charges.
 */
import { CONVERSION_RATE_USD_PER_MINUTE, Decimal, PDF_PARSER_USD_PER_PAGE, chargeComponent } from "./pricing.ts";

/**
 * Provider prices in US dollars per unit, exact decimal strings, without the
 * platform fee (a catalog model's `pricing`).
 */
export interface UnitPrices {
  /** Per prompt token. */
  prompt: string;
  /** Per completion token. */
  completion: string;
  /** Per input image, when the provider charges one. */
  image?: string;
  /** Per request, when the provider charges one. */
  request?: string;
  /** Per page (local engines). */
  page?: string;
}

/** A model as billing sees it: its prices, and whether it runs on Folio's machines (priced per page). */
export interface PricedModel {
  source: "upstream" | "local";
  pricing: UnitPrices;
}

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

/** Exact provider cost of `count` units at a per-unit dollar price, in cents. */
export function unitCostCents(count: number, usdPerUnit: Decimal | string): Decimal {
  return new Decimal(usdPerUnit).mul(count).mul(100);
}

/** Provider cost of work priced from the catalog (when the provider reported none). */
export function modelCostCents(prices: UnitPrices, w: WorkDone): Decimal {
  let cents = unitCostCents(w.promptTokens, prices.prompt).add(unitCostCents(w.completionTokens, prices.completion));
  if (prices.image) cents = cents.add(unitCostCents(w.images, prices.image));
  if (prices.request) cents = cents.add(unitCostCents(w.requests, prices.request));
  if (prices.page) cents = cents.add(unitCostCents(w.pages, prices.page));
  return cents;
}

/** The work of reading `pages` page images: one request and one image each upstream, one page each on a local engine. */
export function pagesWork(model: PricedModel, pages: number, tokens: { prompt: number; completion: number } = { prompt: 0, completion: 0 }): WorkDone {
  const local = model.source === "local";
  return { promptTokens: tokens.prompt, completionTokens: tokens.completion, images: local ? 0 : pages, requests: local ? 0 : pages, pages: local ? pages : 0 };
}

/** Exact provider cost of sandbox compute time, in cents. */
export function conversionCostCents(computeMillis: number): Decimal {
  if (!Number.isInteger(computeMillis) || computeMillis < 0) throw new RangeError("computeMillis must be a non-negative integer");
  return new Decimal(computeMillis).div(60_000).mul(CONVERSION_RATE_USD_PER_MINUTE).mul(100);
}

/** What a conversion taking `computeMillis` is charged, in whole cents (estimates and price examples). */
export function conversionChargeCents(computeMillis: number): number {
  return chargeComponent(conversionCostCents(Math.round(computeMillis))).chargedCents;
}

/** Exact provider cost of the dedicated PDF parser reading `pages` pages, in cents. */
export function parserCostCents(pages: number): Decimal {
  return unitCostCents(pages, PDF_PARSER_USD_PER_PAGE);
}

/** Prompt tokens assumed per page image when estimating (a 200-DPI A4 page is ~1-2k tokens on current models). */
export const ESTIMATE_PROMPT_TOKENS_PER_PAGE = 3500;

/**
 * An upper bound of the provider cost of reading `pages` page images: prompt
 * tokens per page as above, and the completion capped by
 * `maxCompletionTokens` (which is sent to the provider as max_tokens).
 */
export function modelEstimateCents(model: PricedModel, pages: number, maxCompletionTokens: number): Decimal {
  if (model.source === "local") return modelCostCents(model.pricing, pagesWork(model, pages));
  return modelCostCents(model.pricing, pagesWork(model, pages, { prompt: ESTIMATE_PROMPT_TOKENS_PER_PAGE * pages, completion: maxCompletionTokens * pages }));
}

/** What one request may cost at most, as far as is known before (or during) its work. */
export interface HoldBasis {
  /** The model that reads the pages; absent when no model is called (a plain conversion). */
  model?: PricedModel;
  /** Page images the model reads (counted as at least one when a model is called). */
  pages: number;
  /** Completion tokens per call the model may write (max_tokens). */
  maxCompletionTokens: number;
  /** Office documents converted, each held at the longest time the edge waits for it. */
  conversions: number;
  /** See {@link HoldBasis.conversions}. */
  conversionDeadlineMs: number;
  /** Pages read by the dedicated PDF parser. */
  parserPages: number;
}

/**
 * Whole cents to hold for a request: each component's charge at its upper
 * bound, summed as the request's charge will be. An office document's pages
 * are known only once it is converted: hold with one page first and raise the
 * hold with the real count before extraction starts.
 */
export function holdCents(b: HoldBasis): number {
  let cents = 0;
  if (b.model) cents += chargeComponent(modelEstimateCents(b.model, Math.max(1, b.pages), b.maxCompletionTokens)).chargedCents;
  if (b.parserPages > 0) cents += chargeComponent(parserCostCents(b.parserPages)).chargedCents;
  cents += b.conversions * chargeComponent(conversionCostCents(Math.ceil(b.conversionDeadlineMs))).chargedCents;
  // A hold of 0 would let an account with no credit start work.
  return Math.max(1, cents);
}
