/**
 * The `kubernetes` sandbox backend, for the conversion process: the backend
 * that asks the operator for one ConversionSandbox per document
 * (`backend.ts`) and the broker its pods fetch documents from and return
 * pages to (`broker.ts`). The pod's side of that exchange is `pod.ts`, loaded
 * on its own by the sandbox program (`cmd/sandbox`) in broker mode.
 */
export { KubernetesBackend, type KubernetesBackendOptions } from "./backend.ts";
export { BROKER_SERVICE_NAME, SandboxBroker, registerBroker, type BrokerJobInput, type BrokerResult } from "./broker.ts";
