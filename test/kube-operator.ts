/**
 * The operator as the kubernetes backend's end-to-end tests run it: started
 * against a fake API server and already leading when the tests begin.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import { vi } from "vitest";
import { startOperator, type OperatorTiming, type RunningOperator } from "../internal/operator/index.ts";
import { operatorSchema, parseConfig } from "../internal/platform/config/index.ts";
import type { Logger } from "../internal/platform/log/index.ts";

/** Starts an operator watching `namespace` and waits (up to 20 s) until it leads and is ready. */
export async function startLeadingOperator(kubeConfig: KubeConfig, namespace: string, log: Logger, timing: Partial<OperatorTiming>): Promise<RunningOperator> {
  const config = parseConfig(operatorSchema, {
    LOG_LEVEL: "silent",
    FOLIO_METRICS_ENABLED: "false",
    FOLIO_OPERATOR_NAMESPACE: namespace,
    FOLIO_OPERATOR_IDENTITY: "test-operator",
    FOLIO_LEASE_RENEW_SECONDS: "1",
  });
  const operator = await startOperator({ config, log, kubeConfig, timing });
  await vi.waitFor(
    () => {
      if (!operator.isLeader() || !operator.ready()) throw new Error(`the operator did not start leading: ${JSON.stringify(operator.health())}`);
    },
    { timeout: 20_000, interval: 50 },
  );
  return operator;
}
