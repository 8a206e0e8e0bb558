/**
 * Writes the parts of docs/ that state prices, from the constants the code
 * bills with (internal/billing) and the configuration's defaults, so no rate
 * is written out by hand. A generated part sits between
 *
 *     <!-- generated: NAME (scripts/gen-docs.ts) -->
 *     <!-- end generated -->
 *
 * and is rewritten whole. Outside those parts, docs/ and README.md must not
 * restate a rate (the check fails naming the file and the line's text): they
 * link to docs/billing.md#prices instead.
 *
 *   npx tsx scripts/gen-docs.ts           rewrite the generated parts
 *   npx tsx scripts/gen-docs.ts --check   exit 1 when a part is out of date or a rate is restated
 */
import { readFile, readdir, writeFile } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import {
  CONVERSION_RATE_PER_MINUTE_USD,
  ESTIMATE_PROMPT_TOKENS_PER_PAGE,
  MINIMUM_CHARGE_CENTS,
  MINIMUM_CHARGE_USD,
  PDF_PARSER_USD_PER_THOUSAND_PAGES,
  PLATFORM_FEE_PERCENT,
  PLATFORM_FEE_RATE,
  CONVERSION_RATE_USD_PER_MINUTE,
  Decimal,
  conversionChargeCents,
  formatUsd,
  holdCents,
} from "../internal/billing/index.ts";
import { DEFAULT_SECONDS } from "../internal/conversion/estimates.ts";
import { CONVERSION_FORMATS } from "../internal/formats/index.ts";
import { edgeSchema, extractionSchema } from "../internal/platform/config/index.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

const defaults = {
  tesseract: String(extractionSchema.properties.FOLIO_LOCAL_PRICE_PER_PAGE_USD.default),
  ppocr: String(extractionSchema.properties.FOLIO_PPOCR_PRICE_PER_PAGE_USD.default),
  auto: String(extractionSchema.properties.FOLIO_AUTO_PRICE_PER_PAGE_USD.default),
  maxCompletionTokens: Number(extractionSchema.properties.FOLIO_MAX_COMPLETION_TOKENS.default),
  conversionDeadlineSeconds: Number(edgeSchema.properties.FOLIO_CONVERSION_DEADLINE_SECONDS.default),
};

const withFee = new Decimal(1).add(PLATFORM_FEE_RATE);
/** Longest compute time that still costs the minimum charge, as "3 min 25 s". */
function minimumChargeTime(): string {
  const seconds = new Decimal(MINIMUM_CHARGE_CENTS).div(withFee).div(100).div(CONVERSION_RATE_USD_PER_MINUTE).mul(60).floor().toNumber();
  return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}

/** Most pages at a per-page dollar price that still cost the minimum charge. */
function pagesAtMinimum(usdPerPage: string): number {
  return new Decimal(MINIMUM_CHARGE_CENTS).div(withFee).div(new Decimal(usdPerPage).mul(100)).floor().toNumber();
}

const cents = (n: number) => `${n} cent${n === 1 ? "" : "s"}`;

