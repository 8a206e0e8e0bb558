/**
 * The "cluster" of the k8s-pool benchmark, in a process of its own (as on a
 * real cluster, where the API server, the operator and the nodes are not in
 * the conversion service's process): the fake API server
 * (test/fake-kube-api.ts, a test double), the real operator, and the test
 * kubelet running the real sandbox program, each sandbox left only the CPU
 * nobody else wants once it has its document (bench/k8s-pool.ts says why).
 * Talks to its parent over IPC:
 *
 *   → {type: "ready", url}                  the API server's URL
 *   → {type: "job", name, at}               a Job was stored (epoch ms)
 *   → {type: "line", pod, line, at}         a sandbox's log line of interest
 *   → {type: "demoted", cgroup, nice, none} how the pods were demoted (at close)
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
/** How converting pods were given the leftover CPU (see bench/k8s-pool.ts), counted for the report. */
const demoted = { cgroup: 0, nice: 0, none: 0 };
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
  // A cluster gives every sandbox pod CPUs of its own; here two host them all. A pod's start and its
  // conversion run on the CPU nobody else wants, as on a node of its own; while it waits at the broker
  // (idle) and takes its document (the claim), it is an ordinary process.
  startDemoted: true,
  onLine: (run, line) => {
    const received = line.includes('"sandbox received its document"');
    const ready = line.includes('"warm sandbox ready"');
    if (received || ready) send({ type: "line", pod: run.pod, line, at: Date.now() });
    if (ready) kubelet.promote(run.pod);
    // Its document is in: the claim ends there.
    if (received) demoted[kubelet.demote(run.pod)]++;
  },
});
const config = parseConfig(operatorSchema, { LOG_LEVEL: "silent", FOLIO_METRICS_ENABLED: "false", FOLIO_OPERATOR_NAMESPACE: "default", FOLIO_OPERATOR_IDENTITY: "bench" });
const operator = await startOperator({ config, log, kubeConfig: api.kubeConfig(), timing: { resyncMs: 2000 } });
while (!operator.isLeader() || !operator.ready()) await new Promise((r) => setTimeout(r, 50));
send({ type: "ready", url: api.url });

process.on("message", (message: { type?: string }) => {
  if (message?.type !== "close") return;
  send({ type: "demoted", ...demoted });
  void (async () => {
    await operator.close();
    await kubelet.close();
    await api.close();
    rmSync(work, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    process.exit(0);
  })();
});
process.on("disconnect", () => process.exit(0));
