/**
 * Pure status derivation: what a ConversionSandbox's status should say, from
 * its Job and the Job's pod as the API server last showed them. No I/O and
 * no clock of its own (`now` comes in), so every case is a unit test.
 *
 * Times: Kubernetes reports container start and finish with second
 * resolution (RFC 3339 without fractions). computeMillis taken from them is
 * off by up to a second either way; when the sandbox's own measure (from its
 * termination message) falls inside that window it is the better figure and
 * is used instead. Outside the window the message is not trusted.
 */
import type { V1ContainerStatus, V1JobCondition } from "@kubernetes/client-node";
import { Value } from "typebox/value";
import { CONTAINER_NAME } from "./job.ts";
import type { Job, Pod, Wire } from "./kube.ts";
import { TerminationMessageSchema } from "./schema.ts";
import type { ConversionSandbox, ConversionSandboxStatus, SandboxPhase, TerminationMessage } from "./types.ts";

/** Waiting reasons that mean the image cannot be pulled (perhaps yet: registries hiccup, hence a grace period). */
const IMAGE_PULL_REASONS = new Set(["ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"]);

/** The kubelet's tolerance between its second-resolution times and the sandbox's own measure. */
export const CLOCK_RESOLUTION_MS = 1000;

export const isTerminal = (phase: SandboxPhase | undefined): phase is "Succeeded" | "Failed" => phase === "Succeeded" || phase === "Failed";

export interface DeriveInput {
  sandbox: ConversionSandbox;
  job: Job;
  /** The Job's pod, if it has one yet (see {@link pickPod}). */
  pod: Pod | undefined;
  /** Epoch milliseconds. */
  now: number;
  /** How long an image pull may keep failing before the sandbox fails with ImagePullFailed. */
  imagePullGraceMs: number;
  /** How long a container's non-zero exit waits for the Job's Failed condition before it counts as PodFailed. */
  jobVerdictGraceMs: number;
}

export interface Derived {
  status: ConversionSandboxStatus;
  /** Derive again after this long even if nothing changes (the image-pull grace is running). */
  recheckAfterMs?: number;
}

type ContainerStatus = Wire<V1ContainerStatus>;
type Terminated = NonNullable<NonNullable<ContainerStatus["state"]>["terminated"]>;

