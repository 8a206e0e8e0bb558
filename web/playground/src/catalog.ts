/**
 * The model picker: strategies first, then the live catalog (GET /v1/models,
 * public) grouped by category with prices that include the platform fee.
 */
import { DEFAULT_STRATEGY, STRATEGIES as ALL_STRATEGIES } from "../../../internal/contracts/strategies.ts";
import type { ModelEntry, PriceSet, StrategyEntry } from "./types.ts";

const CATEGORY_ORDER = ["premium", "standard", "economy", "free", "local"];
/** The default strategy first: it is what a request without a model gets. */
const STRATEGIES = [DEFAULT_STRATEGY, ...ALL_STRATEGIES.filter((s) => s !== DEFAULT_STRATEGY)];

export interface Catalog {
  models: ModelEntry[];
  strategies: StrategyEntry[];
}

export async function loadCatalog(): Promise<Catalog> {
  // No key: the catalog is public, so the page can show it before one is entered.
  const [list, recommended] = await Promise.all([getJson<{ data: ModelEntry[] }>("/v1/models"), getJson<{ strategies: StrategyEntry[] }>("/v1/models/recommended").catch(() => ({ strategies: [] }))]);
  return { models: list.data, strategies: recommended.strategies };
}

async function getJson<T>(path: string): Promise<T> {
  const res = await fetch(path, { headers: { accept: "application/json" } });
  if (!res.ok) throw new Error(`${path} answered HTTP ${res.status}`);
  return (await res.json()) as T;
}

/** Dollars as people read small prices: $0.42, $0.0011. */
function usd(value: number): string {
  if (value === 0) return "$0";
  if (value >= 0.01) return `$${value.toFixed(2)}`;
  return `$${value.toPrecision(2)}`;
}

/** The listed price of a model in one line. */
export function priceLabel(p: PriceSet): string {
  if (p.page !== undefined) return `${usd(Number(p.page) * 1000)} per 1,000 pages`;
  const perM = (v: string | undefined) => Number(v ?? "0") * 1_000_000;
  const parts = [`${usd(perM(p.prompt))} in / ${usd(perM(p.completion))} out per M tokens`];
  if (p.image && Number(p.image) > 0) parts.push(`${usd(Number(p.image) * 1000)} per 1,000 images`);
  if (p.request && Number(p.request) > 0) parts.push(`${usd(Number(p.request) * 1000)} per 1,000 requests`);
  return parts.join(", ");
}

const title = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** Fills the select: Strategies (with the model each picks now), then one group per category. */
export function fillModelSelect(select: HTMLSelectElement, catalog: Catalog): void {
  const previous = select.value;
  select.replaceChildren();
  const byStrategy = new Map(catalog.strategies.map((s) => [s.strategy, s.model]));
  const strategies = document.createElement("optgroup");
  strategies.label = "Strategies";
  for (const s of STRATEGIES) {
    const o = new Option(`${s}${s === "balanced" ? " (default)" : ""}${byStrategy.has(s) ? ` → ${byStrategy.get(s)}` : ""}`, `strategy:${s}`);
    strategies.append(o);
  }
  select.append(strategies);

  const groups = new Map<string, ModelEntry[]>();
  for (const m of catalog.models) groups.set(m.folio.category, [...(groups.get(m.folio.category) ?? []), m]);
  const order = [...CATEGORY_ORDER.filter((c) => groups.has(c)), ...[...groups.keys()].filter((c) => !CATEGORY_ORDER.includes(c)).sort()];
  for (const category of order) {
    const group = document.createElement("optgroup");
    group.label = `${title(category)} models`;
    for (const m of groups.get(category)!.sort((a, b) => a.folio.name.localeCompare(b.folio.name))) {
      group.append(new Option(`${m.folio.name} (${m.id}) — ${priceLabel(m.folio.pricing.listed)}`, `model:${m.id}`));
    }
    select.append(group);
  }
  select.value = [...select.options].some((o) => o.value === previous) ? previous : "strategy:balanced";
}

/** What the chosen entry costs and is, for the line under the select. */
export function describeChoice(value: string, catalog: Catalog | null): string {
  if (value.startsWith("strategy:")) {
    const s = value.slice("strategy:".length);
    const model = catalog?.strategies.find((x) => x.strategy === s)?.model;
    const entry = model ? catalog?.models.find((m) => m.id === model) : undefined;
    return model ? `The ${s} strategy uses ${model} now${entry ? ` (${priceLabel(entry.folio.pricing.listed)})` : ""}.` : `The ${s} strategy picks a model on the server.`;
  }
  const id = value.slice("model:".length);
  const entry = catalog?.models.find((m) => m.id === id);
  return entry ? `${entry.folio.name}: ${priceLabel(entry.folio.pricing.listed)}, platform fee included.` : id;
}
