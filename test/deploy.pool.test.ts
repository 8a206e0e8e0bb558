/**
 * The chart's warm pool parts, rendered with `helm template` (the project's
 * helm, scripts/k8s-tools.sh): the ConversionSandboxPool with its values, and
 * `conversion.stableBrokerNames` (a StatefulSet behind a headless broker
 * Service, so each replica's broker address is a stable DNS name). And the
 * same in kustomize (`kubectl kustomize` of the base and the overlays): the
 * pool, the conversion replicas' variables naming it, the Roles it needs,
 * and the stable-broker-names component that the production overlay uses.
 */
import { join } from "node:path";
import { Value } from "typebox/value";
import { StatefulSet } from "kubernetes-models/apps/v1";
import { Service } from "kubernetes-models/v1";
import { beforeAll, describe, expect, it } from "vitest";
import { KUSTOMIZE_DIR, kubectl, parseObjects, renderChart, type K8sObject } from "../deploy/kustomize/generate.ts";
import { conversionSchema, parseConfig } from "../internal/platform/config/index.ts";
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

type Rule = { apiGroups: string[]; resources: string[]; resourceNames?: string[]; verbs: string[] };
const rulesOf = (o: K8sObject | undefined) => (o as unknown as { rules: Rule[] } | undefined)?.rules ?? [];
const conversionWorkload = (objects: K8sObject[]) => objects.find((o) => (o.kind === "Deployment" || o.kind === "StatefulSet") && o.metadata.name === "folio-conversion");

describe("the chart's conversion replicas and the pool", () => {
  it("name the pool they report to, and take no warm pods when the pool is off", () => {
    const on = envOf(conversionWorkload(renderChart({ set: ["sandboxPool.name=warm"] }))!);
    expect(parseConfig(conversionSchema, on)).toMatchObject({ FOLIO_SANDBOX_POOL_ENABLED: true, FOLIO_SANDBOX_POOL: "warm" });
    const off = envOf(conversionWorkload(renderChart({ set: ["sandboxPool.enabled=false"] }))!);
    expect(parseConfig(conversionSchema, off).FOLIO_SANDBOX_POOL_ENABLED).toBe(false);
  });
});

describe("kustomize: the warm pool in the base and the overlays", () => {
  /** What each overlay sets the pool to (the base: the chart's defaults). */
  const SIZES: Record<string, { minReady: number; max: number }> = { base: { minReady: 2, max: 20 }, "overlays/dev": { minReady: 1, max: 4 }, "overlays/production": { minReady: 4, max: 40 } };
  const built = new Map<string, K8sObject[]>();
  beforeAll(() => {
    for (const dir of Object.keys(SIZES)) built.set(dir, parseObjects(kubectl(["kustomize", join(KUSTOMIZE_DIR, dir)])));
  }, 120_000);

  it.each(Object.keys(SIZES))("%s: one ConversionSandboxPool, the conversion replicas report to it, and the Roles allow what the pool needs", (dir) => {
    const objects = built.get(dir)!;
    const pools = objects.filter((o) => o.kind === "ConversionSandboxPool");
    expect(pools.map((p) => p.metadata.name)).toEqual(["folio-sandbox"]);
    const pool = pools[0]!;
    expect(pool.spec, dir).toMatchObject(SIZES[dir]!);
    expect(Value.Check(ConversionSandboxPoolSpecSchema, pool.spec), JSON.stringify(pool.spec)).toBe(true);
    expect(objects.some((o) => o.kind === "CustomResourceDefinition" && o.metadata.name === "conversionsandboxpools.folio.dev")).toBe(true);

    const config = parseConfig(conversionSchema, envOf(conversionWorkload(objects)!));
    expect(config).toMatchObject({ FOLIO_SANDBOX: "kubernetes", FOLIO_SANDBOX_POOL_ENABLED: true, FOLIO_SANDBOX_POOL: pool.metadata.name });

    // The replica writes only its report into this pool's status, and reads the pool's Jobs.
    const conversionRules = rulesOf(objects.find((o) => o.kind === "Role" && o.metadata.name === "folio-conversion"));
    expect(conversionRules).toContainEqual({ apiGroups: ["folio.dev"], resources: ["conversionsandboxpools/status"], resourceNames: [pool.metadata.name], verbs: ["get", "patch"] });
    expect(conversionRules).toContainEqual({ apiGroups: ["batch"], resources: ["jobs"], verbs: ["list", "watch"] });
    // The operator reads pools, writes their status, owns their Jobs.
    const operatorRules = rulesOf(objects.find((o) => o.kind === "Role" && o.metadata.name === "folio-operator"));
    for (const resource of ["conversionsandboxpools", "conversionsandboxpools/status", "conversionsandboxpools/finalizers"]) {
      expect(operatorRules.some((r) => r.apiGroups.includes("folio.dev") && r.resources.includes(resource)), `${dir}: the operator may use ${resource}`).toBe(true);
    }
    expect(operatorRules.some((r) => r.resources.includes("jobs") && r.verbs.includes("create") && r.verbs.includes("delete"))).toBe(true);
  });

  it("production: the conversion service as a StatefulSet behind the headless broker Service, with a DNS name as its broker address", () => {
    const objects = built.get("overlays/production")!;
    expect(find(objects, "Deployment", "folio-conversion")).toBeUndefined();
    const set = find(objects, "StatefulSet", "folio-conversion")!;
    expect(() => new StatefulSet(set as never).validate()).not.toThrow();
    expect(set.spec).toMatchObject({ serviceName: "folio-conversion-broker", podManagementPolicy: "Parallel" });
    expect(set.metadata.namespace).toBe("folio");
    const service = find(objects, "Service", "folio-conversion-broker")!;
    expect(service.spec).toMatchObject({ clusterIP: "None", publishNotReadyAddresses: true, ports: [{ name: "broker", port: 50053, targetPort: "broker" }] });
    expect(service.metadata.namespace).toBe("folio");
    expect(envOf(set).FOLIO_BROKER_ADDRESS).toBe("$(POD_NAME).folio-conversion-broker.$(POD_NAMESPACE).svc:50053");
    // The overlay's own scaling still applies on top of the component's change of target.
    expect(find(objects, "HorizontalPodAutoscaler", "folio-conversion")?.spec).toMatchObject({ minReplicas: 2, maxReplicas: 10, scaleTargetRef: { kind: "StatefulSet", name: "folio-conversion" } });
    // The headless Service selects the StatefulSet's pods (the sandboxes' NetworkPolicy selects the same labels).
    const podLabels = (set.spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels;
    const selector = (service.spec as { selector: Record<string, string> }).selector;
    expect(Object.entries(selector).every(([k, v]) => podLabels[k] === v), JSON.stringify({ selector, podLabels })).toBe(true);
  });

  it("dev: pod IPs as broker addresses (no component), as the chart's default", () => {
    const objects = built.get("overlays/dev")!;
    expect(find(objects, "StatefulSet", "folio-conversion")).toBeUndefined();
    expect(envOf(find(objects, "Deployment", "folio-conversion")!).FOLIO_BROKER_ADDRESS).toBe("$(POD_IP):50053");
  });
});