const BLOCKS: Record<string, () => string> = {
  prices: () => {
    const conversionHold = holdCents({ pages: 0, maxCompletionTokens: 0, conversions: 1, conversionDeadlineMs: defaults.conversionDeadlineSeconds * 1000, parserPages: 0 });
    return [
      "| what | price |",
      "|---|---|",
      `| platform fee | ${PLATFORM_FEE_PERCENT}% of each component's provider cost, kept exact |`,
      `| a component's charge | provider cost + fee, rounded **up** to whole cents, at least **${cents(MINIMUM_CHARGE_CENTS)}** (the minimum charge) when it did billable work |`,
      `| conversion | ${CONVERSION_RATE_PER_MINUTE_USD} $ per minute of sandbox compute time, measured in milliseconds: a conversion shorter than ${minimumChargeTime()} costs the minimum |`,
      `| dedicated PDF parser (chat \`file-parser\` plugin) | ${PDF_PARSER_USD_PER_THOUSAND_PAGES} $ per 1,000 pages |`,
      `| \`local/auto\` | ${defaults.auto} $ per page (\`FOLIO_AUTO_PRICE_PER_PAGE_USD\`): up to ${pagesAtMinimum(defaults.auto)} pages in a request cost the minimum |`,
      `| \`local/tesseract\` | ${defaults.tesseract} $ per page (\`FOLIO_LOCAL_PRICE_PER_PAGE_USD\`): up to ${pagesAtMinimum(defaults.tesseract)} pages in a request cost the minimum |`,
      `| \`local/ppocr\` | ${defaults.ppocr} $ per page (\`FOLIO_PPOCR_PRICE_PER_PAGE_USD\`): up to ${pagesAtMinimum(defaults.ppocr)} pages in a request cost the minimum |`,
      "| upstream models | the provider's own report of the cost (OpenRouter's `usage.cost`), else tokens, images and requests at the catalog's prices (docs/models.md) |",
      `| hold for a model | ${ESTIMATE_PROMPT_TOKENS_PER_PAGE.toLocaleString("en-US")} prompt tokens and \`max_tokens\` (\`FOLIO_MAX_COMPLETION_TOKENS\`, default ${defaults.maxCompletionTokens.toLocaleString("en-US")}) completion tokens, one image and one request per page, at the catalog's prices; local engines: their per-page price |`,
      `| hold for a conversion | the price of its whole deadline (\`FOLIO_CONVERSION_DEADLINE_SECONDS\`, default ${defaults.conversionDeadlineSeconds} s: ${cents(conversionHold)}) |`,
    ].join("\n");
  },
  "conversion-pricing": () => {
    const examples = CONVERSION_FORMATS.map((f) => `{"format": "${f}", "estimatedCost": "${formatUsd(conversionChargeCents(DEFAULT_SECONDS[f] * 1000))}", "estimated_time_seconds": ${DEFAULT_SECONDS[f]}}`);
    return [
      "```json",
      `{"object": "conversion.pricing",`,
      ` "pricing": {"base_rate_per_minute": "${CONVERSION_RATE_PER_MINUTE_USD}", "platform_fee_percentage": "${PLATFORM_FEE_PERCENT}", "minimum_charge": "${MINIMUM_CHARGE_USD}",`,
      `             "examples": [${examples[0]}, …]},`,
      ` "supported_formats": ["DOCX (Microsoft Word 2007 and later)", …]}`,
      "```",
    ].join("\n");
  },
};

/** Rates that only generated parts may state (a restated one drifts when the constant changes). */
const RESTATED = [
  { text: CONVERSION_RATE_PER_MINUTE_USD, what: "the conversion rate" },
  { text: `${PDF_PARSER_USD_PER_THOUSAND_PAGES} $ per 1,000`, what: "the PDF parser's rate" },
  { text: `${defaults.tesseract} $ per page`, what: "local/tesseract's default price" },
  { text: `${defaults.ppocr} $ per page`, what: "local/ppocr's default price" },
  { text: `+ ${PLATFORM_FEE_PERCENT}%`, what: "the platform fee" },
  { text: `+${PLATFORM_FEE_PERCENT}%`, what: "the platform fee" },
  { text: `${PLATFORM_FEE_PERCENT}% platform fee`, what: "the platform fee" },
];

const BLOCK = /(<!-- generated: ([a-z-]+) \(scripts\/gen-docs\.ts\) -->\n)([\s\S]*?)(<!-- end generated -->)/g;

async function docFiles(): Promise<string[]> {
  const docs = (await readdir(join(root, "docs"), { recursive: true })).filter((f) => f.endsWith(".md")).map((f) => join(root, "docs", f));
  return [join(root, "README.md"), ...docs.sort()];
}

const check = process.argv.includes("--check");
const problems: string[] = [];
const used = new Set<string>();
for (const file of await docFiles()) {
  const text = await readFile(file, "utf8");
  const name = relative(root, file);
  const wanted = text.replace(BLOCK, (_all, open: string, block: string, _old: string, close: string) => {
    const render = BLOCKS[block];
    if (!render) {
      problems.push(`${name}: unknown generated part '${block}'`);
      return _all;
    }
    used.add(block);
    return `${open}${render()}\n${close}`;
  });
  // Benchmark reports quote measured figures, not prices.
  if (!/benchmarks/.test(name)) {
    const outside = wanted.replace(BLOCK, "");
    for (const line of outside.split("\n")) {
      for (const r of RESTATED) {
        if (line.includes(r.text)) problems.push(`${name}: restates ${r.what} ("${r.text}") outside a generated part: link to docs/billing.md#prices instead (in: ${line.trim().slice(0, 80)})`);
      }
    }
  }
  if (wanted === text) continue;
  if (check) problems.push(`${name}: its generated parts are out of date: run \`npx tsx scripts/gen-docs.ts\` (or \`make generate\`)`);
  else {
    await writeFile(file, wanted);
    console.log(`wrote ${name}`);
  }
}
for (const block of Object.keys(BLOCKS)) if (!used.has(block)) problems.push(`no document holds the generated part '${block}'`);
if (problems.length) {
  for (const p of problems) console.error(`gen-docs: ${p}`);
  process.exit(1);
}
if (check) console.log("gen-docs: generated parts of docs/ are current");
