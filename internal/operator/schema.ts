/**
 * The ConversionSandbox resource as TypeBox schemas: one schema language for
 * HTTP bodies, configuration and the CRD (STYLE.md 6). `scripts/gen-crd.ts`
 * turns these into the CRD's openAPIV3Schema (`crd.ts`), so the descriptions
 * below are what `kubectl explain conversionsandbox.spec` prints. They are
 * the one definition of the resource: `types.ts` derives its TypeScript
 * types from them.
 */
import { Type } from "typebox";
import { CONVERSION_FORMATS } from "../formats/index.ts";
import { API_VERSION, KIND } from "./types.ts";

/** A Kubernetes resource quantity as the operator accepts it (`500m`, `2`, `1536Mi`, `2Gi`). */
export const QUANTITY_PATTERN = "^[0-9]+(\\.[0-9]+)?(m|k|Ki|Mi|Gi|Ti|M|G|T)?$";
const quantity = (description: string) => Type.String({ pattern: QUANTITY_PATTERN, maxLength: 32, description });

/** Per-pod overrides of the operator's default resources; `pod` names the pod in the descriptions. */
const resourceOverrides = (pod: string) =>
  Type.Object(
    {
      cpu: Type.Optional(quantity(`CPU request and limit of ${pod}, e.g. 500m or 2.`)),
      memory: Type.Optional(quantity(`Memory request and limit of ${pod}, e.g. 1536Mi or 2Gi.`)),
    },
    { description: "Overrides of the operator's default pod resources (FOLIO_SANDBOX_CPU, FOLIO_SANDBOX_MEMORY)." },
  );

/**
 * host:port of a broker: a DNS name or IPv4 address, or an IPv6 address in
 * brackets (an IPv6 pod IP has colons of its own, so it needs them).
 */
export const BROKER_ADDRESS_PATTERN = "^([^\\s:\\[\\]]+|\\[[0-9A-Fa-f:.]+\\]):[0-9]{1,5}$";

/** W3C trace context header value: version-traceid-parentid-flags. */
const TRACEPARENT_PATTERN = "^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$";

export const ConversionSandboxSpecSchema = Type.Object(
  {
    format: Type.Enum(CONVERSION_FORMATS, { description: "Format of the office document the sandbox converts." }),
    maxPages: Type.Integer({ minimum: 1, maximum: 10_000, description: "Most pages the sandbox renders; later pages are dropped." }),
    timeoutSeconds: Type.Integer({
      minimum: 1,
      maximum: 3600,
      description: "Wall-clock limit of the sandbox, in whole seconds: the Job's activeDeadlineSeconds.",
    }),
    broker: Type.Object(
      {
        address: Type.String({
          minLength: 3,
          maxLength: 260,
          pattern: BROKER_ADDRESS_PATTERN,
          description: "host:port of the conversion service's broker, as sandbox pods dial it; an IPv6 address goes in brackets ([fd00::5]:50053).",
        }),
        token: Type.String({
          minLength: 16,
          maxLength: 512,
          description: "One-time token: one FetchJob and one SubmitResult, until the deadline.",
        }),
      },
      { description: "Where the sandbox pod fetches its document and returns the pages." },
    ),
    traceparent: Type.Optional(
      Type.String({ pattern: TRACEPARENT_PATTERN, description: "W3C trace context of the conversion, passed to the sandbox as TRACEPARENT." }),
    ),
    resources: Type.Optional(resourceOverrides("the sandbox pod")),
  },
  { description: "What to convert and how the sandbox reaches the conversion service. Written once by the conversion service." },
);

export const SANDBOX_PHASES = ["Pending", "Running", "Succeeded", "Failed"] as const;

export const ConversionSandboxStatusSchema = Type.Object(
  {
    phase: Type.Optional(
      Type.Enum(SANDBOX_PHASES, { description: "Pending until the sandbox container runs; Running; then Succeeded or Failed (terminal)." }),
    ),
    jobName: Type.Optional(Type.String({ description: "Name of the batch/v1 Job running this sandbox." })),
    podName: Type.Optional(Type.String({ description: "Name of the Job's pod." })),
    startedAt: Type.Optional(Type.String({ format: "date-time", description: "When the sandbox container started (RFC 3339, second resolution)." })),
    finishedAt: Type.Optional(Type.String({ format: "date-time", description: "When the sandbox container exited (RFC 3339, second resolution)." })),
    computeMillis: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          "Container start to exit in milliseconds: the sandbox's own measure when it agrees with the kubelet's (second-resolution) times within 1 s, else the kubelet's.",
      }),
    ),
    pageCount: Type.Optional(Type.Integer({ minimum: 0, description: "Pages produced, from the sandbox's termination message." })),
    reason: Type.Optional(
      Type.String({
        description:
          "Short CamelCase cause of a failure: DeadlineExceeded, OOMKilled, ImagePullFailed, ConversionFailed, PodFailed, JobFailed, JobConflict, JobDeleted, InvalidSpec.",
      }),
    ),
    message: Type.Optional(Type.String({ description: "Human-readable detail of the phase or failure." })),
    observedGeneration: Type.Optional(Type.Integer({ minimum: 0, description: "metadata.generation the status was computed from." })),
  },
  { description: "Written by the operator through the status subresource." },
);

