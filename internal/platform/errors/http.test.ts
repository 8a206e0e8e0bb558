/**
 * The HTTP mapper's promise (docs/errors.md): every 503 and every 429 carries
 * Retry-After, the error's own value when it set one; other answers get none;
 * anything that is not a FolioError is a bare 500.
 */
import { describe, expect, it } from "vitest";
import { FolioError, toHttpError } from "./index.ts";

describe("toHttpError", () => {
  it("gives a 503 without its own Retry-After the default (2 s), e.g. one that came over gRPC", () => {
    const r = toHttpError(new FolioError("service_unavailable", "the extraction service is unavailable"));
    expect(r.status).toBe(503);
    expect(r.headers).toEqual({ "retry-after": "2" });
  });

  it("keeps a Retry-After the error set, whatever its case", () => {
    expect(toHttpError(new FolioError("service_unavailable", "busy", { headers: { "retry-after": "5" } })).headers).toEqual({ "retry-after": "5" });
    expect(toHttpError(new FolioError("rate_limit_exceeded", "slow down", { headers: { "Retry-After": "12" } })).headers).toEqual({ "Retry-After": "12" });
  });

  it("gives conversion_not_available (503, a deployment without conversion) a longer Retry-After", () => {
    const r = toHttpError(new FolioError("conversion_not_available", "no conversion service"));
    expect(r.status).toBe(503);
    expect(r.headers).toEqual({ "retry-after": "60" });
  });

  it("gives a 429 without its own Retry-After one second", () => {
    expect(toHttpError(new FolioError("rate_limit_exceeded", "slow down")).headers).toEqual({ "retry-after": "1" });
  });

  it("adds nothing to other statuses, and does not change the error's own headers", () => {
    const own = { "x-other": "1" };
    const err = new FolioError("conversion_failed", "damaged", { headers: own });
    expect(toHttpError(err)).toMatchObject({ status: 500, headers: { "x-other": "1" } });
    expect(err.headers).toEqual({ "x-other": "1" });
    expect(toHttpError(new FolioError("invalid_request", "bad")).headers).toEqual({});
    expect(toHttpError(new FolioError("upstream_error", "provider failed")).headers).toEqual({});
  });

  it("maps anything else to a bare internal_error 500", () => {
    const r = toHttpError(new TypeError("x is undefined"));
    expect(r).toEqual({ status: 500, headers: {}, body: { error: { code: "internal_error", message: "internal error" } } });
  });
});
