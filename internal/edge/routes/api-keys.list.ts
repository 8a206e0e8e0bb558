import { Type } from "typebox";
import type { App, EdgeDeps } from "../types.ts";
import { principalOf } from "../types.ts";
import { keyed } from "../schemas.ts";
import { KeyListEntry, listEntry } from "./api-keys.shared.ts";

export default function register(app: App, deps: EdgeDeps): void {
  app.get(
    "/v1/api-keys",
    keyed(["admin", "keys:read"], {
      summary: "List the account's active API keys",
      tags: ["API keys"],
      response: { 200: Type.Object({ object: Type.Literal("list"), data: Type.Array(KeyListEntry) }) },
    }),
    async (req) => {
      // Write this replica's pending last_used_at values first so the list is current.
      await deps.authenticator.flushLastUsed();
      const rows = await deps.keys.list(principalOf(req).accountId);
      return { object: "list" as const, data: rows.map(listEntry) };
    },
  );
}
