import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { ConfigError, edgeSchema, parseConfig } from "./index.ts";

describe("configuration", () => {
  it("applies documented defaults and converts types", () => {
    const c = parseConfig(edgeSchema, { FOLIO_HTTP_PORT: "9000", FOLIO_TRUST_PROXY: "true" });
    expect(c.FOLIO_HTTP_PORT).toBe(9000);
    expect(c.FOLIO_TRUST_PROXY).toBe(true);
    expect(c.FOLIO_KEY_CACHE_TTL_SECONDS).toBe(300);
    expect(c.DATABASE_URL).toBeUndefined();
    expect(Object.isFrozen(c)).toBe(true);
  });

  it("treats an empty variable as unset", () => {
    expect(parseConfig(edgeSchema, { DATABASE_URL: "" }).DATABASE_URL).toBeUndefined();
  });

  it("ignores variables it does not own", () => {
    const c = parseConfig(edgeSchema, { PATH: "/bin", HOME: "/root" }) as Record<string, unknown>;
    expect(c.PATH).toBeUndefined();
  });

  it.each([
    ["FOLIO_HTTP_PORT", "eighty"],
    ["FOLIO_HTTP_PORT", "70000"],
    ["LOG_LEVEL", "loud"],
    ["FOLIO_RATELIMIT_ON_REDIS_ERROR", "maybe"],
    ["FOLIO_TRUST_PROXY", "perhaps"],
  ])("refuses %s=%s naming the variable", (name, value) => {
    let err: unknown;
    try {
      parseConfig(edgeSchema, { [name]: value });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).variable).toBe(name);
    expect((err as Error).message).toContain(name);
    expect((err as Error).message).toContain(JSON.stringify(value));
  });

  it("stops the process with a message naming the variable", async () => {
    const run = promisify(execFile);
    const err = await run("npx", ["--no-install", "tsx", "cmd/folio/main.ts", "edge"], {
      env: { ...process.env, FOLIO_HTTP_PORT: "not-a-port", DATABASE_URL: "postgres://127.0.0.1:1/x" },
    }).then(
      () => undefined,
      (e: { code: number; stderr: string }) => e,
    );
    expect(err, "process should fail").toBeDefined();
    expect(err!.code).toBe(1);
    expect(err!.stderr).toContain("FOLIO_HTTP_PORT");
  });
});
