/**
 * Reconciles one ConversionSandbox (or the namespace's NetworkPolicy) per
 * call, idempotently: every step first looks at what exists and only then
 * writes, so a reconcile repeated after a crash, a conflict or a lost race
 * converges on the same Job and status instead of making a second one.
 *
 * The steps for a sandbox:
 * 1. deleted (deletionTimestamp set): delete its Job (propagation
 *    Background), then remove the finalizer so the API server can let go;
 * 2. make sure the finalizer is on it, so step 1 always gets its turn;
 * 3. finished (Succeeded/Failed): delete it once it is older than the
 *    retention period, else come back when it will be;
 * 4. make sure its Job exists (after the NetworkPolicy that fences it in);
 *    a Job of the same name that some other object controls is an error
 *    status, never adopted or replaced;
 * 5. write the status derived from the Job and its pod (status.ts).
 *
 * Only errors the step expects are caught here (404 where "already gone" is
 * fine, 409 AlreadyExists on create); everything else goes back to the queue,
 * which logs it with the key and retries with back-off.
 */
import { Value } from "typebox/value";
import type { OperatorConfig } from "../platform/config/index.ts";
import type { Logger } from "../platform/log/index.ts";
import { buildJob, buildNetworkPolicy, jobNameFor, networkPolicyMatches, NETWORK_POLICY_NAME } from "./job.ts";
import { controllerOf, isConflict, type Job, type KubeClient, type Pod } from "./kube.ts";
import type { OperatorMetrics } from "./metrics.ts";
import type { WorkResult } from "./queue.ts";
import { ConversionSandboxSpecSchema } from "./schema.ts";
import { deriveStatus, isTerminal, pickPod, statusPatch } from "./status.ts";
import { FINALIZER, KIND, type ConversionSandbox, type ConversionSandboxStatus } from "./types.ts";

/** Queue key of the namespace's NetworkPolicy (no sandbox name can contain a colon). */
export const NETWORK_POLICY_KEY = `networkpolicy:${NETWORK_POLICY_NAME}`;

/** How soon to look again at a sandbox whose Job name is still held by a Job being deleted. */
const TERMINATING_JOB_RETRY_MS = 2000;

export interface ReconcilerOptions {
  /** A client whose writes are refused unless this replica leads. */
  client: KubeClient;
  namespace: string;
  config: OperatorConfig;
  /** Local copies kept by the watches; a Job missing there is still looked up once, it may be newer than the copy. */
  jobs: { get(name: string): Job | undefined };
  pods: { list(): Pod[] };
  log: Logger;
  metrics: OperatorMetrics;
  imagePullGraceMs: number;
  jobVerdictGraceMs: number;
  now?: () => number;
}

export class Reconciler {
  private networkPolicyReady = false;
  private readonly now: () => number;

  constructor(private readonly options: ReconcilerOptions) {
    this.now = options.now ?? Date.now;
  }

  /** Forget that the NetworkPolicy was checked: it is checked again before the next Job (a new leader trusts nothing). */
  resetNetworkPolicy(): void {
    this.networkPolicyReady = false;
  }

