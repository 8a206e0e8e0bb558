/**
 * A SandboxBroker served on loopback gRPC with a client of it, as sandbox
 * pods would reach it: shared by the broker and kubernetes-backend tests.
 */
import { afterAll, beforeAll } from "vitest";
import { KubernetesBackend, registerBroker, type KubernetesBackendOptions, type SandboxBroker } from "../internal/sandbox/kubernetes/index.ts";
import type { ProtoGrpcType } from "../internal/gen/proto/conversion.ts";
import type { SandboxBrokerClient } from "../internal/gen/proto/folio/conversion/v1/SandboxBroker.ts";
import { clientOptions, grpc, loadProto, startGrpcServer } from "../internal/platform/grpc/index.ts";

export interface BrokerServer {
  /** host:port sandbox programs dial. */
  address: string;
  client: SandboxBrokerClient;
  close(): Promise<void>;
}

/** `host`: the loopback address to listen on, `::1` for sandboxes that reach the broker over IPv6. */
export async function startBrokerServer(broker: SandboxBroker, host = "127.0.0.1"): Promise<BrokerServer> {
  const server = await startGrpcServer(host, 0, (s) => {
    registerBroker(s, broker);
    return [];
  });
  const proto = loadProto<ProtoGrpcType>("folio/conversion/v1/conversion.proto");
  const client = new proto.folio.conversion.v1.SandboxBroker(server.address, grpc.credentials.createInsecure(), clientOptions);
  return {
    address: server.address,
    client,
    close: async () => {
      client.close();
      await server.close();
    },
  };
}

/** Serves `broker` for the calling test file: started before its tests, closed after them. */
export function serveBrokerForTests(broker: SandboxBroker, host?: string): Pick<BrokerServer, "address" | "client"> {
  let running: BrokerServer | undefined;
  beforeAll(async () => {
    running = await startBrokerServer(broker, host);
  });
  afterAll(async () => {
    await running?.close();
  });
  const started = () => {
    if (!running) throw new Error("the broker server is started in beforeAll");
    return running;
  };
  return {
    get address() {
      return started().address;
    },
    get client() {
      return started().client;
    },
  };
}

/**
 * A KubernetesBackend handing its documents to `broker`, which sandboxes
 * reach at `served.address`, as a conversion replica wires it; pages up to
 * 64 MiB unless `options` says otherwise.
 */
export function backendOnBroker(
  broker: SandboxBroker,
  served: Pick<BrokerServer, "address">,
  options: Omit<KubernetesBackendOptions, "broker" | "brokerAddress" | "maxOutputBytes"> & { maxOutputBytes?: number },
): KubernetesBackend {
  return new KubernetesBackend({ brokerAddress: served.address, broker, maxOutputBytes: 64 * 1024 * 1024, ...options });
}
