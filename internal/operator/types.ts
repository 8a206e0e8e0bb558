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
import type {
  ConversionSandboxPoolSpecSchema,
  ConversionSandboxPoolStatusSchema,
  ConversionSandboxSpecSchema,
  ConversionSandboxStatusSchema,
  PoolReplicaReportSchema,
  SANDBOX_PHASES,
  TerminationMessageSchema,
} from "./schema.ts";

export const GROUP = "folio.dev";
export const VERSION = "v1alpha1";
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND = "ConversionSandbox";
export const PLURAL = "conversionsandboxes";

/** The warm pool resource (`ConversionSandboxPool`, short name `csbp`). */
export const POOL_KIND = "ConversionSandboxPool";
export const POOL_PLURAL = "conversionsandboxpools";

/** Finalizer the operator puts on every ConversionSandbox so it can delete the Job first. */
export const FINALIZER = "folio.dev/sandbox-cleanup";

/** Labels on everything made for a sandbox (Job, pod template). */
export const LABELS = Object.freeze({
  name: "app.kubernetes.io/name",
  component: "app.kubernetes.io/component",
  managedBy: "app.kubernetes.io/managed-by",
  /** Name of the ConversionSandbox a Job/pod belongs to. */
  sandbox: "folio.dev/sandbox",
  /** Name of the ConversionSandboxPool a warm Job/pod belongs to. */
  pool: "folio.dev/pool",
});

/** Annotations of a warm pool's Job: what the conversion replica's broker needs to accept its pod. */
export const POOL_ANNOTATIONS = Object.freeze({
  /** SHA-256 (hex) of the pod's broker token: the broker accepts a warm pod only with a token whose hash a pool Job carries. */
  tokenHash: "folio.dev/token-sha256",
  /** Longest conversion (ms) the pod accepts: its Job's deadline leaves room for that much after the idle wait. */
  maxDocumentMs: "folio.dev/max-document-ms",
  /** The conversion replica (status.replicas key) whose broker the pod waits at. */
  replica: "folio.dev/replica",
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
  /** Set on warm pool pods only: the pool's name. The program then waits for one document instead of fetching a known one. */
  pool: "FOLIO_POOL",
  /** Warm pods: seconds to wait for a document before exiting without one. */
  poolIdleSeconds: "FOLIO_POOL_IDLE_SECONDS",
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

/** How many warm pods to keep (`schema.ts`). */
export type ConversionSandboxPoolSpec = Static<typeof ConversionSandboxPoolSpecSchema>;
/** One conversion replica's demand report. */
export type PoolReplicaReport = Static<typeof PoolReplicaReportSchema>;
export type ConversionSandboxPoolStatus = Static<typeof ConversionSandboxPoolStatusSchema>;

export interface ConversionSandboxPool {
  apiVersion: typeof API_VERSION;
  kind: typeof POOL_KIND;
  metadata: ConversionSandbox["metadata"];
  spec: ConversionSandboxPoolSpec;
  status?: ConversionSandboxPoolStatus;
}
