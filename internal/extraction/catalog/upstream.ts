/**
 * Turns an OpenRouter-compatible `GET /models` document into catalog models.
 *
 * The document is untrusted: every field is checked, a bad entry is excluded
 * with a reason (never a crash), and only a document that is not a model list
 * at all is an error. The rules (docs/models.md "Filtering rules"):
 *
 * 1. `id`: a string of the form `owner/name` (letters, digits, `. _ - : +`,
 *    an optional leading `~`), at most 200 characters, not in Folio's own
 *    namespaces `folio/` and `local/`, and not a duplicate of an earlier entry.
 * 2. Prices (`pricing`, US dollars per unit, decimal strings): `prompt` and
 *    `completion` are required; `image` and `request` are checked where given.
 *    Each must be a plain non-negative decimal (`"0.000002"`; no sign,
 *    exponent, `NaN`, number type or empty string). `"-1"` (the price of
 *    router models such as `openrouter/auto`, whose cost is unknown until the
 *    call) and anything else unparseable exclude the model.
 * 3. Modalities: `architecture.input_modalities` must include `image` and
 *    `architecture.output_modalities` must include `text`; when the arrays are
 *    missing, `architecture.modality` (`"text+image->text"`) is parsed instead.
 * 4. Expiry: an `expiration_date` (ISO 8601 date or date-time, or Unix
 *    seconds) at or before now excludes the model; a date without a time means
 *    00:00 UTC of that day. A value that cannot be read excludes the model too.
 * 5. `context_length` (or `top_provider.context_length`) must be a positive
 *    integer.
 *
 * Conditional and extra prices are folded in conservatively, so a hold never
 * under-estimates (docs/models.md "Conditional prices"): each unit's price is
 * the HIGHEST of the base price and every `pricing.overrides` entry's price
 * for that unit, whatever the entry's conditions (prompt-size tiers, time
 * windows); `internal_reasoning` (reasoning tokens are billed as completion
 * tokens) raises `completion` when it is higher; `discount` is ignored (the
 * undiscounted price is used). The same prices are listed and used for holds.
 */
import { FolioError } from "../../platform/errors/index.ts";
import { Decimal, listedPerMillionTokens, parseDecimal } from "../../billing/index.ts";
import type { CatalogModel, InputKind, ModelPricing } from "../types.ts";
import { isRecord } from "../util.ts";

export interface ExcludedModel {
  /** The entry's id, or `#<index>` when it has no usable id. */
  id: string;
  reason: string;
}

export interface ParsedUpstreamModels {
  models: CatalogModel[];
  excluded: ExcludedModel[];
}

/** Category thresholds on the LISTED prompt price (fee included), US dollars per million tokens. */
export const CATEGORY_THRESHOLDS_USD_PER_MILLION = Object.freeze({ economy: "0.30", standard: "2.50" });

const ID_PATTERN = /^~?[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._:+-]*$/;
const MAX_ID_LENGTH = 200;
const RESERVED_PREFIXES = ["folio/", "local/"];
const PLAIN_DECIMAL = /^\d{1,20}(\.\d{1,30})?$/;
const MAX_NAME_LENGTH = 300;
const MAX_DESCRIPTION_LENGTH = 10_000;

/**
 * Parses the upstream model list.
 * @param json the parsed body of `GET /models` (`{ data: [...] }`)
 * @param nowSec current time, Unix seconds (expiry check)
 * @throws FolioError `upstream_error` only when the document is not a model list
 */
export function parseUpstreamModels(json: unknown, nowSec: number): ParsedUpstreamModels {
  const data = isRecord(json) ? json.data : undefined;
  if (!Array.isArray(data)) {
    throw new FolioError("upstream_error", "the upstream model list is not a {\"data\": [...]} document", { retryable: true });
  }
  const models: CatalogModel[] = [];
  const excluded: ExcludedModel[] = [];
  const seen = new Set<string>();
  data.forEach((entry: unknown, index) => {
    const result = parseEntry(entry, index, nowSec, seen);
    if ("reason" in result) excluded.push(result);
    else {
      seen.add(result.id);
      models.push(result);
    }
  });
  return { models, excluded };
}

