import { Type } from "typebox";
import { unixSeconds } from "../../accounts/index.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { UnixSeconds, keyed } from "../schemas.ts";
import { KeyName, Permissions } from "./api-keys.shared.ts";

const Body = Type.Object(
  {
    name: KeyName,
    permissions: Type.Optional(Permissions),
    expires_at: Type.Optional(UnixSeconds),
  },
  { additionalProperties: false },
);

const Created = Type.Object({
  id: Type.String(),
  name: Type.String(),
  key: Type.String({ description: "The full secret. Shown only in this response." }),
  prefix: Type.String(),
  permissions: Type.Array(Type.String()),
  created_at: UnixSeconds,
  expires_at: Type.Union([UnixSeconds, Type.Null()]),
});

export default function register(app: App, deps: EdgeDeps): void {
  app.post(
    "/v1/api-keys",
    keyed(["admin", "keys:write"], {
      summary: "Create an API key",
      description: "Without `permissions` the key gets every permission except `admin`. A key cannot grant permissions it does not hold.",
      tags: ["API keys"],
      body: Body,
      response: { 200: Created },
    }),
    async (req) => {
      const p = principalOf(req);
      const { row, secret } = await deps.keys.create(
        p.accountId,
        { name: req.body.name, permissions: req.body.permissions, expiresAt: req.body.expires_at ?? null },
        p.permissions,
      );
      return {
        id: row.id,
        name: row.name,
        key: secret,
        prefix: row.prefix,
        permissions: row.permissions,
        created_at: unixSeconds(row.created_at),
        expires_at: row.expires_at ? unixSeconds(row.expires_at) : null,
      };
    },
  );
}
