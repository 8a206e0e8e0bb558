/**
 * TEST DOUBLE — never used in production.
 *
 * The resources the fake Kubernetes API server (test/fake-kube-api.ts)
 * serves, as its discovery documents and URLs name them, and the names it
 * gives them in messages.
 */
import type { FakeResource } from "./types.ts";

export interface ResourceDef {
  name: FakeResource;
  group: string;
  version: string;
  kind: string;
  singular: string;
  statusSubresource: boolean;
  /** Field selector labels besides metadata.name/namespace (as the real server's field label conversion funcs). */
  fieldLabels: string[];
  /** Real DELETE answers the deleted object for pods (ReturnDeletedObject), a Status for the others. */
  returnsDeletedObject: boolean;
  shortNames?: string[];
}

export const DEFS: Record<FakeResource, ResourceDef> = {
  pods: {
    name: "pods", group: "", version: "v1", kind: "Pod", singular: "pod", statusSubresource: true, returnsDeletedObject: true, shortNames: ["po"],
    fieldLabels: ["spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"],
  },
  events: {
    name: "events", group: "", version: "v1", kind: "Event", singular: "event", statusSubresource: false, returnsDeletedObject: false, shortNames: ["ev"],
    fieldLabels: ["involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason", "reportingComponent", "type"],
  },
  jobs: { name: "jobs", group: "batch", version: "v1", kind: "Job", singular: "job", statusSubresource: true, returnsDeletedObject: false, fieldLabels: ["status.successful"] },
  networkpolicies: { name: "networkpolicies", group: "networking.k8s.io", version: "v1", kind: "NetworkPolicy", singular: "networkpolicy", statusSubresource: false, returnsDeletedObject: false, fieldLabels: [], shortNames: ["netpol"] },
  leases: { name: "leases", group: "coordination.k8s.io", version: "v1", kind: "Lease", singular: "lease", statusSubresource: false, returnsDeletedObject: false, fieldLabels: [] },
  conversionsandboxes: { name: "conversionsandboxes", group: "folio.dev", version: "v1alpha1", kind: "ConversionSandbox", singular: "conversionsandbox", statusSubresource: true, returnsDeletedObject: false, fieldLabels: [], shortNames: ["csb"] },
  conversionsandboxpools: { name: "conversionsandboxpools", group: "folio.dev", version: "v1alpha1", kind: "ConversionSandboxPool", singular: "conversionsandboxpool", statusSubresource: true, returnsDeletedObject: false, fieldLabels: [], shortNames: ["csbp"] },
};
export const ALL_DEFS = Object.values(DEFS);
export const CUSTOM_GROUPS = new Set(["folio.dev"]);
export const VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];
/** k8s.io/apiserver names.SimpleNameGenerator: no vowels (no accidental words), no look-alike 0/1/3. */
export const NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789";
export const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export const apiVersionOf = (d: ResourceDef) => (d.group ? `${d.group}/${d.version}` : d.version);
/** "pods", "jobs.batch": how the real server names a resource in messages. */
export const qualified = (d: ResourceDef) => (d.group ? `${d.name}.${d.group}` : d.name);
