import { Type } from "typebox";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { keyed } from "../schemas.ts";
import { KeyId } from "./api-keys.shared.ts";

export default function register(app: App, deps: EdgeDeps): void {
  app.delete(
    "/v1/api-keys/:id",
    keyed(["admin", "keys:write"], {
      summary: "Revoke an API key (immediate, irreversible)",
      tags: ["API keys"],
      params: KeyId,
      response: { 200: Type.Object({ id: Type.String(), deleted: Type.Literal(true) }) },
    }),
    async (req) => {
      const p = principalOf(req);
      await deps.keys.revoke(p.accountId, req.params.id, p.permissions);
      return { id: req.params.id, deleted: true as const };
    },
  );
}
