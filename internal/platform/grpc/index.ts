/**
 * gRPC plumbing shared by every service: proto loading, server start with the
 * standard health service, typed unary calls with a deadline on every call.
 */
import { fileURLToPath } from "node:url";
import { existsSync } from "node:fs";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { HealthImplementation } from "grpc-health-check";
import { fromGrpcError, toGrpcStatus } from "./errors.ts";
import { MAX_MESSAGE_BYTES, PROTO_LOAD_OPTIONS } from "./load-options.ts";

export { fromGrpcError, toGrpcStatus } from "./errors.ts";
export { grpc };

export { MAX_MESSAGE_BYTES, PROTO_LOAD_OPTIONS };

/** The `proto/` folder: beside the sources, or copied into dist/ by `make build`. */
function protoRoot(): string {
  for (const up of ["../../../proto", "../../../../proto"]) {
    const dir = fileURLToPath(new URL(up, import.meta.url));
    if (existsSync(join(dir, "folio"))) return dir;
  }
  throw new Error("proto/ folder not found next to the code");
}

/** Loads a .proto file (path relative to proto/) with the options the generated types assume. */
export function loadProto<T>(relPath: string): T {
  const def = protoLoader.loadSync(relPath, { includeDirs: [protoRoot()], ...PROTO_LOAD_OPTIONS });
  return grpc.loadPackageDefinition(def) as unknown as T;
}

/** Wraps an async handler as a grpc-js unary handler with the one error mapping. */
export function unary<Req, Res>(
  fn: (req: Req, call: grpc.ServerUnaryCall<Req, Res>) => Promise<Res>,
  onError?: (err: unknown, method: string) => void,
  method = "",
): grpc.handleUnaryCall<Req, Res> {
  return (call, callback) => {
    fn(call.request, call).then(
      (res) => callback(null, res),
      (err: unknown) => callback(statusOf(err, method, onError) as grpc.ServiceError),
    );
  };
}

/**
 * The status a handler's failure is answered with, after `onError` saw it
 * (logs, metrics). Never throws: an error path that failed would be an
 * unhandled rejection, which ends the process.
 */
export function statusOf(err: unknown, method: string, onError?: (err: unknown, method: string) => void): Partial<grpc.StatusObject> {
  try {
    onError?.(err, method);
    return toGrpcStatus(err);
  } catch {
    return { code: grpc.status.INTERNAL, details: "internal error" };
  }
}

/** Ends a server stream with `err`'s status, unless the client is gone or the stream already ended. */
export function failStream(call: grpc.ServerWritableStream<unknown, unknown>, err: unknown, method: string, onError?: (err: unknown, method: string) => void): void {
  const st = statusOf(err, method, onError);
  if (!call.cancelled && !call.writableEnded) call.emit("error", st);
}

/**
 * Runs `fn` with an AbortSignal that fires when the client cancels or the
 * call's deadline passes, and lets go of the call when `fn` settles: a
 * deadline timer left running would keep the call, and with it the request
 * (a page image), alive until the deadline.
 */
export async function withCallSignal<T>(
  call: { on(event: "cancelled", listener: () => void): unknown; off(event: "cancelled", listener: () => void): unknown; getDeadline(): grpc.Deadline },
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const ac = new AbortController();
  const onCancelled = () => ac.abort(new Error("call cancelled"));
  call.on("cancelled", onCancelled);
  const deadline = call.getDeadline();
  const ms = deadline instanceof Date ? deadline.getTime() - Date.now() : typeof deadline === "number" && Number.isFinite(deadline) ? deadline - Date.now() : undefined;
  const timer = ms !== undefined && ms > 0 ? setTimeout(() => ac.abort(new Error("deadline exceeded")), ms) : undefined;
  try {
    return await fn(ac.signal);
  } finally {
    clearTimeout(timer);
    call.off("cancelled", onCancelled);
  }
}

export interface RunningGrpcServer {
  server: grpc.Server;
  /** host:port the server listens on. */
  address: string;
  health: HealthImplementation;
  close(): Promise<void>;
}

/** What metrics see of each gRPC call (see GrpcObserver in platform/metrics). */
export interface CallObserver {
  observe(method: string, code: string, seconds: number): void;
}

const codeName = (code: grpc.status): string => grpc.status[code] ?? String(code);

