/** PATCH /v1/webhook-endpoints/{id}: changes an endpoint's url, events or description, or disables and enables it (docs/webhooks.md). */
import { Type } from "typebox";
import { updateEndpoint } from "../../webhooks/index.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import {
  ENDPOINTS_PATH,
  EndpointDescription,
  EndpointEvents,
  EndpointParams,
  EndpointUrl,
  WebhookEndpoint,
  checkEndpointUrl,
  endpointNotFound,
  endpointView,
  normalizeEvents,
  ownedEndpoint,
  webhookRoute,
} from "./webhooks.shared.ts";

const Body = Type.Object(
  {
    url: Type.Optional(EndpointUrl),
    events: Type.Optional(EndpointEvents),
    description: Type.Optional(EndpointDescription),
    disabled: Type.Optional(Type.Boolean({ description: "false enables an endpoint again (also one Folio disabled)." })),
  },
  { additionalProperties: false, minProperties: 1, description: "At least one field." },
);

export default function register(app: App, deps: EdgeDeps): void {
  app.patch(
    `${ENDPOINTS_PATH}/:id`,
    webhookRoute("write", {
      summary: "Change a webhook endpoint's url, events or description, or disable and enable it",
      params: EndpointParams,
      body: Body,
      response: { 200: WebhookEndpoint },
    }),
    async (req) => {
      const accountId = principalOf(req).accountId;
      await ownedEndpoint(deps.db, accountId, req.params.id);
      const b = req.body;
      if (b.url !== undefined) await checkEndpointUrl(deps, b.url);
      const row = await updateEndpoint(deps.db, accountId, req.params.id, {
        url: b.url,
        events: b.events === undefined ? undefined : normalizeEvents(b.events),
        description: b.description,
        disabled: b.disabled,
      });
      return endpointView(row ?? endpointNotFound(req.params.id));
    },
  );
}
