/**
 * TEST DOUBLE — never used in production.
 *
 * The HTTP side of the fake Kubernetes API server (test/fake-kube-api.ts):
 * the server on 127.0.0.1, the recorded requests, routing of the API's URLs
 * to the verbs (verbs.ts) and watches (store.ts), discovery and `/version`,
 * and a KubeConfig for it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { KubeConfig } from "@kubernetes/client-node";
import { KubeApiError, badRequest, pathNotFound } from "./errors.ts";
import { clone, isObj, keyOf, type Obj } from "./objects.ts";
import { ALL_DEFS, VERBS, apiVersionOf, type ResourceDef } from "./resources.ts";
import { parseFieldSelector, parseLabelSelector } from "./selectors.ts";
import { WATCH_TRUE } from "./store.ts";
import { FakeKubeVerbs } from "./verbs.ts";
import type { FakeKubeApi, FakeKubeApiOptions, RecordedRequest } from "./types.ts";

/** The fake API server: the store and its verbs behind HTTP on 127.0.0.1. */
class FakeKubeApiServer extends FakeKubeVerbs implements FakeKubeApi {
  readonly requests: RecordedRequest[] = [];
  url = "";
  readonly server: Server;

  constructor(options: Required<FakeKubeApiOptions>) {
    super(options);
    this.server = createServer((req, res) => void this.handle(req, res));
  }

  kubeConfig(): KubeConfig {
    return plainHttpKubeConfig(this.url, "default");
  }

  async close(): Promise<void> {
    for (const w of [...this.watches]) this.endWatch(w);
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
  }

