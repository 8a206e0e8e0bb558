/**
 * The chart's warm pool parts, rendered with `helm template` (the project's
 * helm, scripts/k8s-tools.sh): the ConversionSandboxPool with its values, and
 * `conversion.stableBrokerNames` (a StatefulSet behind a headless broker
 * Service, so each replica's broker address is a stable DNS name).
 */
import { Value } from "typebox/value";
import { StatefulSet } from "kubernetes-models/apps/v1";
import { Service } from "kubernetes-models/v1";
import { describe, expect, it } from "vitest";
import { renderChart, type K8sObject } from "../deploy/kustomize/generate.ts";
import { ConversionSandboxPoolSpecSchema } from "../internal/operator/index.ts";
import { ConversionSandboxSpecSchema } from "../internal/operator/schema.ts";

const find = (objects: K8sObject[], kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name);
type Container = { env?: { name: string; value?: string }[] };
const envOf = (o: K8sObject) => {
  const c = (o as unknown as { spec: { template: { spec: { containers: Container[] } } } }).spec.template.spec.containers[0]!;
  return Object.fromEntries((c.env ?? []).filter((e) => e.value !== undefined).map((e) => [e.name, e.value!]));
};

describe("the chart's warm pool", () => {
  it("renders the ConversionSandboxPool its values describe, valid against the CRD's schema", () => {
    const pool = find(renderChart({ set: ["sandboxPool.minReady=0", "sandboxPool.max=7"] }), "ConversionSandboxPool", "folio-sandbox");
    expect(pool?.spec).toEqual({ minReady: 0, max: 7, leadSeconds: 10, idleSeconds: 600, timeoutSeconds: 120 });
    expect(Value.Check(ConversionSandboxPoolSpecSchema, pool?.spec), JSON.stringify(pool?.spec)).toBe(true);
    expect(find(renderChart({ set: ["sandboxPool.enabled=false"] }), "ConversionSandboxPool", "folio-sandbox")).toBeUndefined();
  });

  it("with stableBrokerNames: a StatefulSet behind a headless broker Service, and a DNS name as the broker address", () => {
    const objects = renderChart({ set: ["conversion.stableBrokerNames=true"] });
    const set = find(objects, "StatefulSet", "folio-conversion");
    expect(find(objects, "Deployment", "folio-conversion")).toBeUndefined();
    expect(() => new StatefulSet(set as never).validate()).not.toThrow();
    expect(set?.spec).toMatchObject({ serviceName: "folio-conversion-broker", podManagementPolicy: "Parallel" });
    const service = find(objects, "Service", "folio-conversion-broker");
    expect(() => new Service(service as never).validate()).not.toThrow();
    expect(service?.spec).toMatchObject({ clusterIP: "None", publishNotReadyAddresses: true, ports: [{ name: "broker", port: 50053, targetPort: "broker" }] });
    const address = envOf(set!).FOLIO_BROKER_ADDRESS!;
    expect(address).toBe("$(POD_NAME).folio-conversion-broker.$(POD_NAMESPACE).svc:50053");
    // As the kubelet expands it: a name the CRDs accept.
    const expanded = address.replace("$(POD_NAME)", "folio-conversion-0").replace("$(POD_NAMESPACE)", "folio");
    expect(Value.Check(ConversionSandboxSpecSchema, { format: "DOCX", maxPages: 1, timeoutSeconds: 1, broker: { address: expanded, token: "tok_0123456789abcdef0123" } })).toBe(true);
    expect(find(objects, "HorizontalPodAutoscaler", "folio-conversion")?.spec).toMatchObject({ scaleTargetRef: { kind: "StatefulSet", name: "folio-conversion" } });
  });

  it("without it: the Deployment addressed by pod IP, as before", () => {
    const objects = renderChart();
    expect(find(objects, "StatefulSet", "folio-conversion")).toBeUndefined();
    expect(find(objects, "Service", "folio-conversion-broker")).toBeUndefined();
    expect(envOf(find(objects, "Deployment", "folio-conversion")!).FOLIO_BROKER_ADDRESS).toBe("$(POD_IP):50053");
    expect(find(objects, "HorizontalPodAutoscaler", "folio-conversion")?.spec).toMatchObject({ scaleTargetRef: { kind: "Deployment" } });
  });
});
