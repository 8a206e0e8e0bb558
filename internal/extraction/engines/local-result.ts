/**
 * A local engine's answer for a page, from what it read (engines/tesseract.ts,
 * engines/auto.ts; engines/ppocr.ts shapes its text here too).
 *
 * `output_format` shapes the answer from the layout (`layout/markdown.ts`,
 * docs/structure.md "Output formats"): `text` is the text in reading order,
 * `markdown` the same page as GitHub-flavoured markdown (headings, lists,
 * tables; headers and footers left out), `json` the text in reading order
 * plus the page's blocks. Tables found on the page come back in `tables`
 * when `extract_tables` asks for them. The answer prices nothing (usage 0
 * tokens, no reported cost: the caller charges the configured price per
 * page).
 */
import { decodeGrey } from "../layout/image.ts";
import { renderMarkdown, structurePage, type SourceBlock } from "../layout/markdown.ts";
import type { AnalyzedPage } from "../layout/page.ts";
import type { ExtractOptions, PageInput, PageResult, Table } from "../types.ts";
import { tableOf } from "./tables.ts";

/** A reading as the engine answers it: text in the output format, tables only when asked for, layout only when asked for. */
export async function pageResult(page: PageInput, read: AnalyzedPage, options: ExtractOptions): Promise<PageResult> {
  const tables: Table[] = options.extractTables ? read.tables.map((t) => tableOf(page.pageNumber, t.rows, t.spans, t)) : [];
  return {
    ...(await formatted(page, read.text, read.sources, options)),
    tables,
    ...(read.confidence !== undefined ? { confidence: read.confidence } : {}),
    ...(options.includeLayout ? { layout: read.layout } : {}),
    usage: { promptTokens: 0, completionTokens: 0, reportedCostCents: null },
  };
}

/**
 * A local engine's page text in the output format (docs/ocr.md "Output
 * formats"): `text` as read; `markdown` written from the page's structure;
 * `json` the text as read and the structure's blocks beside it. The page's
 * pixels show which lines are bold; a page that cannot be decoded here (BMP)
 * is structured without them.
 */
export async function formatted(page: PageInput, text: string, sources: readonly SourceBlock[], options: Pick<ExtractOptions, "outputFormat">): Promise<Pick<PageResult, "text" | "blocks">> {
  if (options.outputFormat === "text") return { text };
  const grey = await decodeGrey(page.image).catch(() => undefined);
  const blocks = structurePage(sources, grey);
  return options.outputFormat === "markdown" ? { text: renderMarkdown(blocks) } : { text, blocks };
}

/** Ruled tables (and blanks) are looked for only when tables or structure are asked for: a text reading does not need them, and the search costs a pass over the pixels. */
export function wantsGrids(options: Pick<ExtractOptions, "extractTables" | "outputFormat">): boolean {
  return options.extractTables || options.outputFormat !== "text";
}
