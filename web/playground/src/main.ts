/**
 * The playground page: key (this tab only), document (file, drop or URL),
 * model or strategy, options; then progress, errors in plain words, and the
 * result. No secret is ever logged: this file has no console output at all.
 */
import { RequestFailed, processDocument, type Running } from "./api.ts";
import { describeChoice, fillModelSelect, loadCatalog, type Catalog } from "./catalog.ts";
import { describeError } from "./messages.ts";
import { renderPages, renderSummary, resultJson } from "./render.ts";
import type { PlaygroundResult, ProgressEvent } from "./types.ts";

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
const runButton = $<HTMLButtonElement>("run");
const cancelButton = $<HTMLButtonElement>("cancel");
const progress = $<HTMLElement>("progress");
const progressText = $<HTMLParagraphElement>("progress-text");
const progressBar = $<HTMLProgressElement>("progress-bar");
const errorBox = $<HTMLDivElement>("error");
const resultSection = $<HTMLElement>("result");
const resultHeading = $<HTMLHeadingElement>("result-heading");
const copyStatus = $<HTMLParagraphElement>("copy-status");

let catalog: Catalog | null = null;
let droppedFile: File | null = null;
let running: Running | null = null;
let last: PlaygroundResult | null = null;

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

function onEvent(e: ProgressEvent): void {
  switch (e.event) {
    case "started":
      setProgress(`Started: ${e.document.format} with ${e.model}…`);
      break;
    case "converting":
      setProgress(`Converting the ${e.format} document to page images…`);
      break;
    case "rasterizing":
      setProgress("Rendering the PDF's pages…");
      break;
    case "extracting":
      setProgress(`Extracting page 1 of ${e.page_count}…`, 0);
      break;
    case "page":
      setProgress(e.completed < e.of ? `Extracting page ${e.completed + 1} of ${e.of}…` : `Extracted ${e.of} of ${e.of} pages`, (100 * e.completed) / e.of);
      break;
  }
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
  runButton.disabled = true;
  cancelButton.hidden = false;
  setProgress(file ? "Uploading… 0%" : "Sending…", file ? 0 : undefined);
  running = processDocument(
    {
      key,
      ...(file ? { file } : { url }),
      ...(kind === "model" ? { model: id } : { strategy: id }),
      extractTables: tablesInput.checked,
      ...(languageInput.value.trim() ? { language: languageInput.value.trim() } : {}),
      ...(pagesInput.value.trim() ? { pages: pagesInput.value.trim() } : {}),
      outputFormat: formatSelect.value as "text" | "json" | "markdown",
    },
    {
      uploadProgress: (loaded, total) => file && setProgress(`Uploading… ${Math.round((100 * loaded) / total)}%`, (100 * loaded) / total),
      uploaded: () => setProgress("Uploaded; waiting for the server…"),
      event: onEvent,
    },
  );
  running.done.then(
    (r) => {
      last = r;
      setProgress(`Done: ${r.result.pages.length} page${r.result.pages.length === 1 ? "" : "s"}, ${r.cost.formatted}`, 100);
      renderSummary($<HTMLDListElement>("summary"), r);
      renderPages($<HTMLOListElement>("pages"), r);
      copyStatus.textContent = "";
      resultSection.hidden = false;
      resultHeading.focus();
    },
    (err: unknown) => {
      progress.hidden = true;
      showError(err instanceof RequestFailed ? err : new RequestFailed(0, { code: "page_error", message: String(err) }));
    },
  ).finally(() => {
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
$<HTMLButtonElement>("copy-text").addEventListener("click", () => last && void copy(last.result.text, "Text"));
$<HTMLButtonElement>("copy-json").addEventListener("click", () => last && void copy(resultJson(last), "JSON"));
$<HTMLButtonElement>("download-text").addEventListener("click", () => last && download(last.result.text, `${last.id}.txt`, "text/plain"));
$<HTMLButtonElement>("download-json").addEventListener("click", () => last && download(resultJson(last), `${last.id}.json`, "application/json"));