  async reconcile(key: string): Promise<WorkResult | void> {
    if (key === NETWORK_POLICY_KEY) return this.ensureNetworkPolicy();
    const { client, namespace } = this.options;
    let sandbox = await client.get("conversionsandboxes", namespace, key);
    if (!sandbox) return; // Deleted: its Job went with the finalizer or the garbage collector.
    const log = this.options.log.child({ sandbox: key });

    if (sandbox.metadata.deletionTimestamp) return this.finalize(sandbox, log);

    if (!sandbox.metadata.finalizers?.includes(FINALIZER)) {
      sandbox = await client.replace("conversionsandboxes", namespace, key, {
        ...sandbox,
        metadata: { ...sandbox.metadata, finalizers: [...(sandbox.metadata.finalizers ?? []), FINALIZER] },
      });
      log.debug("finalizer added");
    }

    if (isTerminal(sandbox.status?.phase)) return this.expire(sandbox, log);

    const jobName = jobNameFor(key);
    // The local copy is trusted only when it is this sandbox's Job; anything else (missing, or a
    // deleted predecessor's not yet gone from the copy) is read from the API server.
    const cached = this.options.jobs.get(jobName);
    let job = cached && controllerOf(cached, KIND)?.uid === sandbox.metadata.uid ? cached : await client.get("jobs", namespace, jobName);
    if (!job) {
      const invalid = [...Value.Errors(ConversionSandboxSpecSchema, sandbox.spec)][0];
      if (invalid) {
        // The CRD's schema refuses such a spec; this catches an outdated CRD. Retrying cannot help.
        await this.writeStatus(sandbox, {
          phase: "Failed",
          reason: "InvalidSpec",
          message: `spec${invalid.instancePath.replaceAll("/", ".")}: ${invalid.message}`,
          observedGeneration: sandbox.metadata.generation,
        });
        return;
      }
      if (sandbox.status?.jobName) {
        // It was made and is gone before it finished: running it again would reuse a spent broker token.
        await this.writeStatus(sandbox, {
          phase: "Failed",
          jobName,
          reason: "JobDeleted",
          message: `Job ${jobName} was deleted before the sandbox finished`,
          observedGeneration: sandbox.metadata.generation,
        });
        return;
      }
      job = await this.createJob(sandbox, log);
    }

    const owner = controllerOf(job, KIND);
    if (owner?.uid !== sandbox.metadata.uid) {
      if (job.metadata?.deletionTimestamp) {
        // A Job of an earlier sandbox of the same name, on its way out.
        return { requeueAfterMs: TERMINATING_JOB_RETRY_MS };
      }
      const by = owner ? `${KIND} ${owner.name} (uid ${owner.uid})` : "no ConversionSandbox";
      log.warn({ job: jobName, owner: owner ?? null }, "a Job with this sandbox's name is controlled by something else");
      await this.writeStatus(sandbox, {
        phase: "Failed",
        jobName,
        reason: "JobConflict",
        message: `Job ${jobName} already exists and is controlled by ${by}, not by this ConversionSandbox`,
        observedGeneration: sandbox.metadata.generation,
      });
      return;
    }

    const derived = deriveStatus({
      sandbox,
      job,
      pod: pickPod(this.options.pods.list(), job),
      now: this.now(),
      imagePullGraceMs: this.options.imagePullGraceMs,
      jobVerdictGraceMs: this.options.jobVerdictGraceMs,
    });
    await this.writeStatus(sandbox, derived.status);
    if (derived.status.phase !== sandbox.status?.phase) log.info({ phase: derived.status.phase, reason: derived.status.reason }, "sandbox phase changed");
    if (isTerminal(derived.status.phase)) return { requeueAfterMs: this.options.config.FOLIO_SANDBOX_RETENTION_SECONDS * 1000 };
    return derived.recheckAfterMs === undefined ? undefined : { requeueAfterMs: derived.recheckAfterMs };
  }

  /** Makes sure the NetworkPolicy was checked in this leadership term, before a Job is created. */
  async fenceReady(): Promise<void> {
    if (!this.networkPolicyReady) await this.ensureNetworkPolicy();
  }

  private async createJob(sandbox: ConversionSandbox, log: Logger): Promise<Job> {
    const { client, namespace, config } = this.options;
    await this.fenceReady();
    const wanted = buildJob({ ...sandbox, metadata: { ...sandbox.metadata, namespace } }, config);
    const name = wanted.metadata!.name!;
    try {
      const job = await client.create("jobs", namespace, wanted);
      this.options.metrics.jobsCreated.inc();
      log.info({ job: name }, "Job created");
      // The status written next records jobName: if the Job vanished later, the sandbox fails rather than runs twice.
      return job;
    } catch (err) {
      if (!isConflict(err)) throw err;
      // AlreadyExists: made by an earlier reconcile (ours if we own it: the caller checks).
      const existing = await client.get("jobs", namespace, name);
      if (!existing) throw err;
      return existing;
    }
  }

