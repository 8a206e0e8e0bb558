/**
 * GET /playground: the playground page (web/playground, built by Vite into
 * dist/web/playground). Public: loading the page needs no key; the page calls
 * the API with the key its user enters.
 */
import { existsSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import fastifyStatic from "@fastify/static";
import type { FastifyReply } from "fastify";
import { FolioError } from "../../platform/errors/index.ts";
import type { App } from "../types.ts";

export const PLAYGROUND_PAGE = "/playground";

/**
 * Where the built page is: `<repo>/dist/web/playground`, seen from this file
 * both when it runs from source (`<repo>/internal/edge/routes`) and when it
 * runs compiled (`<repo>/dist/internal/edge/routes`). The source folder
 * `web/playground` itself is never served.
 */
export function builtPageDir(here = dirname(fileURLToPath(import.meta.url))): string {
  const root = resolve(here, "../../..");
  return basename(root) === "dist" ? join(root, "web", "playground") : join(root, "dist", "web", "playground");
}

/**
 * The page runs only its own bundled script and talks only to this origin;
 * page images arrive as data URLs. Nothing may frame it (the key field).
 */
const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; font-src 'self'; " +
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
};

function secure(reply: FastifyReply): void {
  for (const [k, v] of Object.entries(SECURITY_HEADERS)) reply.header(k, v);
}

export default function register(app: App, _deps: unknown, dir = builtPageDir()): void {
  if (!existsSync(join(dir, "index.html"))) {
    // The API works without the page; say how to get it instead of a bare 404.
    app.get(PLAYGROUND_PAGE, { schema: { hide: true } }, async () => {
      throw new FolioError("service_unavailable", "the playground page has not been built here: run `make web` (or `make build`) and restart");
    });
    return;
  }
  void app.register(async (scope) => {
    scope.addHook("onSend", async (_req, reply, payload) => {
      secure(reply);
      return payload;
    });
    // The built files are fixed when the edge starts: one route per file, no wildcard.
    await scope.register(fastifyStatic, {
      root: dir,
      prefix: `${PLAYGROUND_PAGE}/`,
      wildcard: false,
      index: false,
      decorateReply: true,
      schemaHide: true,
      setHeaders: (res, path) => {
        // Vite names assets by content hash: they never change; the page itself is revalidated.
        res.header("cache-control", path.includes(`${join("assets", "")}`) ? "public, max-age=31536000, immutable" : "no-cache");
      },
    });
    scope.get(PLAYGROUND_PAGE, { schema: { hide: true } }, async (_req, reply) => reply.header("cache-control", "no-cache").sendFile("index.html"));
  });
}