/** The status a sandbox whose Job exists should have now. */
export function deriveStatus(input: DeriveInput): Derived {
  const { sandbox, job, pod, now } = input;
  const base: ConversionSandboxStatus = {
    jobName: job.metadata?.name,
    ...(pod?.metadata?.name ? { podName: pod.metadata.name } : {}),
    observedGeneration: sandbox.metadata.generation,
  };
  const previous = sandbox.status ?? {};
  const container = containerStatus(pod);
  const terminated = container?.state?.terminated;
  const message = parseTerminationMessage(terminated?.message);

  // A sandbox that finished its work is a success even if the deadline struck as it exited.
  if (terminated && terminated.exitCode === 0 && (!message || message.ok)) return fromTerminated(input, base, terminated, message);

  // Since Kubernetes 1.31 the Job controller marks FailureTarget, kills the pod, and only then
  // adds Failed; the pod can show a plain SIGKILL before the Job says why.
  const deadline = condition(job, "FailureTarget", "DeadlineExceeded") ?? condition(job, "Failed", "DeadlineExceeded");
  if (deadline) {
    const startedAt = terminated?.startedAt ?? previous.startedAt ?? job.status?.startTime;
    const finishedAt = terminated?.finishedAt ?? deadline.lastTransitionTime ?? new Date(now).toISOString();
    return failed(base, "DeadlineExceeded", `the sandbox ran longer than its limit of ${sandbox.spec.timeoutSeconds}s${detail(deadline.message)}`, {
      startedAt,
      finishedAt,
      computeMillis: millisBetween(startedAt, finishedAt),
      ...(message ? { pageCount: message.pageCount } : {}),
    });
  }

  if (terminated) return fromTerminated(input, base, terminated, message);

  if (pod?.status?.phase === "Failed") {
    const reason = pod.status.reason === "DeadlineExceeded" ? "DeadlineExceeded" : "PodFailed";
    return failed(base, reason, `pod ${pod.metadata?.name} failed${detail(pod.status.reason, pod.status.message)}`, times(previous.startedAt, now));
  }

  const jobFailed = condition(job, "Failed");
  if (jobFailed) {
    return failed(base, "JobFailed", `Job ${job.metadata?.name} failed${detail(jobFailed.reason, jobFailed.message)}`, times(previous.startedAt, now));
  }

  const complete = condition(job, "Complete");
  if (complete) {
    // The pod is gone (deleted by hand, or its node) but the Job recorded success:
    // Job times stand in for the container's.
    const startedAt = previous.startedAt ?? job.status?.startTime;
    const finishedAt = job.status?.completionTime ?? complete.lastTransitionTime ?? new Date(now).toISOString();
    return {
      status: { ...base, phase: "Succeeded", startedAt, finishedAt, computeMillis: millisBetween(startedAt, finishedAt), message: "the Job completed; its pod was not seen" },
    };
  }

  const waiting = container?.state?.waiting;
  if (waiting?.reason && IMAGE_PULL_REASONS.has(waiting.reason)) {
    const since = Date.parse(pod?.status?.startTime ?? pod?.metadata?.creationTimestamp ?? job.metadata?.creationTimestamp ?? "") || now;
    const left = since + input.imagePullGraceMs - now;
    const why = `image ${container?.image} could not be pulled${detail(waiting.reason, waiting.message)}`;
    if (left <= 0) return failed(base, "ImagePullFailed", why, {});
    return { status: { ...base, phase: "Pending", message: why }, recheckAfterMs: left };
  }

  const running = container?.state?.running;
  if (running) {
    return { status: { ...base, phase: "Running", startedAt: running.startedAt ?? previous.startedAt ?? new Date(now).toISOString() } };
  }

  const pendingMessage = !pod
    ? "waiting for the Job's pod"
    : waiting?.reason
      ? `container waiting${detail(waiting.reason, waiting.message)}`
      : `pod ${pod.status?.phase ?? "Pending"}`;
  return { status: { ...base, phase: "Pending", message: pendingMessage } };
}

function fromTerminated(input: DeriveInput, base: ConversionSandboxStatus, terminated: Terminated, message: TerminationMessage | undefined): Derived {
  const { sandbox, job, now } = input;
  const startedAt = terminated.startedAt ?? sandbox.status?.startedAt;
  const finishedAt = terminated.finishedAt;
  const kubeletMillis = millisBetween(startedAt, finishedAt);
  const computeMillis = preciseMillis(kubeletMillis, message?.computeMillis);
  const timing = { startedAt, finishedAt, computeMillis, ...(message ? { pageCount: message.pageCount } : {}) };

  if (terminated.reason === "OOMKilled") {
    const limit = sandbox.spec.resources?.memory;
    return failed(base, "OOMKilled", `the sandbox exceeded its memory limit${limit ? ` (${limit})` : ""} and was killed`, timing);
  }
  if (message && !message.ok) {
    return failed(base, "ConversionFailed", `${message.errorCode ?? "conversion_failed"}${detail(message.message)}`, timing);
  }
  if (terminated.exitCode === 0) {
    return { status: { ...base, phase: "Succeeded", ...timing, ...(message ? {} : { message: "the sandbox exited 0 without a termination message" }) } };
  }
  // An exit code alone does not say why: give the Job controller a moment to say DeadlineExceeded.
  const settled = condition(job, "Failed") ?? condition(job, "FailureTarget");
  const waitLeft = (Date.parse(finishedAt ?? "") || now) + input.jobVerdictGraceMs - now;
  if (!settled && waitLeft > 0) {
    return {
      status: { ...base, phase: "Running", ...(startedAt ? { startedAt } : {}), message: `the sandbox exited with code ${terminated.exitCode}; waiting for the Job's verdict` },
      recheckAfterMs: waitLeft,
    };
  }
  return failed(base, "PodFailed", `the sandbox exited with code ${terminated.exitCode}${detail(terminated.reason, terminated.message && !message ? terminated.message : undefined)}`, timing);
}

