import type { App } from "../types.ts";

/** The OpenAPI document, generated from the route schemas. */
export default function register(app: App): void {
  app.get("/v1/openapi.json", { schema: { hide: true } }, async () => app.swagger());
}