function parseEntry(entry: unknown, index: number, nowSec: number, seen: Set<string>): CatalogModel | ExcludedModel {
  if (!isRecord(entry)) return { id: `#${index}`, reason: "entry is not an object" };
  const rawId = entry.id;
  if (typeof rawId !== "string" || rawId.length === 0) return { id: `#${index}`, reason: "id is missing or not a string" };
  const shownId = rawId.slice(0, MAX_ID_LENGTH);
  const exclude = (reason: string): ExcludedModel => ({ id: shownId, reason });
  if (rawId.length > MAX_ID_LENGTH || !ID_PATTERN.test(rawId)) return exclude("id is not of the form owner/name");
  const id = rawId;
  if (RESERVED_PREFIXES.some((p) => id.startsWith(p))) return exclude("id uses a namespace reserved by Folio");
  if (seen.has(id)) return exclude("duplicate id");

  const pricing = parsePricing(entry.pricing);
  if (typeof pricing === "string") return exclude(pricing);

  const modalities = parseModalities(entry.architecture);
  if (typeof modalities === "string") return exclude(modalities);
  if (!modalities.input.includes("image")) return exclude("does not accept image input (text-only)");
  if (!modalities.output.includes("text")) return exclude("does not produce text output");

  const expiry = parseExpiry(entry.expiration_date);
  if (expiry === "invalid") return exclude("expiration_date cannot be read");
  if (expiry !== null && expiry <= nowSec) return exclude("expired (expiration_date is in the past)");

  const topProvider = isRecord(entry.top_provider) ? entry.top_provider : {};
  const contextLength = positiveInt(entry.context_length) ?? positiveInt(topProvider.context_length);
  if (contextLength === undefined) return exclude("context_length is missing or not a positive integer");

  const inputKinds: InputKind[] = ["image"];
  if (modalities.input.includes("file")) inputKinds.push("pdf");
  if (modalities.input.includes("text")) inputKinds.push("text");

  const name = typeof entry.name === "string" && entry.name.trim() !== "" ? entry.name.trim().slice(0, MAX_NAME_LENGTH) : id;
  const description = typeof entry.description === "string" ? entry.description.slice(0, MAX_DESCRIPTION_LENGTH) : "";
  const created = typeof entry.created === "number" && Number.isFinite(entry.created) && entry.created >= 0 ? Math.floor(entry.created) : 0;

  return {
    id,
    name,
    description,
    created,
    ownedBy: id.replace(/^~/, "").split("/")[0] ?? "",
    source: "upstream",
    contextLength,
    maxCompletionTokens: positiveInt(topProvider.max_completion_tokens) ?? null,
    inputKinds,
    category: categorize(pricing),
    pricing,
  };
}

/** A price unit Folio bills and the keys whose values can raise it. */
const UNITS = ["prompt", "completion", "image", "request"] as const;
type Unit = (typeof UNITS)[number];

/** Returns the conservative pricing, or a reason string when it cannot be trusted. */
function parsePricing(raw: unknown): ModelPricing | string {
  if (!isRecord(raw)) return "pricing is missing";
  const base: Partial<Record<Unit, Decimal>> = {};
  for (const unit of UNITS) {
    const v = raw[unit];
    if (v === undefined || v === null) {
      if (unit === "prompt" || unit === "completion") return `pricing.${unit} is missing`;
      continue;
    }
    const d = parsePrice(v);
    if (typeof d === "string") return `pricing.${unit} ${d}`;
    base[unit] = d;
  }
  // Reasoning tokens are billed as completion tokens at this rate when given.
  if (raw.internal_reasoning !== undefined && raw.internal_reasoning !== null) {
    const d = parsePrice(raw.internal_reasoning);
    if (typeof d === "string") return `pricing.internal_reasoning ${d}`;
    base.completion = Decimal.max(base.completion as Decimal, d);
  }
  if (raw.overrides !== undefined && raw.overrides !== null) {
    if (!Array.isArray(raw.overrides)) return "pricing.overrides is not a list";
    for (const [i, entry] of raw.overrides.entries()) {
      if (!isRecord(entry)) return `pricing.overrides[${i}] is not an object`;
      for (const key of [...UNITS, "internal_reasoning"] as const) {
        const v = entry[key];
        if (v === undefined || v === null) continue;
        const d = parsePrice(v);
        if (typeof d === "string") return `pricing.overrides[${i}].${key} ${d}`;
        const unit: Unit = key === "internal_reasoning" ? "completion" : key;
        const current = base[unit];
        base[unit] = current === undefined ? d : Decimal.max(current, d);
      }
    }
  }
  const out: ModelPricing = { prompt: (base.prompt as Decimal).toFixed(), completion: (base.completion as Decimal).toFixed() };
  if (base.image !== undefined) out.image = base.image.toFixed();
  if (base.request !== undefined) out.request = base.request.toFixed();
  return out;
}

