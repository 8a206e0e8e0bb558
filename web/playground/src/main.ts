/**
 * The playground page: key (this tab only), document (file, drop or URL),
 * model or strategy, options; then progress, errors in plain words, and the
 * result. A document longer than one request reads runs as a durable job
 * (run.ts), shown through the same views. No secret is ever logged: this
 * file has no console output at all.
 */
import { formatCents } from "../../../internal/billing/format.ts";
import { RequestFailed, type Running } from "./api.ts";
import { describeChoice, fillModelSelect, loadCatalog, type Catalog } from "./catalog.ts";
import { JOBS_PATH } from "./jobs.ts";
import { describeError } from "./messages.ts";
import { renderPages, renderSummary, resultId, resultJson, resultText } from "./render.ts";
import { DEFAULT_SYNC_MAX_PAGES, run, type Outcome } from "./run.ts";
import type { OcrJob } from "./types.ts";

const KEY_STORAGE = "folio.playground.apiKey";

function $<T extends HTMLElement>(id: string): T {
  const node = document.getElementById(id);
  if (!node) throw new Error(`the page lacks #${id}`);
  return node as T;
}

const form = $<HTMLFormElement>("run-form");
const keyInput = $<HTMLInputElement>("api-key");
const fileInput = $<HTMLInputElement>("file");
const dropZone = $<HTMLDivElement>("drop-zone");
const chosen = $<HTMLParagraphElement>("file-chosen");
const urlInput = $<HTMLInputElement>("url");
const modelSelect = $<HTMLSelectElement>("model");
const modelInfo = $<HTMLParagraphElement>("model-info");
const tablesInput = $<HTMLInputElement>("tables");
const languageInput = $<HTMLInputElement>("language");
const pagesInput = $<HTMLInputElement>("page-selection");
const formatSelect = $<HTMLSelectElement>("format");
const layoutInput = $<HTMLInputElement>("show-layout");
const runButton = $<HTMLButtonElement>("run");
const cancelButton = $<HTMLButtonElement>("cancel");
const progress = $<HTMLElement>("progress");
const progressText = $<HTMLParagraphElement>("progress-text");
const progressBar = $<HTMLProgressElement>("progress-bar");
const errorBox = $<HTMLDivElement>("error");
const jobInfo = $<HTMLParagraphElement>("job-info");
const longHelp = $<HTMLParagraphElement>("long-help");
const pagesNote = $<HTMLParagraphElement>("pages-note");
const resultSection = $<HTMLElement>("result");
const resultHeading = $<HTMLHeadingElement>("result-heading");
const copyStatus = $<HTMLParagraphElement>("copy-status");

let catalog: Catalog | null = null;
let droppedFile: File | null = null;
let running: Running<Outcome> | null = null;
/** The job of the current or last run, if it became one. */
let jobId: string | null = null;
let last: Outcome | null = null;

// The key lives in sessionStorage: gone when the tab closes, never in localStorage or a cookie.
keyInput.value = sessionStorage.getItem(KEY_STORAGE) ?? "";
keyInput.addEventListener("input", () => {
  const v = keyInput.value.trim();
  if (v) sessionStorage.setItem(KEY_STORAGE, v);
  else sessionStorage.removeItem(KEY_STORAGE);
});
$<HTMLButtonElement>("forget-key").addEventListener("click", () => {
  keyInput.value = "";
  sessionStorage.removeItem(KEY_STORAGE);
  keyInput.focus();
});

// A document: the file input, or a file dropped on its box.
function currentFile(): File | null {
  return droppedFile ?? fileInput.files?.[0] ?? null;
}
function showChosen(): void {
  const f = currentFile();
  chosen.textContent = f ? `Chosen: ${f.name} (${f.size.toLocaleString()} bytes)` : "";
}
fileInput.addEventListener("change", () => {
  droppedFile = null;
  showChosen();
});
for (const type of ["dragenter", "dragover"] as const) {
  dropZone.addEventListener(type, (e) => {
    e.preventDefault();
    dropZone.classList.add("dragging");
  });
}
for (const type of ["dragleave", "drop"] as const) dropZone.addEventListener(type, () => dropZone.classList.remove("dragging"));
dropZone.addEventListener("drop", (e) => {
  e.preventDefault();
  const f = e.dataTransfer?.files[0];
  if (!f) return;
  droppedFile = f;
  fileInput.value = "";
  showChosen();
});

// The catalog is public: it loads before any key is entered.
modelSelect.addEventListener("change", () => (modelInfo.textContent = describeChoice(modelSelect.value, catalog)));
loadCatalog().then(
  (c) => {
    catalog = c;
    fillModelSelect(modelSelect, c);
    modelInfo.textContent = describeChoice(modelSelect.value, c);
  },
  () => {
    modelInfo.textContent = "The model catalog could not be loaded; the strategies still work.";
  },
);

function setProgress(text: string, value?: number): void {
  progress.hidden = false;
  progressText.textContent = text;
  if (value === undefined) progressBar.removeAttribute("value");
  else progressBar.value = Math.max(0, Math.min(100, value));
}

function showLimit(maxPages: number): void {
  longHelp.textContent = `A document of more than ${maxPages} pages runs as a durable job on the server: the same progress and text, no page images.`;
}
showLimit(DEFAULT_SYNC_MAX_PAGES);

