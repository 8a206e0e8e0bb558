/** GET /v1/webhook-endpoints/{id}: a webhook endpoint, never its secret (docs/webhooks.md). */
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { ENDPOINTS_PATH, EndpointParams, WebhookEndpoint, endpointView, ownedEndpoint, webhookRoute } from "./webhooks.shared.ts";

export default function register(app: App, deps: EdgeDeps): void {
  app.get(
    `${ENDPOINTS_PATH}/:id`,
    webhookRoute("read", { summary: "A webhook endpoint (never its secret)", params: EndpointParams, response: { 200: WebhookEndpoint } }),
    async (req) => endpointView(await ownedEndpoint(deps.db, principalOf(req).accountId, req.params.id)),
  );
}
