/**
 * The result view. Everything from the API is set as text (never as HTML),
 * and only image data URLs of known image types are used as sources.
 */
import { formatCents as cents } from "../../../internal/billing/format.ts";
import type { PlaygroundResult, ResultPage, Table } from "./types.ts";

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

export function renderSummary(dl: HTMLDListElement, r: PlaygroundResult): void {
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
  dl.replaceChildren(...rows.flatMap(([k, v]) => [el("dt", { textContent: k }), el("dd", { textContent: v })]));
}

const SAFE_IMAGE = /^data:image\/(png|jpeg|webp|gif|bmp);base64,[A-Za-z0-9+/=]+$/;

export function renderPages(list: HTMLOListElement, r: PlaygroundResult): void {
  const pages = r.result.pages;
  // "Page 2 of 5" only when every page came back; a selection ("pages") shows the document's numbers alone.
  const whole = pages.every((p, i) => p.page_number === i + 1);
  list.replaceChildren(...pages.map((p) => renderPage(p, whole ? `Page ${p.page_number} of ${pages.length}` : `Page ${p.page_number}`)));
}

function renderPage(p: ResultPage, name: string): HTMLLIElement {
  const headingId = `page-${p.page_number}-heading`;
  const figure = el("figure", { className: "page-image" });
  if (p.image && SAFE_IMAGE.test(p.image.url)) {
    figure.append(el("img", { src: p.image.url, alt: `${name}, as the model read it`, loading: "lazy", decoding: "async" }));
  } else {
    figure.append(el("p", { className: "help", textContent: p.image_omitted === "response_image_limit" ? "Image left out: the response reached its image size limit." : "No image." }));
  }
  const text = el("div", { className: "page-text" });
  if (p.confidence !== undefined) text.append(el("p", { className: "confidence", textContent: `Confidence ${percent(p.confidence)}` }));
  const pre = el("pre", { textContent: p.text || "(no text found)", tabIndex: 0 });
  pre.setAttribute("aria-label", `Text of page ${p.page_number}`);
  text.append(pre);
  p.tables.forEach((t, i) => text.append(renderTable(t, i + 1)));
  const li = el("li", { className: "page" }, el("h3", { id: headingId, textContent: name }), el("div", { className: "page-grid" }, figure, text));
  li.setAttribute("aria-labelledby", headingId);
  return li;
}

/** A table as a table: the first row is the header (docs/ocr.md), in a scrollable, focusable region. */
function renderTable(t: Table, n: number): HTMLElement {
  const label = `Table ${n} on page ${t.page_number}`;
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

/** The result as JSON for copying: page images are left out (they are large and shown above). */
export function resultJson(r: PlaygroundResult): string {
  const pages = r.result.pages.map((p) => ({ ...p, image: p.image ? { mime_type: p.image.mime_type, bytes: p.image.bytes } : null }));
  return JSON.stringify({ ...r, result: { ...r.result, pages } }, null, 2);
}
