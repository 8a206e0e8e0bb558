import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { cliSchema, conversionSchema, edgeSchema, extractionSchema, operatorSchema, workerSchema } from "./index.ts";

describe("docs/configuration.md", () => {
  it("lists every variable of every process schema", () => {
    const doc = readFileSync(new URL("../../../docs/configuration.md", import.meta.url), "utf8");
    const missing = [edgeSchema, extractionSchema, conversionSchema, operatorSchema, workerSchema, cliSchema].flatMap((s) => Object.keys(s.properties)).filter((v) => !doc.includes("`" + v + "`"));
    expect(missing).toEqual([]);
  });
});
