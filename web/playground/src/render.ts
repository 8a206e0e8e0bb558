/**
 * The result view. Everything from the API is set as text (never as HTML),
 * and only image data URLs of known image types are used as sources.
 */
import { formatCents as cents } from "../../../internal/billing/format.ts";
import type { Outcome } from "./run.ts";
import type { Box, JobPage, PlaygroundResult, ResultPage, Table } from "./types.ts";

type JobOutcome = Extract<Outcome, { kind: "job" }>;

function el<K extends keyof HTMLElementTagNameMap>(tag: K, props: Partial<HTMLElementTagNameMap[K]> = {}, ...children: (Node | string)[]): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  Object.assign(node, props);
  node.append(...children);
  return node;
}

const exactCents = (c: number) => `${Number(c.toPrecision(6))}¢`;
const seconds = (ms: number) => (ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`);
const size = (b: number) => (b < 1024 ? `${b} B` : b < 1024 * 1024 ? `${(b / 1024).toFixed(0)} KiB` : `${(b / 1024 / 1024).toFixed(1)} MiB`);
const percent = (c: number) => `${Math.round(c * 100)}%`;

const pairs = (rows: [string, string][]) => rows.flatMap(([k, v]) => [el("dt", { textContent: k }), el("dd", { textContent: v })]);

export function renderSummary(dl: HTMLDListElement, o: Outcome): void {
  dl.replaceChildren(...pairs(o.kind === "request" ? requestSummary(o.result) : jobSummary(o)));
}

function requestSummary(r: PlaygroundResult): [string, string][] {
  const rows: [string, string][] = [
    ["Model", r.strategy ? `${r.model} (strategy ${r.strategy})` : r.model],
    ["Document", `${r.document.filename ? `${r.document.filename}, ` : ""}${r.document.format}, ${size(r.document.bytes)}, ${r.result.pages.length} page${r.result.pages.length === 1 ? "" : "s"}${r.document.converted ? ", converted to page images" : ""}`],
    ["Cost", `${r.cost.formatted} charged`],
  ];
  for (const c of r.cost.components) {
    const what = c.component === "model" ? `Model (${c.pages ?? r.usage.pages_processed} page${c.pages === 1 ? "" : "s"})` : `Conversion${c.compute_time_ms !== undefined ? ` (${seconds(c.compute_time_ms)} compute)` : ""}`;
    rows.push([what, `${cents(c.total_cost_cents)} (provider ${exactCents(c.provider_cost_cents)} + fee ${exactCents(c.platform_fee_cents)})`]);
  }
  if (r.usage.tokens_used > 0) rows.push(["Tokens", `${r.usage.prompt_tokens} prompt + ${r.usage.completion_tokens} completion`]);
  rows.push(["Time", `${seconds(r.timings.total_ms)} in all: conversion ${seconds(r.timings.conversion_ms)}, extraction ${seconds(r.timings.extraction_ms)}`]);
  if (r.result.confidence !== undefined) rows.push(["Confidence", `${percent(r.result.confidence)} (the model's own score, not a measurement)`]);
  rows.push(["Request", r.id]);
  return rows;
}

/** A job's summary: its usage is /v1/ocr's, charged page by page as the pages were stored (docs/jobs.md "Money"). */
function jobSummary(o: JobOutcome): [string, string][] {
  const { job } = o;
  const u = job.usage;
  const count = job.page_count ?? o.pages.length;
  const rows: [string, string][] = [
    ["Model", job.model],
    ["Document", `${o.source ? `${o.source}, ` : ""}${count} page${count === 1 ? "" : "s"}, read as a durable job`],
    ["Cost", `${cents(u.total_cost_cents)} charged`],
    [
      `Pages (${u.pages_processed} read)`,
      `${cents(u.total_cost_cents)} (provider ${exactCents(u.provider_cost_cents)} + fee ${exactCents(u.platform_fee_cents)})${job.pages_failed > 0 ? `; ${job.pages_failed} page${job.pages_failed === 1 ? "" : "s"} could not be read and ${job.pages_failed === 1 ? "was" : "were"} not charged` : ""}`,
    ],
  ];
  if (u.tokens_used > 0) rows.push(["Tokens", `${u.prompt_tokens} prompt + ${u.completion_tokens} completion`]);
  rows.push(["Time", `${seconds(u.processing_time_ms)} from the job's start to its end`]);
  const confidence = meanConfidence(o.pages);
  if (confidence !== undefined) rows.push(["Confidence", `${percent(confidence)} (the model's own score, not a measurement)`]);
  if (o.tablesError) rows.push(["Tables", `could not be loaded: ${o.tablesError}`]);
  rows.push(["Job", job.id]);
  return rows;
}

/** The mean of the pages' confidences when every page has one (as the job's result computes it). */
function meanConfidence(pages: JobPage[]): number | undefined {
  const scores = pages.map((p) => p.confidence);
  if (scores.length === 0 || scores.some((c) => c === undefined)) return undefined;
  return (scores as number[]).reduce((a, b) => a + b, 0) / scores.length;
}

const SAFE_IMAGE = /^data:image\/(png|jpeg|webp|gif|bmp);base64,[A-Za-z0-9+/=]+$/;

/** A page as shown: the playground's (with its image) or a job's (text only; no image is kept). */
type ShownPage = Omit<ResultPage, "image"> & { image?: ResultPage["image"]; error?: JobPage["error"] };

export function renderPages(list: HTMLOListElement, o: Outcome): void {
  const pages: ShownPage[] = o.kind === "request" ? o.result.result.pages : o.pages.map((p) => ({ ...p, tables: o.tables.get(p.page_number) ?? [] }));
  // "Page 2 of 5" only when every page came back; a selection ("pages") shows the document's numbers alone.
  const whole = pages.every((p, i) => p.page_number === i + 1);
  list.replaceChildren(...pages.map((p) => renderPage(p, whole ? `Page ${p.page_number} of ${pages.length}` : `Page ${p.page_number}`, o.kind === "request")));
}

function renderPage(p: ShownPage, name: string, withImage: boolean): HTMLLIElement {
  const headingId = `page-${p.page_number}-heading`;
  const text = el("div", { className: "page-text" });
  if (p.confidence !== undefined) text.append(el("p", { className: "confidence", textContent: `Confidence ${percent(p.confidence)}` }));
  if (p.error) {
    text.append(el("p", { className: "page-error", textContent: `This page could not be read (not charged): ${p.error.message} [${p.error.code}]` }));
  } else {
    const pre = el("pre", { textContent: p.text || "(no text found)", tabIndex: 0 });
    pre.setAttribute("aria-label", `Text of page ${p.page_number}`);
    text.append(pre);
  }
  p.tables.forEach((t, i) => text.append(renderTable(t, i + 1)));
  const grid = el("div", { className: withImage ? "page-grid" : "page-grid text-only" });
  if (withImage) grid.append(renderImage(p, name));
  grid.append(text);
  const li = el("li", { className: "page" }, el("h3", { id: headingId, textContent: name }), grid);
  li.setAttribute("aria-labelledby", headingId);
  return li;
}

function renderImage(p: ShownPage, name: string): HTMLElement {
  const figure = el("figure", { className: "page-image" });
  if (p.image && SAFE_IMAGE.test(p.image.url)) {
    const img = el("img", { src: p.image.url, alt: `${name}, as the model read it`, loading: "lazy", decoding: "async" });
    const overlay = p.layout ? renderOverlay(p, name) : undefined;
    if (overlay) figure.append(el("div", { className: "page-canvas" }, img, overlay.svg), overlay.legend, overlay.detail);
    else figure.append(img);
  } else {
    figure.append(el("p", { className: "help", textContent: p.image_omitted === "response_image_limit" ? "Image left out: the response reached its image size limit." : "No image." }));
  }
  return figure;
}

const SVG = "http://www.w3.org/2000/svg";

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>, ...children: (Node | string)[]): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  node.append(...children);
  return node;
}