/** A whole ConversionSandbox as clients send it (metadata is checked by the API server, not here). */
export const ConversionSandboxSchema = Type.Object({
  apiVersion: Type.Literal(API_VERSION),
  kind: Type.Literal(KIND),
  metadata: Type.Object({ name: Type.String({ minLength: 1, maxLength: 253 }) }),
  spec: ConversionSandboxSpecSchema,
  status: Type.Optional(ConversionSandboxStatusSchema),
});

/** The termination message `cmd/sandbox` writes in broker mode (see {@link TerminationMessage}). */
export const TerminationMessageSchema = Type.Object({
  ok: Type.Boolean(),
  pageCount: Type.Integer({ minimum: 0 }),
  errorCode: Type.Optional(Type.String()),
  message: Type.Optional(Type.String()),
  computeMillis: Type.Optional(Type.Number({ minimum: 0 })),
});

/**
 * A ConversionSandboxPool: warm sandbox pods kept ahead of demand (docs/operator.md, "The warm pool").
 * The operator keeps between `minReady` and `max` pods; each waits at a
 * conversion replica's broker for exactly one document, converts it and exits.
 */
export const ConversionSandboxPoolSpecSchema = Type.Object(
  {
    minReady: Type.Optional(Type.Integer({
      minimum: 0,
      maximum: 1000,
      default: 0,
      description: "Warm pods kept waiting even without demand; 0 lets the pool scale to zero.",
    })),
    max: Type.Integer({ minimum: 0, maximum: 1000, description: "Most pods of the pool at once: waiting, starting and converting together." }),
    leadSeconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 600,
        default: 10,
        description: "Seconds of the reported hand-in rate kept waiting ahead of demand: about the time a pod takes to start.",
      }),
    ),
    idleSeconds: Type.Optional(
      Type.Integer({
        minimum: 10,
        maximum: 86_400,
        default: 600,
        description: "A warm pod that got no document in this time exits; this is how the pool shrinks.",
      }),
    ),
    timeoutSeconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 3600,
        default: 300,
        description: "Longest conversion a warm pod accepts; the Job's activeDeadlineSeconds is idleSeconds + timeoutSeconds + 30.",
      }),
    ),
    resources: Type.Optional(resourceOverrides("a warm pod")),
  },
  { description: "How many warm sandbox pods to keep. The demand comes from the conversion replicas' reports in status.replicas." },
);

/** What one conversion replica reports about its demand, every few seconds, in the pool's status. */
export const PoolReplicaReportSchema = Type.Object(
  {
    brokerAddress: Type.String({
      minLength: 3,
      maxLength: 260,
      pattern: BROKER_ADDRESS_PATTERN,
      description: "host:port of this replica's broker, as warm pods dial it (a stable DNS name).",
    }),
    waiting: Type.Integer({ minimum: 0, description: "Conversion requests queued at this replica for a sandbox slot now: each wants a sandbox as soon as a slot frees." }),
    handInRate: Type.Number({ minimum: 0, description: "Documents handed to sandboxes per second, averaged over the last report interval." }),
    idle: Type.Integer({ minimum: 0, description: "Warm pods waiting at this replica's broker now." }),
    busy: Type.Integer({ minimum: 0, description: "Warm pods converting a document for this replica now." }),
    busyJobs: Type.Optional(
      Type.Array(Type.String({ maxLength: 63 }), {
        maxItems: 1000,
        description: "The Jobs of those busy pods: the operator counts only those still active, so a report older than a pod's exit does not count it.",
      }),
    ),
    overdue: Type.Optional(
      Type.Array(Type.String({ maxLength: 63 }), { maxItems: 100, description: "Jobs whose pod holds a document past its deadline: the operator deletes them." }),
    ),
    reportedAt: Type.String({ format: "date-time", description: "When the replica wrote this report (RFC 3339)." }),
  },
  { description: "One conversion replica's demand." },
);

export const ConversionSandboxPoolStatusSchema = Type.Object(
  {
    replicas: Type.Optional(
      Type.Record(Type.String(), PoolReplicaReportSchema, {
        description: "Demand reports by conversion replica (written by the replicas; the operator removes stale ones).",
      }),
    ),
    active: Type.Optional(Type.Integer({ minimum: 0, description: "Pods of the pool that have not finished: starting, waiting or converting." })),
    ready: Type.Optional(Type.Integer({ minimum: 0, description: "Pods of the pool whose container runs." })),
    idle: Type.Optional(Type.Integer({ minimum: 0, description: "Pods waiting for a document, as the replicas report." })),
    wanted: Type.Optional(Type.Integer({ minimum: 0, description: "Pods the operator wants waiting, from minReady and the reported demand." })),
    message: Type.Optional(Type.String({ description: "Why the pool is not at its wanted size, when it is not." })),
    observedGeneration: Type.Optional(Type.Integer({ minimum: 0, description: "metadata.generation the status was computed from." })),
  },
  { description: "Written by the operator, except replicas (each conversion replica its own entry) through the status subresource." },
);
