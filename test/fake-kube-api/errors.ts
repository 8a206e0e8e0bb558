/**
 * TEST DOUBLE — never used in production.
 *
 * The failures the fake Kubernetes API server (test/fake-kube-api.ts)
 * answers, as the real server words them: Kubernetes `Status` objects.
 */
import type { Obj } from "./objects.ts";
import { qualified, type ResourceDef } from "./resources.ts";

/** A Kubernetes `Status` failure; `handle` answers it with its code. */
export class KubeApiError extends Error {
  constructor(readonly code: number, readonly reason: string, message: string, readonly details?: Obj) {
    super(message);
  }
  status(): Obj {
    // An empty reason is StatusReasonUnknown, which the real server omits (omitempty).
    return {
      kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message: this.message,
      ...(this.reason ? { reason: this.reason } : {}), ...(this.details ? { details: this.details } : {}), code: this.code,
    };
  }
}
export const badRequest = (message: string) => new KubeApiError(400, "BadRequest", message);
export const notFound = (d: ResourceDef, name: string) => new KubeApiError(404, "NotFound", `${qualified(d)} "${name}" not found`, { name, group: d.group, kind: d.name });
export const pathNotFound = () => new KubeApiError(404, "NotFound", "the server could not find the requested resource", {});
export const conflict = (d: ResourceDef, name: string, why = "the object has been modified; please apply your changes to the latest version and try again") =>
  new KubeApiError(409, "Conflict", `Operation cannot be fulfilled on ${qualified(d)} "${name}": ${why}`, { name, group: d.group, kind: d.name });
export const invalid = (d: ResourceDef, name: string, causes: { field: string; message: string }[]) =>
  new KubeApiError(422, "Invalid", `${d.kind}${d.group ? "." + d.group : ""} "${name}" is invalid: ${causes.map((c) => `${c.field}: ${c.message}`).join(", ")}`, {
    name, group: d.group, kind: d.kind, causes: causes.map((c) => ({ reason: "FieldValueInvalid", message: c.message, field: c.field })),
  });
/** What the real server answers when a JSON patch cannot be applied (handlers/patch.go: NewGenericServerResponse 422). */
export const patchFailed = (cause: string) =>
  new KubeApiError(422, "Invalid", "the server rejected our request due to an error in our request", { causes: [{ reason: "UnexpectedServerResponse", message: cause }] });