/** A server interceptor reporting every call's method, status code and duration. */
export function observingServerInterceptor(observer: CallObserver): grpc.ServerInterceptor {
  return (method, call) => {
    const started = performance.now();
    return new grpc.ServerInterceptingCall(call, {
      sendStatus: (status, next) => {
        observer.observe(method.path, codeName(status.code), (performance.now() - started) / 1000);
        next(status);
      },
    });
  };
}

/** A client interceptor reporting every call's method, status code and duration. */
export function observingClientInterceptor(observer: CallObserver): grpc.Interceptor {
  return (options, nextCall) => {
    const started = performance.now();
    const method = options.method_definition.path;
    return new grpc.InterceptingCall(nextCall(options), {
      start: (metadata, listener, next) => {
        next(
          metadata,
          new grpc.ListenerBuilder()
            .withOnReceiveStatus((status, nextStatus) => {
              observer.observe(method, codeName(status.code), (performance.now() - started) / 1000);
              nextStatus(status);
            })
            .build(),
        );
      },
    });
  };
}

/** Starts a server with the given services plus grpc.health.v1, marked SERVING. */
export async function startGrpcServer(
  host: string,
  port: number,
  register: (server: grpc.Server) => string[],
  observer?: CallObserver,
): Promise<RunningGrpcServer> {
  const server = new grpc.Server({
    "grpc.max_receive_message_length": MAX_MESSAGE_BYTES,
    "grpc.max_send_message_length": MAX_MESSAGE_BYTES,
    ...(observer ? { interceptors: [observingServerInterceptor(observer)] } : {}),
  });
  const names = register(server);
  const health = new HealthImplementation(Object.fromEntries([["", "SERVING"], ...names.map((n) => [n, "SERVING"])]));
  health.addToServer(server);
  // An IPv6 host ("::", "::1") goes in brackets, or its last group would be read as the port.
  const hostPart = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${hostPart}:${port}`, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return {
    server,
    address: `${hostPart}:${bound}`,
    health,
    close: () =>
      new Promise<void>((resolve) => {
        health.setStatus("", "NOT_SERVING");
        server.tryShutdown(() => resolve());
        // Calls still running after 5 s are cut off.
        setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 5000).unref();
      }),
  };
}

export const clientOptions: grpc.ChannelOptions = {
  "grpc.max_receive_message_length": MAX_MESSAGE_BYTES,
  "grpc.max_send_message_length": MAX_MESSAGE_BYTES,
  // Spread calls over every address the name resolves to (a headless Service
  // gives one per pod); the default pick_first would pin one replica.
  "grpc.service_config": JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] }),
};

/** What a client of one of Folio's services is given besides its address. */
export interface ServiceClientOptions {
  /** Client interceptors (the edge's gRPC metrics). */
  interceptors?: grpc.Interceptor[];
}

/**
 * A client of one of Folio's services (a generated service constructor) at
 * `address`: plaintext inside the cluster, with {@link clientOptions} and
 * the given interceptors.
 */
export function serviceClient<T>(
  Service: new (address: string, credentials: grpc.ChannelCredentials, options?: grpc.ClientOptions) => T,
  address: string,
  opts: ServiceClientOptions = {},
): T {
  return new Service(address, grpc.credentials.createInsecure(), { ...clientOptions, interceptors: opts.interceptors ?? [] });
}

type UnaryMethod<Req, Res> = (req: Req, md: grpc.Metadata, opts: grpc.CallOptions, cb: grpc.requestCallback<Res>) => grpc.ClientUnaryCall;

/**
 * Calls a unary method with a deadline (every call has one) and maps a failure
 * to the FolioError the service raised. `what` names the service in messages.
 */
export function callUnary<Req, Res>(
  client: grpc.Client,
  method: UnaryMethod<Req, Res>,
  req: Req,
  opts: { deadlineMs: number; what: string; metadata?: grpc.Metadata; signal?: AbortSignal },
): Promise<Res> {
  return new Promise((resolve, reject) => {
    const call = method.call(client, req, opts.metadata ?? new grpc.Metadata(), { deadline: Date.now() + opts.deadlineMs }, (err, res) => {
      opts.signal?.removeEventListener("abort", cancel);
      if (err) reject(fromGrpcError(err, opts.what));
      else resolve(res as Res);
    });
    const cancel = () => call.cancel();
    opts.signal?.addEventListener("abort", cancel, { once: true });
  });
}
