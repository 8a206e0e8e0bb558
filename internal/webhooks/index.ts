/** Webhooks (docs/webhooks.md): signing, sealed secrets, endpoints, the outbox and its deliverer, and what the API does with an endpoint's deliveries. */
export { WebhookDeliverer, type DelivererOptions } from "./deliverer.ts";
export { createEndpoint, deleteEndpoint, findEndpoint, listEndpoints, rotateSecret, updateEndpoint, type EndpointChange, type EndpointRow, type NewEndpoint } from "./endpoints.ts";
export { listAttempts, queueTestEvent, redeliverEvent, type AttemptRow, type QueuedDelivery } from "./deliveries.ts";
export { OUTBOX_CHANNEL, claimDelivery, enqueueEvent, recordAttempt, releaseDelivery, webhookQueueState, type AttemptOutcome, type AttemptResult, type ClaimedDelivery, type OutboxEvent } from "./outbox.ts";
export { DEV_KEY_FILE, SecretBox, loadSecretBox, newSecretKey } from "./secrets.ts";
export { DEFAULT_TOLERANCE_SECONDS, SECRET_PREFIX, WebhookSecretError, newSecret, secretKey, sign, verify, webhookHeaders, type VerifyFailure, type VerifyResult, type WebhookHeaders } from "./signing.ts";
