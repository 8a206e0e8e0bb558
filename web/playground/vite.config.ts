/**
 * Builds the playground page into dist/web/playground, which the edge serves
 * at /playground (internal/edge/routes/playground.page.ts). `npx vite
 * web/playground` serves it for development with /v1 proxied to `folio dev`.
 */
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

const here = fileURLToPath(new URL(".", import.meta.url));

export default defineConfig({
  root: here,
  base: "/playground/",
  build: {
    outDir: fileURLToPath(new URL("../../dist/web/playground", import.meta.url)),
    emptyOutDir: true,
    target: "es2022",
    // Everything as files: the edge's CSP allows only same-origin scripts and styles.
    assetsInlineLimit: 0,
    reportCompressedSize: false,
  },
  server: { proxy: { "/v1": process.env.FOLIO_BASE_URL ?? "http://127.0.0.1:8080" } },
});