  private async finalize(sandbox: ConversionSandbox, log: Logger): Promise<void> {
    const { client, namespace } = this.options;
    const name = sandbox.metadata.name;
    if (!sandbox.metadata.finalizers?.includes(FINALIZER)) return;
    const jobName = sandbox.status?.jobName ?? jobNameFor(name);
    const job = this.options.jobs.get(jobName) ?? (await client.get("jobs", namespace, jobName));
    if (job && controllerOf(job, KIND)?.uid === sandbox.metadata.uid) {
      // Background: the Job goes now and the garbage collector takes its pod after it.
      const deleted = await client.delete("jobs", namespace, jobName, "Background");
      if (deleted) log.info({ job: jobName }, "Job deleted with its sandbox");
    }
    await client.replace("conversionsandboxes", namespace, name, {
      ...sandbox,
      metadata: { ...sandbox.metadata, finalizers: sandbox.metadata.finalizers.filter((f) => f !== FINALIZER) },
    });
    log.debug("finalizer removed");
  }

  /** Deletes a finished sandbox once it is older than the retention period. */
  private async expire(sandbox: ConversionSandbox, log: Logger): Promise<WorkResult | void> {
    const since = Date.parse(sandbox.status?.finishedAt ?? sandbox.metadata.creationTimestamp ?? "");
    const left = (Number.isFinite(since) ? since : 0) + this.options.config.FOLIO_SANDBOX_RETENTION_SECONDS * 1000 - this.now();
    if (left > 0) return { requeueAfterMs: left };
    const deleted = await this.options.client.delete("conversionsandboxes", this.options.namespace, sandbox.metadata.name);
    if (deleted) {
      this.options.metrics.sandboxesDeleted.inc();
      log.info({ phase: sandbox.status?.phase, finishedAt: sandbox.status?.finishedAt }, "finished sandbox deleted after the retention period");
    }
  }

  private async writeStatus(sandbox: ConversionSandbox, next: ConversionSandboxStatus): Promise<void> {
    const patch = statusPatch(sandbox.status, next);
    if (!patch) return;
    const updated = await this.options.client.mergePatch("conversionsandboxes", this.options.namespace, sandbox.metadata.name, { status: patch }, "status");
    // Counted once, when the phase first becomes terminal (a terminal status never changes again).
    const terminal = (p: string | undefined) => p === "Succeeded" || p === "Failed";
    if (terminal(next.phase) && !terminal(sandbox.status?.phase)) {
      this.options.metrics.sandboxOutcomes.inc({ phase: next.phase!, reason: next.phase === "Succeeded" ? "" : (next.reason ?? "Unknown") });
    }
    // Later steps of this reconcile see what was written.
    sandbox.status = updated.status ?? { ...sandbox.status, ...next };
  }

  /** Creates the NetworkPolicy when it is missing and puts its spec back when someone changed it. */
  async ensureNetworkPolicy(): Promise<void> {
    const { client, namespace, config, log } = this.options;
    const wanted = buildNetworkPolicy(namespace, config);
    const actual = await client.get("networkpolicies", namespace, NETWORK_POLICY_NAME);
    if (!actual) {
      try {
        await client.create("networkpolicies", namespace, wanted);
        log.info({ networkPolicy: NETWORK_POLICY_NAME }, "NetworkPolicy created");
      } catch (err) {
        // Created meanwhile by someone else: the next check compares its spec.
        if (!isConflict(err)) throw err;
        return;
      }
    } else if (!networkPolicyMatches(actual, wanted)) {
      await client.replace("networkpolicies", namespace, NETWORK_POLICY_NAME, {
        ...actual,
        metadata: { ...actual.metadata, labels: { ...actual.metadata?.labels, ...wanted.metadata?.labels } },
        spec: wanted.spec,
      });
      log.warn({ networkPolicy: NETWORK_POLICY_NAME }, "NetworkPolicy had been changed; its spec was put back");
    }
    this.networkPolicyReady = true;
  }
}
