/**
 * The "cluster" of the k8s-pool benchmark, in a process of its own (as on a
 * real cluster, where the API server, the operator and the nodes are not in
 * the conversion service's process): the fake API server
 * (test/fake-kube-api.ts, a test double), the real operator, and the test
 * kubelet running the real sandbox program, each sandbox at niceness 10
 * until it has its document and 19 after (bench/k8s-pool.ts says why).
 * Talks to its parent over IPC:
 *
 *   → {type: "ready", url}                  the API server's URL
 *   → {type: "job", name, at}               a Job was stored (epoch ms)
 *   → {type: "line", pod, line, at}         a sandbox's log line of interest
 *   ← {type: "close"}                       stop everything and exit
 *
 * Run by bench/k8s-pool.ts; not on its own.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeKubeApi } from "../test/fake-kube-api.ts";
import { startFakeKubelet } from "../test/fake-kubelet.ts";
import { startOperator } from "../internal/operator/index.ts";
import { operatorSchema, parseConfig } from "../internal/platform/config/index.ts";
import { createLogger } from "../internal/platform/log/index.ts";
import { buildSandboxProgram, resolveNodeBinary } from "../internal/sandbox/assets.ts";
import { prepareProfile } from "../internal/sandbox/profile.ts";

const send = (message: unknown) => process.send?.(message);
/** Niceness of a sandbox until it has its document, and after (see bench/k8s-pool.ts). */
const NICENESS = { waiting: 10, converting: 19 } as const;
const work = mkdtempSync(join(tmpdir(), "folio-bench-cluster-"));
const log = createLogger("silent");

const api = await startFakeKubeApi({ jobController: true, bookmarkIntervalMs: 500 });
api.onChange((e) => {
  if (e.resource === "jobs" && e.type === "ADDED") send({ type: "job", name: e.object.metadata.name, at: Date.now() });
});
const profileDir = join(work, "profile");
const [program, nodeBinary] = await Promise.all([buildSandboxProgram(join(work, "sandbox.mjs")), resolveNodeBinary(), prepareProfile(profileDir)]);
const kubelet = startFakeKubelet({
  api,
  program,
  nodeBinary,
  profileDir,
  workDir: work,
  // A cluster gives every sandbox pod CPUs of its own; here two CPUs host them all (see bench/k8s-pool.ts).
  nice: NICENESS.waiting,
  onLine: (run, line) => {
    const received = line.includes('"sandbox received its document"');
    if (received || line.includes('"warm sandbox ready"')) send({ type: "line", pod: run.pod, line, at: Date.now() });
    // Its document is in (the claim ends there): its conversion runs on what CPU is left, as on CPUs of its own.
    if (received) kubelet.renice(run.pod, NICENESS.converting);
  },
});
const config = parseConfig(operatorSchema, { LOG_LEVEL: "silent", FOLIO_METRICS_ENABLED: "false", FOLIO_OPERATOR_NAMESPACE: "default", FOLIO_OPERATOR_IDENTITY: "bench" });
const operator = await startOperator({ config, log, kubeConfig: api.kubeConfig(), timing: { resyncMs: 2000 } });
while (!operator.isLeader() || !operator.ready()) await new Promise((r) => setTimeout(r, 50));
send({ type: "ready", url: api.url });

process.on("message", (message: { type?: string }) => {
  if (message?.type !== "close") return;
  void (async () => {
    await operator.close();
    await kubelet.close();
    await api.close();
    rmSync(work, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    process.exit(0);
  })();
});
process.on("disconnect", () => process.exit(0));