/**
 * The job's id in view from the moment it exists until the next run, so it
 * can be found again: while it runs it goes on if the page is closed.
 */
function showJob(id: string, ended: boolean): void {
  const path = `${JOBS_PATH}/${id}`;
  jobInfo.replaceChildren(
    ended ? "Job " : "Running as job ",
    Object.assign(document.createElement("code"), { textContent: id }),
    ended ? `. GET ${path} with this key finds it again, and ${path}/result its result if it succeeded.` : `. It goes on if this page is closed; GET ${path} with this key finds it again.`,
  );
  jobInfo.hidden = false;
}

function showError(e: RequestFailed): void {
  const d = describeError(e);
  const code = e.status > 0 ? `Error code: ${e.error.code} (HTTP ${e.status})` : `Error: ${e.error.code}`;
  errorBox.replaceChildren(
    Object.assign(document.createElement("p"), { className: "error-title", textContent: d.title }),
    Object.assign(document.createElement("p"), { textContent: d.detail }),
    Object.assign(document.createElement("p"), { className: "error-code", textContent: code }),
  );
  errorBox.hidden = false;
}

/** A problem with the form itself, found before anything is sent. */
function invalid(message: string, field: HTMLElement): void {
  errorBox.replaceChildren(Object.assign(document.createElement("p"), { className: "error-title", textContent: message }));
  errorBox.hidden = false;
  field.focus();
}

form.addEventListener("submit", (e) => {
  e.preventDefault();
  if (running) return;
  errorBox.hidden = true;
  const key = keyInput.value.trim();
  const file = currentFile();
  const url = urlInput.value.trim();
  if (!key) return invalid("Enter an API key first.", keyInput);
  if (!file && !url) return invalid("Choose a file, drop one, or enter a URL.", fileInput);
  if (!file && !/^https?:\/\//i.test(url)) return invalid("The URL must start with http:// or https://.", urlInput);
  if (!languageInput.checkValidity()) return invalid("The language is a short code such as en or de.", languageInput);
  if (!pagesInput.checkValidity()) return invalid("Pages are numbers and ranges separated by commas, such as 1-3,5 or 2- (page 2 to the end).", pagesInput);
  const [kind, id] = modelSelect.value.split(/:(.*)/s) as [string, string];

  resultSection.hidden = true;
  jobInfo.hidden = true;
  jobId = null;
  runButton.disabled = true;
  cancelButton.hidden = false;
  running = run(
    {
      key,
      ...(file ? { file } : { url }),
      ...(kind === "model" ? { model: id } : { strategy: id }),
      extractTables: tablesInput.checked,
      ...(languageInput.value.trim() ? { language: languageInput.value.trim() } : {}),
      ...(pagesInput.value.trim() ? { pages: pagesInput.value.trim() } : {}),
      outputFormat: formatSelect.value as "text" | "json" | "markdown",
      // Only a local model has a layout (an upstream one is refused for it): docs/playground.md.
      includeLayout: layoutInput.checked && kind === "model" && id.startsWith("local/"),
    },
    {
      progress: setProgress,
      job: (job: OcrJob) => {
        jobId = job.id;
        showJob(job.id, false);
      },
      limit: showLimit,
    },
  );
  running.done.then(
    (o) => {
      last = o;
      const pages = o.kind === "request" ? o.result.result.pages.length : o.pages.length;
      const cost = o.kind === "request" ? o.result.cost.formatted : formatCents(o.job.usage.total_cost_cents);
      setProgress(`Done: ${pages} page${pages === 1 ? "" : "s"}, ${cost}${o.kind === "job" ? ` (job ${o.job.id})` : ""}`, 100);
      renderSummary($<HTMLDListElement>("summary"), o);
      renderPages($<HTMLOListElement>("pages"), o);
      pagesNote.hidden = o.kind !== "job";
      copyStatus.textContent = "";
      resultSection.hidden = false;
      resultHeading.focus();
    },
    (err: unknown) => {
      progress.hidden = true;
      showError(err instanceof RequestFailed ? err : new RequestFailed(0, { code: "page_error", message: String(err) }));
    },
  ).finally(() => {
    if (jobId) showJob(jobId, true);
    running = null;
    runButton.disabled = false;
    cancelButton.hidden = true;
  });
});

cancelButton.addEventListener("click", () => running?.cancel());

// Copy and download: the text as it came, or the JSON without page images.
async function copy(text: string, what: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // Outside a secure context there is no clipboard API: fall back to a selection.
    const area = Object.assign(document.createElement("textarea"), { value: text, readOnly: true });
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
  copyStatus.textContent = `${what} copied.`;
}
function download(text: string, name: string, type: string): void {
  const href = URL.createObjectURL(new Blob([text], { type }));
  const a = Object.assign(document.createElement("a"), { href, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(href), 10_000);
  copyStatus.textContent = `${name} downloaded.`;
}
$<HTMLButtonElement>("copy-text").addEventListener("click", () => last && void copy(resultText(last), "Text"));
$<HTMLButtonElement>("copy-json").addEventListener("click", () => last && void copy(resultJson(last), "JSON"));
$<HTMLButtonElement>("download-text").addEventListener("click", () => last && download(resultText(last), `${resultId(last)}.txt`, "text/plain"));
$<HTMLButtonElement>("download-json").addEventListener("click", () => last && download(resultJson(last), `${resultId(last)}.json`, "application/json"));
