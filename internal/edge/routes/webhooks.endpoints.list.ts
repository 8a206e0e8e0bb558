/** GET /v1/webhook-endpoints: the account's webhook endpoints, oldest first (docs/webhooks.md). */
import { Type } from "typebox";
import { listEndpoints } from "../../webhooks/index.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { ENDPOINTS_PATH, WebhookEndpoint, endpointView, webhookRoute } from "./webhooks.shared.ts";

export default function register(app: App, deps: EdgeDeps): void {
  app.get(
    ENDPOINTS_PATH,
    webhookRoute("read", {
      summary: "The account's webhook endpoints, oldest first",
      response: { 200: Type.Object({ object: Type.Literal("list"), data: Type.Array(WebhookEndpoint) }) },
    }),
    async (req) => {
      const rows = await listEndpoints(deps.db, principalOf(req).accountId);
      return { object: "list" as const, data: rows.map(endpointView) };
    },
  );
}
