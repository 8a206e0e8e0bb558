import { describe, expect, it } from "vitest";
import { parserEnv } from "./index.ts";

const parent = {
  PATH: "/usr/local/bin:/usr/bin:/bin",
  HOME: "/tmp",
  LANG: "de_DE.UTF-8",
  LC_ALL: "C.UTF-8",
  LC_NUMERIC: "C",
  DATABASE_URL: "postgres://folio:hunter2@db/folio",
  REDIS_URL: "redis://:hunter2@redis:6379",
  FOLIO_UPSTREAM_API_KEY: "sk-or-secret",
  FOLIO_WEBHOOK_SECRET_KEY: "whk-secret",
  AWS_SECRET_ACCESS_KEY: "aws-secret",
  TESSDATA_PREFIX: "/opt/tessdata",
  OMP_THREAD_LIMIT: "8",
  UNSET: undefined,
};

describe("parserEnv", () => {
  it("keeps PATH, HOME and the locale, and none of the parent's other variables", () => {
    const env = parserEnv({}, parent);
    expect(env).toEqual({ PATH: parent.PATH, HOME: "/tmp", LANG: "de_DE.UTF-8", LC_ALL: "C.UTF-8", LC_NUMERIC: "C" });
  });

  it("passes on a tool's own settings only when asked, and what the caller sets wins", () => {
    const env = parserEnv({ keep: ["TESSDATA_PREFIX"], set: { OMP_THREAD_LIMIT: "1" } }, parent);
    expect(env.TESSDATA_PREFIX).toBe("/opt/tessdata");
    expect(env.OMP_THREAD_LIMIT).toBe("1");
    expect(JSON.stringify(env), "no secret value").not.toMatch(/secret|hunter2/);
  });

  it("reads the process's environment by default and takes nothing that only looks like a locale", () => {
    const env = parserEnv({}, { LC_: "x", "LC_lower": "y", LCX: "z", PATH: "/bin" });
    expect(env).toEqual({ PATH: "/bin" });
    expect(parserEnv().PATH).toBe(process.env.PATH);
  });
});
