/** The webhook endpoints of an account: make, list, read, change, delete, rotate the secret (docs/webhooks.md). */
import { sql } from "kysely";
import { Type } from "typebox";
import { createEndpoint, rotateSecret } from "../../webhooks/index.ts";
import { keyed, UnixSeconds } from "../schemas.ts";
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
  endpointView,
  ownedEndpoint,
  secretBoxOf,
} from "./webhooks.shared.ts";

const Secret = Type.String({ description: "whsec_… : the signing secret, shown this once (docs/webhooks-signing.md)." });

const CreateBody = Type.Object(
  { url: EndpointUrl, events: Type.Optional(EndpointEvents), description: Type.Optional(EndpointDescription) },
  { additionalProperties: false },
);

const UpdateBody = Type.Object(
  {
    url: Type.Optional(EndpointUrl),
    events: Type.Optional(EndpointEvents),
    description: Type.Optional(EndpointDescription),
    disabled: Type.Optional(Type.Boolean({ description: "false enables an endpoint again (also one Folio disabled)." })),
  },
  { additionalProperties: false, minProperties: 1, description: "At least one field." },
);

/** ["*"] stays as it is; otherwise the types in a stable order. */
const normalizeEvents = (events: readonly string[] | undefined) => (!events || events.includes("*") ? ["*"] : [...events].sort());

export default function register(app: App, deps: EdgeDeps): void {
  app.post(
    ENDPOINTS_PATH,
    keyed(["admin", "webhooks:write"], {
      summary: "Make a webhook endpoint (its signing secret is shown once)",
      tags: ["Webhooks"],
      body: CreateBody,
      response: { 201: Type.Object({ ...WebhookEndpoint.properties, secret: Secret }) },
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

  app.get(
    ENDPOINTS_PATH,
    keyed(["admin", "webhooks:read"], {
      summary: "The account's webhook endpoints, oldest first",
      tags: ["Webhooks"],
      response: { 200: Type.Object({ object: Type.Literal("list"), data: Type.Array(WebhookEndpoint) }) },
    }),
    async (req) => {
      const rows = await deps.db.selectFrom("webhook_endpoints").selectAll().where("account_id", "=", principalOf(req).accountId).orderBy("created_at").orderBy("id").execute();
      return { object: "list" as const, data: rows.map(endpointView) };
    },
  );

  app.get(
    `${ENDPOINTS_PATH}/:id`,
    keyed(["admin", "webhooks:read"], { summary: "A webhook endpoint (never its secret)", tags: ["Webhooks"], params: EndpointParams, response: { 200: WebhookEndpoint } }),
    async (req) => endpointView(await ownedEndpoint(deps.db, principalOf(req).accountId, req.params.id)),
  );

  app.patch(
    `${ENDPOINTS_PATH}/:id`,
    keyed(["admin", "webhooks:write"], {
      summary: "Change a webhook endpoint's url, events or description, or disable and enable it",
      tags: ["Webhooks"],
      params: EndpointParams,
      body: UpdateBody,
      response: { 200: WebhookEndpoint },
    }),
    async (req) => {
      const accountId = principalOf(req).accountId;
      await ownedEndpoint(deps.db, accountId, req.params.id);
      const b = req.body;
      if (b.url !== undefined) await checkEndpointUrl(deps, b.url);
      const row = await deps.db
        .updateTable("webhook_endpoints")
        .set({
          ...(b.url !== undefined ? { url: b.url } : {}),
          ...(b.events !== undefined ? { events: JSON.stringify(normalizeEvents(b.events)) } : {}),
          ...(b.description !== undefined ? { description: b.description } : {}),
          // Enabled again: a fresh start (no failing streak); disabled by its owner: no reason of Folio's.
          ...(b.disabled !== undefined ? { disabled: b.disabled, disabled_reason: null, failing_since: null } : {}),
          updated_at: sql`now()`,
        })
        .where("id", "=", req.params.id)
        .where("account_id", "=", accountId)
        .returningAll()
        .executeTakeFirstOrThrow();
      return endpointView(row);
    },
  );

  app.delete(
    `${ENDPOINTS_PATH}/:id`,
    keyed(["admin", "webhooks:write"], {
      summary: "Delete a webhook endpoint (its pending deliveries with it)",
      tags: ["Webhooks"],
      params: EndpointParams,
      response: { 200: Type.Object({ id: Type.String(), object: Type.Literal("webhook_endpoint"), deleted: Type.Literal(true) }) },
    }),
    async (req) => {
      const accountId = principalOf(req).accountId;
      await ownedEndpoint(deps.db, accountId, req.params.id);
      await deps.db.deleteFrom("webhook_endpoints").where("id", "=", req.params.id).where("account_id", "=", accountId).execute();
      return { id: req.params.id, object: "webhook_endpoint" as const, deleted: true as const };
    },
  );

  app.post(
    `${ENDPOINTS_PATH}/:id/rotate-secret`,
    keyed(["admin", "webhooks:write"], {
      summary: "Give a webhook endpoint a new secret (shown once); the old one keeps signing during the overlap",
      tags: ["Webhooks"],
      params: EndpointParams,
      response: { 200: Type.Object({ ...WebhookEndpoint.properties, secret: Secret, previous_secret_expires_at: Type.Union([UnixSeconds, Type.Null()]) }) },
    }),
    async (req) => {
      const box = secretBoxOf(deps);
      const accountId = principalOf(req).accountId;
      await ownedEndpoint(deps.db, accountId, req.params.id);
      const rotated = (await rotateSecret(deps.db, box, accountId, req.params.id, deps.webhooks.rotationOverlapSeconds))!;
      return { ...endpointView(rotated.endpoint), secret: rotated.secret };
    },
  );
}