function parsePrice(v: unknown): Decimal | string {
  if (typeof v !== "string") return "is not a decimal string";
  if (v.trim() === "-1") return "is -1 (a router price, unknown until the call)";
  if (!PLAIN_DECIMAL.test(v)) return `is not a non-negative plain decimal ('${v.slice(0, 32)}')`;
  const d = parseDecimal(v);
  if (d === undefined || !d.isFinite() || d.isNegative()) return `is not a non-negative plain decimal ('${v.slice(0, 32)}')`;
  return d;
}

function parseModalities(raw: unknown): { input: string[]; output: string[] } | string {
  if (!isRecord(raw)) return "architecture is missing";
  const input = stringArray(raw.input_modalities);
  const output = stringArray(raw.output_modalities);
  if (input && output) return { input, output };
  if (typeof raw.modality === "string") {
    const parts = raw.modality.split("->");
    if (parts.length === 2) {
      const split = (s: string) => s.split("+").map((x) => x.trim()).filter((x) => x !== "");
      return { input: input ?? split(parts[0] as string), output: output ?? split(parts[1] as string) };
    }
  }
  return "architecture has no readable modalities";
}

/** Unix seconds, null when absent, "invalid" when present but unreadable. */
function parseExpiry(raw: unknown): number | null | "invalid" {
  if (raw === undefined || raw === null) return null;
  if (typeof raw === "number") {
    if (!Number.isFinite(raw) || raw < 0) return "invalid";
    // A value this large is milliseconds (year 5138 in seconds).
    return raw > 1e11 ? Math.floor(raw / 1000) : raw;
  }
  if (typeof raw !== "string") return "invalid";
  const s = raw.trim();
  if (/^\d+$/.test(s)) return parseExpiry(Number(s));
  if (!/^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(s)) return "invalid";
  // Date-only: 00:00 UTC of that day (Date.parse treats YYYY-MM-DD as UTC).
  // Date-time without a zone: read as UTC too, not the server's local zone.
  const withZone = s.length > 10 && !/(Z|[+-]\d{2}:?\d{2})$/.test(s) ? `${s.replace(" ", "T")}Z` : s.replace(" ", "T");
  const ms = Date.parse(withZone);
  return Number.isFinite(ms) ? Math.floor(ms / 1000) : "invalid";
}

/**
 * The category of a model from its provider pricing (docs/models.md
 * "Categories"): `free` when every price is zero; otherwise by the listed
 * (fee-inclusive) prompt price per million tokens: `economy` below $0.30,
 * `standard` below $2.50, `premium` from $2.50. Local engines are `local`.
 */
export function categorize(pricing: ModelPricing): string {
  const prices = [pricing.prompt, pricing.completion, pricing.image, pricing.request, pricing.page].filter(
    (p): p is string => p !== undefined,
  );
  if (prices.every((p) => new Decimal(p).isZero())) return "free";
  const perMillion = listedPerMillionTokens(pricing.prompt);
  if (perMillion.lt(CATEGORY_THRESHOLDS_USD_PER_MILLION.economy)) return "economy";
  if (perMillion.lt(CATEGORY_THRESHOLDS_USD_PER_MILLION.standard)) return "standard";
  return "premium";
}

function stringArray(v: unknown): string[] | undefined {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : undefined;
}

function positiveInt(v: unknown): number | undefined {
  return typeof v === "number" && Number.isSafeInteger(v) && v > 0 ? v : undefined;
}
