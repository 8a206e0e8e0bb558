/** POST /v1/webhook-endpoints/{id}/rotate-secret: a new signing secret, shown once; the old one keeps signing during the overlap (docs/webhooks-signing.md). */
import { Type } from "typebox";
import { rotateSecret } from "../../webhooks/index.ts";
import { UnixSeconds } from "../schemas.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { ENDPOINTS_PATH, EndpointParams, EndpointSecret, WebhookEndpoint, endpointNotFound, endpointView, ownedEndpoint, secretBoxOf, webhookRoute } from "./webhooks.shared.ts";

export default function register(app: App, deps: EdgeDeps): void {
  app.post(
    `${ENDPOINTS_PATH}/:id/rotate-secret`,
    webhookRoute("write", {
      summary: "Give a webhook endpoint a new secret (shown once); the old one keeps signing during the overlap",
      params: EndpointParams,
      response: { 200: Type.Object({ ...WebhookEndpoint.properties, secret: EndpointSecret, previous_secret_expires_at: Type.Union([UnixSeconds, Type.Null()]) }) },
    }),
    async (req) => {
      const box = secretBoxOf(deps);
      const accountId = principalOf(req).accountId;
      await ownedEndpoint(deps.db, accountId, req.params.id);
      const rotated = (await rotateSecret(deps.db, box, accountId, req.params.id, deps.webhooks.rotationOverlapSeconds)) ?? endpointNotFound(req.params.id);
      return { ...endpointView(rotated.endpoint), secret: rotated.secret };
    },
  );
}