/** What a block is called in the legend and on hover. */
const BLOCK_NAMES: Record<string, string> = {
  heading: "heading",
  paragraph: "paragraph",
  list_item: "list item",
  text: "text",
  table: "table",
  figure: "figure",
  header: "header",
  footer: "footer",
};

/**
 * The page's layout drawn over its image (docs/playground.md "Layout"): the
 * structure's blocks when the answer has them (output_format json), else the
 * layout's, each a box coloured by its type and numbered in reading order;
 * a table's cells (with Extract tables) as its grid; each word a faint box
 * whose hover tells its confidence. A block is a button: clicking it (or
 * Enter) shows its text, a table's cells as a table, below the image.
 */
function renderOverlay(p: ShownPage, name: string): { svg: SVGSVGElement; legend: HTMLElement; detail: HTMLElement } | undefined {
  const layout = p.layout!;
  if (!(layout.width > 0 && layout.height > 0)) return undefined;
  const blocks: { type: string; bbox: Box; text: string; cells?: string[][] }[] = p.blocks?.length ? p.blocks : layout.blocks;
  const root = svg("svg", { viewBox: `0 0 ${layout.width} ${layout.height}`, preserveAspectRatio: "none", class: "layout-overlay", role: "group", "aria-label": `Layout of ${name}` });
  const rect = (b: Box, cls: string) => svg("rect", { x: b[0], y: b[1], width: Math.max(1, b[2] - b[0]), height: Math.max(1, b[3] - b[1]), class: cls });
  const shows: (() => void)[] = [];
  const detail = el("div", { className: "block-detail", hidden: true });
  detail.setAttribute("aria-live", "polite");
  const fontSize = Math.max(12, Math.round(layout.width / 60));
  blocks.forEach((b, i) => {
    const n = i + 1;
    const kind = BLOCK_NAMES[b.type] ?? b.type;
    const box = rect(b.bbox, `block block-${b.type}`);
    const label = svg("text", { x: b.bbox[0] + 3, y: b.bbox[1] + fontSize, class: `block-number block-${b.type}`, "font-size": fontSize }, String(n));
    const group = svg("g", { class: "block-group", tabindex: 0, role: "button", "aria-label": `Block ${n}: ${kind}`, "data-block": n }, box, label);
    group.append(svg("title", {}, `${n}. ${kind}${b.text ? `: ${b.text.slice(0, 120)}` : ""}`));
    const show = () => {
      detail.hidden = false;
      detail.replaceChildren(el("h4", { textContent: `Block ${n}: ${kind}` }));
      const table = b.type === "table" ? (b.cells ? { page_number: p.page_number, rows: b.cells, markdown: "" } : tableIn(p.tables, b.bbox, p.page_number)) : undefined;
      if (table) detail.append(renderTable(table, n, `The table of block ${n}`));
      else detail.append(el("pre", { textContent: b.text || "(no text)" }));
    };
    shows.push(show);
    group.addEventListener("click", show);
    group.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") {
        e.preventDefault();
        show();
      }
    });
    root.append(group);
  });
  // A table's cells as its grid, then the words on top: hover tells a word and its confidence, a click its block.
  for (const t of p.tables) {
    for (const c of t.cells ?? []) if (c.bbox && (c.page_number ?? p.page_number) === p.page_number) root.append(rect(c.bbox, "cell"));
  }
  for (const w of layout.blocks.flatMap((b) => b.words ?? [])) {
    const r = rect(w.bbox, "word");
    r.append(svg("title", {}, `${w.text}: ${percent(w.confidence)} confident`));
    const [cx, cy] = [(w.bbox[0] + w.bbox[2]) / 2, (w.bbox[1] + w.bbox[3]) / 2];
    const at = blocks.findIndex((b) => cx >= b.bbox[0] && cx <= b.bbox[2] && cy >= b.bbox[1] && cy <= b.bbox[3]);
    if (at >= 0) r.addEventListener("click", shows[at]!);
    root.append(r);
  }
  const kinds = [...new Set(blocks.map((b) => b.type))];
  const legend = el("ul", { className: "layout-legend" }, ...kinds.map((k) => el("li", {}, el("span", { className: `swatch block-${k}` }), BLOCK_NAMES[k] ?? k)));
  legend.setAttribute("aria-label", "Block types");
  return { svg: root, legend, detail };
}

