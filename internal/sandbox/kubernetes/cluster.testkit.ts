/**
 * The cluster the kubernetes backend's end-to-end tests run against: the
 * fake API server with its Job controller (test/fake-kube-api.ts), the
 * sandbox program, a Node binary and a LibreOffice profile made for the
 * test kubelet that runs the pods (test/fake-kubelet.ts), and the real
 * operator, already leading (test/kube-operator.ts). Shared by
 * backend.test.ts and backend.pool.test.ts, which make their backend on it.
 */
import { join } from "node:path";
import { startFakeKubeApi, type FakeKubeApi } from "../../../test/fake-kube-api.ts";
import { startFakeKubelet, type FakeKubelet, type FakeKubeletOptions } from "../../../test/fake-kubelet.ts";
import { startLeadingOperator } from "../../../test/kube-operator.ts";
import type { RunningOperator } from "../../operator/index.ts";
import type { Logger } from "../../platform/log/index.ts";
import { buildSandboxProgram, resolveNodeBinary } from "../assets.ts";
import { prepareProfile } from "../profile.ts";

export interface TestCluster {
  api: FakeKubeApi;
  kubelet: FakeKubelet;
  operator: RunningOperator;
}

export interface TestClusterOptions {
  /** Where the program, the profile and each pod's private folder go. */
  work: string;
  namespace: string;
  log: Logger;
  /** The operator's timings. */
  operator: Parameters<typeof startLeadingOperator>[3];
  /** What the test kubelet does with each pod, and what it tells the test. */
  kubelet?: Pick<FakeKubeletOptions, "behaviour" | "onLine">;
  /** Told of every object the API server stores, from the first. */
  onChange?: Parameters<FakeKubeApi["onChange"]>[0];
}

/** Starts the cluster; what started is closed again when a later part fails. */
export async function startTestCluster(options: TestClusterOptions): Promise<TestCluster> {
  const { work, namespace, log } = options;
  const api = await startFakeKubeApi({ jobController: true, bookmarkIntervalMs: 200 });
  let kubelet: FakeKubelet | undefined;
  try {
    if (options.onChange) api.onChange(options.onChange);
    const profileDir = join(work, "profile");
    const [program, nodeBinary] = await Promise.all([buildSandboxProgram(join(work, "sandbox.mjs")), resolveNodeBinary(), prepareProfile(profileDir)]);
    kubelet = startFakeKubelet({ api, program, nodeBinary, profileDir, workDir: work, ...options.kubelet });
    const operator = await startLeadingOperator(api.kubeConfig(), namespace, log, options.operator);
    return { api, kubelet, operator };
  } catch (err) {
    await kubelet?.close();
    await api.close();
    throw err;
  }
}