  // ---- HTTP ----

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://fake");
    const method = req.method ?? "GET";
    const contentType = req.headers["content-type"];
    const record: RecordedRequest = { method, path: url.pathname, query: Object.fromEntries(url.searchParams), ...(contentType ? { contentType } : {}) };
    this.requests.push(record);
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const text = Buffer.concat(chunks).toString("utf8");
      let body: unknown;
      if (text.trim() !== "") {
        try {
          body = record.body = JSON.parse(text) as unknown;
        } catch (err) {
          throw badRequest(`error decoding request body: ${(err as Error).message}`);
        }
      }
      this.route(method, url.pathname, record.query, body, (contentType ?? "").split(";")[0]!.trim(), res);
    } catch (err) {
      const error = err instanceof KubeApiError ? err : new KubeApiError(500, "InternalError", `fake-kube-api: ${(err as Error).stack ?? String(err)}`);
      if (res.headersSent) res.destroy();
      else sendJson(res, error.code, error.status());
    }
  }

  private route(method: string, path: string, query: Record<string, string>, body: unknown, contentType: string, res: ServerResponse): void {
    const discovery = this.discovery(path);
    if (discovery) {
      if (method !== "GET") throw new KubeApiError(405, "MethodNotAllowed", `the server does not allow this method on the requested resource`);
      return sendJson(res, 200, discovery);
    }
    const m = /^\/api\/(v1)\/(?:namespaces\/([^/]+)\/)?([a-z]+)(?:\/([^/]+)(?:\/([a-z]+))?)?$/.exec(path)
      ?? /^\/apis\/([^/]+\/[^/]+)\/(?:namespaces\/([^/]+)\/)?([a-z]+)(?:\/([^/]+)(?:\/([a-z]+))?)?$/.exec(path);
    const def = m && ALL_DEFS.find((d) => apiVersionOf(d) === m[1] && d.name === m[3]);
    if (!m || !def) throw pathNotFound();
    const namespace = m[2] === undefined ? undefined : decodeURIComponent(m[2]);
    const name = m[4] === undefined ? undefined : decodeURIComponent(m[4]);
    const subresource = m[5];
    if (subresource !== undefined && (subresource !== "status" || !def.statusSubresource)) throw pathNotFound();
    const notAllowed = () => new KubeApiError(405, "MethodNotAllowed", `the server does not allow this method on the requested resource`);

    if (name === undefined) {
      if (method === "GET") {
        if (WATCH_TRUE.has(query.watch ?? "")) return this.startWatch(def, namespace, query, res);
        return sendJson(res, 200, this.listBody(def, namespace, query));
      }
      if (namespace === undefined) throw notAllowed();
      if (method === "POST") return sendJson(res, 201, this.create(def, namespace, body));
      if (method === "DELETE") {
        const policy = propagation(query, body);
        const doomed = this.select(def, namespace, parseLabelSelector(query.labelSelector ?? ""), parseFieldSelector(def, query.fieldSelector ?? ""));
        for (const o of doomed) if (this.stores[def.name].has(keyOf(o))) this.deleteObject(def, namespace, o.metadata.name, policy);
        return sendJson(res, 200, { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success" });
      }
      throw notAllowed();
    }
    if (namespace === undefined) throw pathNotFound();
    const statusOnly = subresource === "status";
    switch (method) {
      case "GET": return sendJson(res, 200, clone(this.require(def, namespace, name)));
      case "PUT": return sendJson(res, 200, this.update(def, namespace, name, body, statusOnly));
      case "PATCH": return sendJson(res, 200, this.patch(def, namespace, name, body, contentType, statusOnly));
      case "DELETE": {
        if (statusOnly) throw notAllowed();
        const { object, gone } = this.deleteObject(def, namespace, name, propagation(query, body), isObj(body) ? body.preconditions : undefined);
        if (!gone || def.returnsDeletedObject) return sendJson(res, 200, object);
        return sendJson(res, 200, { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", details: { name, group: def.group, kind: def.name, uid: object.metadata.uid } });
      }
      default: throw notAllowed();
    }
  }

  private discovery(path: string): Obj | undefined {
    const groupVersion = (d: ResourceDef) => ({ groupVersion: apiVersionOf(d), version: d.version });
    const groups = [...new Set(ALL_DEFS.filter((d) => d.group).map((d) => d.group))]
      .map((name) => ({ name, versions: [groupVersion(ALL_DEFS.find((d) => d.group === name)!)], preferredVersion: groupVersion(ALL_DEFS.find((d) => d.group === name)!) }));
    const resources = (gv: string) => {
      const defs = ALL_DEFS.filter((d) => apiVersionOf(d) === gv);
      if (defs.length === 0) return undefined;
      return {
        kind: "APIResourceList", apiVersion: "v1", groupVersion: gv,
        resources: defs.flatMap((d) => [
          { name: d.name, singularName: d.singular, namespaced: true, kind: d.kind, verbs: VERBS, ...(d.shortNames ? { shortNames: d.shortNames } : {}) },
          ...(d.statusSubresource ? [{ name: `${d.name}/status`, singularName: "", namespaced: true, kind: d.kind, verbs: ["get", "patch", "update"] }] : []),
        ]),
      };
    };
    if (path === "/version") return { major: "1", minor: "33", gitVersion: "v1.33.0-folio-fake", gitCommit: "0000000000000000000000000000000000000000", gitTreeState: "clean", buildDate: "2025-01-01T00:00:00Z", goVersion: "go1.24.0", compiler: "gc", platform: "linux/amd64" };
    if (path === "/api") return { kind: "APIVersions", versions: ["v1"], serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress: new URL(this.url).host }] };
    if (path === "/api/v1") return resources("v1");
    if (path === "/apis") return { kind: "APIGroupList", apiVersion: "v1", groups };
    const m = /^\/apis\/([^/]+)(?:\/([^/]+))?$/.exec(path);
    if (!m) return undefined;
    if (m[2] !== undefined) return resources(`${m[1]}/${m[2]}`);
    const group = groups.find((g) => g.name === m[1]);
    return group && { kind: "APIGroup", apiVersion: "v1", ...group };
  }
}

/** propagationPolicy from the query or the DeleteOptions body; `orphanDependents=true` is the old spelling of Orphan. Default: Background (see the header). */
function propagation(query: Record<string, string>, body: unknown): string {
  const fromBody = isObj(body) ? body : {};
  const policy = query.propagationPolicy ?? fromBody.propagationPolicy;
  if (policy !== undefined) {
    if (policy !== "Orphan" && policy !== "Background" && policy !== "Foreground") {
      throw badRequest(`propagationPolicy: Unsupported value: ${JSON.stringify(policy)}: supported values: "Foreground", "Background", "Orphan"`);
    }
    return policy;
  }
  return query.orphanDependents === "true" || fromBody.orphanDependents === true ? "Orphan" : "Background";
}

function sendJson(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text) });
  res.end(text);
}

/** Starts a fake API server on 127.0.0.1 with an ephemeral port. */
export async function startFakeKubeApi(options: FakeKubeApiOptions = {}): Promise<FakeKubeApi> {
  const api = new FakeKubeApiServer({ jobController: false, bookmarkIntervalMs: 1000, historySize: 1000, ...options });
  await new Promise<void>((resolve, reject) => {
    api.server.once("error", reject);
    api.server.listen(0, "127.0.0.1", () => resolve());
  });
  api.url = `http://127.0.0.1:${(api.server.address() as AddressInfo).port}`;
  return api;
}

/** A KubeConfig for a plain-HTTP API server at `url`, without credentials; `name` names its cluster, user and context. */
export function plainHttpKubeConfig(url: string, namespace: string, name = "fake"): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    // client-node 2.x refuses an http:// server unless skipTLSVerify is true
    // ("HTTP protocol is not allowed when skipTLSVerify is not set or false").
    clusters: [{ name, server: url, skipTLSVerify: true }],
    users: [{ name }],
    contexts: [{ name, cluster: name, user: name, namespace }],
    currentContext: name,
  });
  return kc;
}
