/** POST /v1/webhook-endpoints: makes a webhook endpoint; its signing secret is shown this once (docs/webhooks.md). */
import { Type } from "typebox";
import { createEndpoint } from "../../webhooks/index.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import {
  ENDPOINTS_PATH,
  EndpointDescription,
  EndpointEvents,
  EndpointSecret,
  EndpointUrl,
  WebhookEndpoint,
  checkEndpointUrl,
  endpointView,
  normalizeEvents,
  secretBoxOf,
  webhookRoute,
} from "./webhooks.shared.ts";

const Body = Type.Object(
  { url: EndpointUrl, events: Type.Optional(EndpointEvents), description: Type.Optional(EndpointDescription) },
  { additionalProperties: false },
);

export default function register(app: App, deps: EdgeDeps): void {
  app.post(
    ENDPOINTS_PATH,
    webhookRoute("write", {
      summary: "Make a webhook endpoint (its signing secret is shown once)",
      body: Body,
      response: { 201: Type.Object({ ...WebhookEndpoint.properties, secret: EndpointSecret }) },
    }),
    async (req, reply) => {
      const box = secretBoxOf(deps);
      await checkEndpointUrl(deps, req.body.url);
      const { endpoint, secret } = await createEndpoint(deps.db, box, {
        accountId: principalOf(req).accountId,
        url: req.body.url,
        events: normalizeEvents(req.body.events),
        description: req.body.description ?? null,
      });
      reply.code(201).header("location", `${ENDPOINTS_PATH}/${endpoint.id}`);
      return { ...endpointView(endpoint), secret };
    },
  );
}
