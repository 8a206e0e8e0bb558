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
    case "permission_denied":
      return { title: "This key may not use the playground", detail: `It lacks the permission ${(err.missing_permissions ?? ["playground:write"]).join(", ")}. Use a key created without a permission list, or one that includes it.` };
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
      return { title: "Cancelled", detail: "The run was stopped. Pages already read may have been charged." };
    default:
      return { title: e.status >= 500 ? "The server failed" : "The request failed", detail: `${said(err.message)}` };
  }
}