/** The table of `tables` (this page's) whose cells lie in a layout block's box. */
function tableIn(tables: readonly Table[], b: Box, page: number): Table | undefined {
  const inside = (c: Box) => c[0] >= b[0] - 4 && c[1] >= b[1] - 4 && c[2] <= b[2] + 4 && c[3] <= b[3] + 4;
  return tables.find((t) => (t.cells ?? []).some((c) => c.bbox && (c.page_number ?? page) === page && inside(c.bbox)));
}

/** A table as a table: the first row is the header (docs/ocr.md), in a scrollable, focusable region. */
function renderTable(t: Table, n: number, caption?: string): HTMLElement {
  const label = caption ?? `Table ${n} on page ${t.page_number}`;
  const table = el("table", {}, el("caption", { textContent: label }));
  const [head, ...body] = t.rows;
  if (head) table.append(el("thead", {}, el("tr", {}, ...head.map((c) => {
    const th = el("th", { textContent: c });
    th.setAttribute("scope", "col");
    return th;
  }))));
  table.append(el("tbody", {}, ...body.map((row) => el("tr", {}, ...row.map((c) => el("td", { textContent: c }))))));
  const wrap = el("div", { className: "table-wrap", tabIndex: 0 }, table);
  wrap.setAttribute("role", "region");
  wrap.setAttribute("aria-label", label);
  return wrap;
}

/** The result's text: a job's is its pages' texts joined as its result joins them (GET …/result). */
export function resultText(o: Outcome): string {
  return o.kind === "request" ? o.result.result.text : o.pages.map((p) => p.text).join("\n\n");
}

/** What the result is called: the request's id, or the job's. */
export const resultId = (o: Outcome): string => (o.kind === "request" ? o.result.id : o.job.id);

/**
 * The result as JSON for copying: page images are left out (they are large
 * and shown above); a job's is what GET /v1/ocr/jobs/{id}/result answers.
 */
export function resultJson(o: Outcome): string {
  if (o.kind === "job") {
    const { job } = o;
    const confidence = meanConfidence(o.pages);
    const tables = [...o.tables.entries()].sort(([a], [b]) => a - b).flatMap(([, t]) => t);
    const result = { text: resultText(o), pages: o.pages, tables, ...(confidence !== undefined ? { confidence } : {}) };
    return JSON.stringify({ id: job.id, object: "ocr.result", created: job.created_at, model: job.model, result, usage: job.usage, metadata: job.metadata }, null, 2);
  }
  const r = o.result;
  const pages = r.result.pages.map((p) => ({ ...p, image: p.image ? { mime_type: p.image.mime_type, bytes: p.image.bytes } : null }));
  return JSON.stringify({ ...r, result: { ...r.result, pages } }, null, 2);
}
