/**
 * The official `openai` npm SDK pointed at Folio with baseURL: models.list()
 * and chat.completions.create with image parts.
 */
import { readFileSync } from "node:fs";
import OpenAI from "openai";
import { beforeAll, describe, expect, it } from "vitest";
import { createTestAccount, upstreamStack } from "./harness.ts";
import { cer } from "./cer.ts";

const png = readFileSync(new URL("./fixtures/ocr/english.png", import.meta.url));
const expected = readFileSync(new URL("./fixtures/ocr/english.txt", import.meta.url), "utf8");

const env = upstreamStack();
let client: OpenAI;

beforeAll(async () => {
  const acc = await createTestAccount({ creditsCents: 10_000 });
  client = new OpenAI({ apiKey: acc.adminKey, baseURL: `${env.stack.edge.url}/v1`, maxRetries: 0 });
});

describe("openai SDK against Folio", () => {
  it("models.list() reads the catalog", async () => {
    const ids: string[] = [];
    for await (const m of client.models.list()) ids.push(m.id);
    expect(ids).toContain("local/tesseract");
    expect(ids).toContain("openai/gpt-4.1");
  });

  it("chat.completions.create with an image data URL on local/tesseract returns the page text", async () => {
    const res = await client.chat.completions.create({
      model: "local/tesseract",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "Extract the text." },
            { type: "image_url", image_url: { url: `data:image/png;base64,${png.toString("base64")}` } },
          ],
        },
      ],
    });
    expect(res.object).toBe("chat.completion");
    expect(res.choices[0]!.message.role).toBe("assistant");
    expect(res.choices[0]!.finish_reason).toBe("stop");
    expect(cer(res.choices[0]!.message.content ?? "", expected)).toBeLessThan(0.05);
    const folio = (res as unknown as { folio: Record<string, number> }).folio;
    expect(folio).toMatchObject({ conversion_cost_cents: 0, pages_processed: 1, total_cost_cents: 1 });
  });

  it("chat.completions.create on an upstream model forwards the image and reports usage and cost", async () => {
    env.upstream.script("openai/gpt-4.1-mini", { kind: "text", text: "The committee met on Tuesday." }, { times: 1 });
    const res = await client.chat.completions.create({
      model: "openai/gpt-4.1-mini",
      messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: `data:image/png;base64,${png.toString("base64")}` } }] }],
    });
    expect(res.choices[0]!.message.content).toBe("The committee met on Tuesday.");
    expect(res.usage!.total_tokens).toBe(res.usage!.prompt_tokens + res.usage!.completion_tokens);
    const folio = (res as unknown as { folio: Record<string, number> }).folio;
    expect(folio.total_cost_cents).toBeGreaterThanOrEqual(1);
    expect(folio.platform_fee_cents).toBeCloseTo(folio.provider_cost_cents! * 0.05, 9);
  });

  it("surfaces Folio's errors as SDK errors with the status", async () => {
    await expect(client.chat.completions.create({ model: "nobody/nothing", messages: [{ role: "user", content: "hi" }] })).rejects.toMatchObject({ status: 400 });
  });
});
