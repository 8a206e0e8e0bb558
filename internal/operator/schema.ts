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
          pattern: "^[^\\s:]+:[0-9]{1,5}$",
          description: "host:port of the conversion service's broker, as sandbox pods dial it.",
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
    resources: Type.Optional(
      Type.Object(
        {
          cpu: Type.Optional(quantity("CPU request and limit of the sandbox pod, e.g. 500m or 2.")),
          memory: Type.Optional(quantity("Memory request and limit of the sandbox pod, e.g. 1536Mi or 2Gi.")),
        },
        { description: "Overrides of the operator's default pod resources (FOLIO_SANDBOX_CPU, FOLIO_SANDBOX_MEMORY)." },
      ),
    ),
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