function failed(base: ConversionSandboxStatus, reason: string, message: string, extra: Partial<ConversionSandboxStatus>): Derived {
  return { status: dropUndefined({ ...base, ...extra, phase: "Failed", reason, message }) };
}

function times(startedAt: string | undefined, now: number): Partial<ConversionSandboxStatus> {
  const finishedAt = new Date(now).toISOString();
  return { startedAt, finishedAt, computeMillis: millisBetween(startedAt, finishedAt) };
}

/** computeMillis: the sandbox's own figure when it is within the kubelet's resolution of the kubelet's, else the kubelet's. */
export function preciseMillis(kubeletMillis: number | undefined, reported: number | undefined): number | undefined {
  if (kubeletMillis === undefined) return reported === undefined ? undefined : Math.round(reported);
  if (reported !== undefined && Math.abs(reported - kubeletMillis) <= CLOCK_RESOLUTION_MS) return Math.max(0, Math.round(reported));
  return kubeletMillis;
}

function millisBetween(start: string | undefined, end: string | undefined): number | undefined {
  if (!start || !end) return undefined;
  const ms = Date.parse(end) - Date.parse(start);
  return Number.isFinite(ms) ? Math.max(0, ms) : undefined;
}

/** The termination message when it is the JSON `cmd/sandbox` writes; undefined otherwise (absent, truncated, or not ours). */
export function parseTerminationMessage(text: string | undefined): TerminationMessage | undefined {
  if (!text) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return Value.Check(TerminationMessageSchema, value) ? value : undefined;
  } catch {
    return undefined;
  }
}

function containerStatus(pod: Pod | undefined): ContainerStatus | undefined {
  const statuses = pod?.status?.containerStatuses ?? [];
  return statuses.find((c) => c.name === CONTAINER_NAME) ?? statuses[0];
}

function condition(job: Job, type: "Failed" | "FailureTarget" | "Complete", reason?: string): Wire<V1JobCondition> | undefined {
  return job.status?.conditions?.find((c) => c.type === type && c.status === "True" && (reason === undefined || c.reason === reason));
}

/** The pod of a Job: the newest pod the Job controls (with backoffLimit 0 there is at most one, unless it was replaced after an eviction). */
export function pickPod(pods: readonly Pod[], job: Job): Pod | undefined {
  const uid = job.metadata?.uid;
  const name = job.metadata?.name;
  const mine = pods.filter((p) => {
    const owner = p.metadata?.ownerReferences?.find((r) => r.controller && r.kind === "Job");
    return owner ? owner.uid === uid || (!uid && owner.name === name) : p.metadata?.labels?.["job-name"] === name;
  });
  return mine.sort((a, b) => (a.metadata?.creationTimestamp ?? "").localeCompare(b.metadata?.creationTimestamp ?? "")).at(-1);
}

/** Fields a later phase may no longer have (a Pending message must not linger on Running). */
const CLEARABLE = ["reason", "message"] as const;

/**
 * The JSON merge patch of the status subresource that turns `current` into
 * `next`, or undefined when they already agree. Fields `next` leaves out stay
 * as they are, except reason and message, which are removed (null).
 */
export function statusPatch(current: ConversionSandboxStatus | undefined, next: ConversionSandboxStatus): Record<string, unknown> | undefined {
  const now: Record<string, unknown> = { ...current };
  const patch: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(next)) if (value !== undefined && value !== now[key]) patch[key] = value;
  for (const key of CLEARABLE) if (next[key] === undefined && now[key] !== undefined) patch[key] = null;
  return Object.keys(patch).length ? patch : undefined;
}

function detail(...parts: (string | undefined)[]): string {
  const text = parts.filter((p) => p).join(": ");
  return text ? `: ${text}` : "";
}

function dropUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
