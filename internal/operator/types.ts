/**
 * The ConversionSandbox custom resource (group `folio.dev`, version
 * `v1alpha1`): the one object the conversion service's `kubernetes` backend
 * creates per document, and the operator turns into a batch/v1 Job. Its CRD
 * is `deploy/crds/conversionsandboxes.folio.dev.yaml`.
 *
 * The document itself never goes into the resource: the sandbox pod fetches
 * it from the conversion service's broker with the one-time `broker.token`
 * and sends the pages back the same way.
 */
import type { Static } from "typebox";
// Types only: the sandbox program bundles this module, and the schemas' values stay out of it.
import type { ConversionSandboxSpecSchema, ConversionSandboxStatusSchema, SANDBOX_PHASES, TerminationMessageSchema } from "./schema.ts";

export const GROUP = "folio.dev";
export const VERSION = "v1alpha1";
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND = "ConversionSandbox";
export const PLURAL = "conversionsandboxes";

/** Finalizer the operator puts on every ConversionSandbox so it can delete the Job first. */
export const FINALIZER = "folio.dev/sandbox-cleanup";

/** Labels on everything made for a sandbox (Job, pod template). */
export const LABELS = Object.freeze({
  name: "app.kubernetes.io/name",
  component: "app.kubernetes.io/component",
  managedBy: "app.kubernetes.io/managed-by",
  /** Name of the ConversionSandbox a Job/pod belongs to. */
  sandbox: "folio.dev/sandbox",
});
export const SANDBOX_POD_LABELS = Object.freeze({
  [LABELS.name]: "folio",
  [LABELS.component]: "sandbox",
  [LABELS.managedBy]: "folio-operator",
});

/** Environment of the sandbox container (the contract with `cmd/sandbox` in broker mode). */
export const SANDBOX_ENV = Object.freeze({
  brokerAddress: "FOLIO_BROKER_ADDRESS",
  brokerToken: "FOLIO_BROKER_TOKEN",
  traceparent: "TRACEPARENT",
});

/** What to convert and how the sandbox reaches the conversion service (`schema.ts` is its one definition). */
export type ConversionSandboxSpec = Static<typeof ConversionSandboxSpecSchema>;

export type SandboxPhase = (typeof SANDBOX_PHASES)[number];

/** Written by the operator through the status subresource (`schema.ts`). */
export type ConversionSandboxStatus = Static<typeof ConversionSandboxStatusSchema>;

export interface ConversionSandbox {
  apiVersion: typeof API_VERSION;
  kind: typeof KIND;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    creationTimestamp?: string;
    deletionTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
  };
  spec: ConversionSandboxSpec;
  status?: ConversionSandboxStatus;
}

/**
 * What `cmd/sandbox` writes to its termination message (`/dev/termination-log`)
 * in broker mode; the operator reads it from the pod's container status.
 */
export type TerminationMessage = Static<typeof TerminationMessageSchema>;
