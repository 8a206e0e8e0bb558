import { Type } from "typebox";
import { unixSeconds } from "../../accounts/index.ts";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { UnixSeconds, keyed } from "../schemas.ts";
import { KeyId, KeyName, Permissions } from "./api-keys.shared.ts";

const Body = Type.Object(
  { name: Type.Optional(KeyName), permissions: Type.Optional(Permissions) },
  { additionalProperties: false, minProperties: 1, description: "At least one of name and permissions (an array that replaces the key's permissions)." },
);

export default function register(app: App, deps: EdgeDeps): void {
  app.patch(
    "/v1/api-keys/:id",
    keyed(["admin", "keys:write"], {
      summary: "Rename a key or replace its permissions",
      tags: ["API keys"],
      params: KeyId,
      body: Body,
      response: {
        200: Type.Object({ id: Type.String(), name: Type.String(), prefix: Type.String(), permissions: Type.Array(Type.String()), updated_at: UnixSeconds }),
      },
    }),
    async (req) => {
      const p = principalOf(req);
      const row = await deps.keys.update(p.accountId, req.params.id, { name: req.body.name, permissions: req.body.permissions }, p.permissions);
      return { id: row.id, name: row.name, prefix: row.prefix, permissions: row.permissions, updated_at: unixSeconds(row.updated_at) };
    },
  );
}
