/** API errors in plain words (the code and the server's own message are shown beside them). */
import { formatCents as dollars } from "../../../internal/billing/format.ts";
import type { RequestFailed } from "./api.ts";

export interface Described {
  title: string;
  detail: string;
}

/** The server's message as a sentence: capitalised, ending in a full stop. */
const said = (m: string) => {
  const t = m.trim();
  return (t.charAt(0).toUpperCase() + t.slice(1)).replace(/[^.!?]$/, (c) => `${c}.`);
};

export function describeError(e: RequestFailed): Described {
  const err = e.error;
  switch (err.code) {
    case "insufficient_credits":
      return {
        title: "Not enough credit",
        detail: `This run needs ${err.required_cents !== undefined ? dollars(err.required_cents) : "more"} of available balance before it can start, and the account does not have it. Add credits to the account, or try a cheaper model or a shorter document.`,
      };
    case "rate_limit_exceeded": {
      const wait = err.retry_after_seconds ?? e.retryAfterSeconds;
      return { title: "Too many requests", detail: `The account's rate limit was reached. ${wait !== undefined ? `Wait ${wait} second${wait === 1 ? "" : "s"}, then run again.` : "Wait a moment, then run again."}` };
    }
    case "unsupported_format":
      return {
        title: "This file type is not supported",
        detail: `${said(err.message)} Folio reads ${(err.supported_formats ?? ["PNG", "JPEG", "WEBP", "TIFF", "GIF", "PDF", "DOCX", "PPTX", "DOC", "ODT", "RTF", "TXT"]).join(", ")}.`,
      };
    case "timeout":
      return { title: "The conversion took too long", detail: "Converting the document passed the time limit and was stopped; nothing was charged for it. Very large or complex documents can do this: try a smaller one, or split it." };
    case "conversion_failed":
      return { title: "The document could not be converted", detail: `${said(err.message)} It may be damaged, truncated or password-protected. Nothing was charged for the conversion.` };
    case "conversion_not_available":
      return { title: "Office documents cannot be converted here", detail: "This server has no conversion service. Images and PDFs still work." };
    case "invalid_api_key":
      return { title: "The API key was not accepted", detail: `${said(err.message)} Check the key (it starts with folio_sk_) and that it has not been revoked or expired.` };
    case "permission_denied": {
      const missing = err.missing_permissions ?? ["playground:write"];
      // Long documents run as jobs, which need ocr:write beside the playground's own permission.
      const why = missing.includes("ocr:write") ? " Documents longer than one request reads run as OCR jobs, which need it." : "";
      return { title: "This key may not do this", detail: `It lacks the permission ${missing.join(", ")}.${why} Use a key created without a permission list, or one that includes it.` };
    }
    case "payload_too_large":
      return { title: "The file is too large", detail: `${said(err.message)}` };
    case "unsupported_model":
      return { title: "That model is not available", detail: `${said(err.message)} The catalog changes; reload the page for the current list.` };
    case "upstream_error":
      return { title: "The model provider failed", detail: `${said(err.message)} Nothing was charged for pages that were not read; try again or pick another model.` };
    case "service_unavailable":
      return { title: "The service is busy", detail: `${said(err.message)} Try again in a few seconds.` };
    case "invalid_request":
      return { title: "The request was not accepted", detail: `${said(err.message)}` };
    case "network_error":
      return { title: "The server could not be reached", detail: "Check the connection and that Folio is running, then try again." };
    case "cancelled":
      if (typeof err.job_id === "string") return { title: "Cancelled", detail: `Loading the result was stopped. The job ${err.job_id} itself succeeded; its result stays readable by its id.` };
      return { title: "Cancelled", detail: "The run was stopped. Pages already read may have been charged." };
    case "job_cancelled": {
      const pages = typeof err.pages_completed === "number" ? err.pages_completed : 0;
      const cost = typeof err.total_cost_cents === "number" ? ` (${dollars(err.total_cost_cents)})` : "";
      return {
        title: "Job cancelled",
        detail: `The job ${String(err.job_id ?? "")} was stopped. ${pages === 0 ? "No page had been read: nothing was charged." : `The ${pages} page${pages === 1 ? "" : "s"} read before it stopped stay charged${cost} and readable by the job's id.`} The rest of the hold went back to the balance.`,
      };
    }
    case "page_failed":
      return { title: "No page could be read", detail: `${said(err.message)} Pages that are not read are not charged; try another model.` };
    case "events_lost":
      return { title: "The job's progress could not be followed", detail: `${said(err.message)} The job goes on on the server: find it again by its id.` };
    default:
      return { title: e.status >= 500 ? "The server failed" : "The request failed", detail: `${said(err.message)}` };
  }
}
