/**
 * `folio webhooks listen`: the receiver in process on a free port, fed
 * deliveries signed by the reference `standardwebhooks` package; its answers
 * (204 / 400 / 413 / 405) and the lines it prints. Then the command's start:
 * the secret from --secret or FOLIO_WEBHOOK_SECRET, refusals, Ctrl-C.
 */
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { newSecret } from "../../webhooks/index.ts";
import { ClientError } from "./http.ts";
import { runWebhooksListen, startReceiver, type Receiver } from "./webhooks-listen.ts";

const NOW = Date.UTC(2026, 10, 27, 12, 0, 0);
const AT = new Date(NOW).toISOString();
const secret = newSecret();

function event(sequence: number, type = "ocr.job.progress", jobId = "job_7HcV2nQe5sRt1uYb3kDp"): string {
  return JSON.stringify({ id: `evt_${sequence}`, type, sequence, created_at: NOW / 1000, data: { id: jobId, status: "running" } });
}

/** The headers the reference package makes for `body`, signed at `at`. */
function signed(body: string, msgId: string, at = new Date(NOW), key = secret): Record<string, string> {
  return {
    "content-type": "application/json",
    "webhook-id": msgId,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": new Webhook(key).sign(msgId, at, body),
  };
}

let receiver: Receiver | undefined;
afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
});

async function start(json = false) {
  const out: string[] = [];
  const notes: string[] = [];
  receiver = await startReceiver({ secret, host: "127.0.0.1", port: 0, json, print: (l) => out.push(l), printNote: (l) => notes.push(l), now: () => NOW });
  const post = async (body: string, headers: Record<string, string>) => {
    const res = await fetch(receiver!.url + "hooks/folio", { method: "POST", headers, body });
    return { status: res.status, text: await res.text() };
  };
  return { url: receiver.url, out, notes, post };
}

describe("the receiver", () => {
  it("answers 204 to deliveries the package signed and prints one ✓ line each: time, webhook-id, type, sequence, job", async () => {
    const r = await start();
    expect(await r.post(event(1, "ocr.job.started"), signed(event(1, "ocr.job.started"), "evt_1"))).toEqual({ status: 204, text: "" });
    expect(await r.post(event(2), signed(event(2), "evt_2"))).toEqual({ status: 204, text: "" });
    expect(r.out).toEqual([`${AT} ✓ evt_1 ocr.job.started seq=1 job=job_7HcV2nQe5sRt1uYb3kDp`, `${AT} ✓ evt_2 ocr.job.progress seq=2 job=job_7HcV2nQe5sRt1uYb3kDp`]);
    expect(r.notes).toEqual([]);
  });

  it("accepts a rotation's two signatures when one is made with its secret", async () => {
    const r = await start();
    const body = event(3);
    const own = signed(body, "evt_3");
    const other = new Webhook(newSecret()).sign("evt_3", new Date(NOW), body);
    expect((await r.post(body, { ...own, "webhook-signature": `${other} ${own["webhook-signature"]}` })).status).toBe(204);
    expect(r.out).toEqual([`${AT} ✓ evt_3 ocr.job.progress seq=3 job=job_7HcV2nQe5sRt1uYb3kDp`]);
  });

  it("answers 400 with the reason to a tampered body, a wrong secret, an old timestamp and missing headers, and prints a ✗ line for each", async () => {
    const r = await start();
    const body = event(4, "ocr.job.succeeded");
    const tampered = await r.post(body.replace('"sequence":4', '"sequence":5'), signed(body, "evt_4"));
    expect(tampered.status).toBe(400);
    expect(tampered.text).toMatch(/no v1 signature .* matches the secret/);
    expect((await r.post(body, signed(body, "evt_4", new Date(NOW), newSecret()))).status).toBe(400);
    expect((await r.post(body, signed(body, "evt_4", new Date(NOW - 10 * 60_000)))).status).toBe(400);
    const unsigned = await r.post(body, { "content-type": "application/json", "webhook-id": "evt_4", "webhook-timestamp": String(NOW / 1000) });
    expect(unsigned).toEqual({ status: 400, text: "the webhook-signature header is missing\n" });

    expect(r.out).toHaveLength(4);
    expect(r.out[0]).toMatch(new RegExp(`^${AT} ✗ evt_4 ocr\\.job\\.succeeded seq=5 job=job_7HcV2nQe5sRt1uYb3kDp \\(no v1 signature .*\\)$`));
    expect(r.out[1]).toMatch(/ ✗ evt_4 ocr\.job\.succeeded seq=4 .*\(no v1 signature/);
    expect(r.out[2]).toMatch(/ ✗ evt_4 .*\(the timestamp is 600 s old, more than the 300 s allowed\)$/);
    expect(r.out[3]).toBe(`${AT} ✗ evt_4 ocr.job.succeeded seq=4 job=job_7HcV2nQe5sRt1uYb3kDp (the webhook-signature header is missing)`);
  });

  it("prints '-' for what a delivery lacks and escapes what could drive the terminal", async () => {
    const r = await start();
    const body = JSON.stringify({ type: "ocr.job.\u001b[31mred", data: {} });
    const id = "evt_\u009b31m\u00e9";
    expect((await r.post(body, signed(body, id))).status).toBe(204);
    expect((await r.post("not json", signed("not json", "evt_x"))).status).toBe(204);
    expect(r.out).toEqual([`${AT} ✓ "evt_\\u009b31m\\u00e9" "ocr.job.\\u001b[31mred" seq=- job=-`, `${AT} ✓ evt_x - seq=- job=-`]);
    for (const line of r.out) expect(line.replace(/[✓✗]/g, "")).toMatch(/^[\x20-\x7e]*$/);
  });

  it("with json, prints each verified body as one JSON line and sends refused deliveries to the notes", async () => {
    const r = await start(true);
    const pretty = JSON.stringify(JSON.parse(event(6)), null, 2);
    expect((await r.post(pretty, signed(pretty, "evt_6"))).status).toBe(204);
    expect((await r.post(event(7), signed(event(8), "evt_7"))).status).toBe(400);
    expect(r.out).toEqual([event(6)]);
    expect(JSON.parse(r.out[0]!)).toEqual(JSON.parse(pretty));
    expect(r.notes).toHaveLength(1);
    expect(r.notes[0]).toMatch(/ ✗ evt_7 ocr\.job\.progress seq=7 /);
  });

  it("answers 405 to other methods and 413 to a body over 1 MiB, and the port is free again after close", async () => {
    const r = await start();
    const get = await fetch(r.url);
    expect([get.status, get.headers.get("allow")]).toEqual([405, "POST"]);
    const big = "x".repeat(1024 * 1024 + 1);
    expect((await r.post(big, signed(big, "evt_big"))).status).toBe(413);
    expect(r.out).toEqual([`${AT} ✗ evt_big - seq=- job=- (body over 1048576 bytes, not read)`]);
    await receiver!.close();
    receiver = undefined;
    await expect(fetch(r.url, { method: "POST", body: "{}" })).rejects.toThrow();
  });
});

describe("folio webhooks listen", () => {
  function io(env: Record<string, string | undefined> = {}) {
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    const text = { out: "", err: "" };
    stdout.on("data", (c: Buffer) => (text.out += c.toString()));
    stderr.on("data", (c: Buffer) => (text.err += c.toString()));
    let interrupt: (() => void) | undefined;
    const onInterrupt = (handler: () => void) => {
      interrupt = handler;
      return () => (interrupt = undefined);
    };
    return { io: { stdout, stderr, env, onInterrupt }, text, interrupt: () => interrupt?.() };
  }

  it("refuses to start without a secret, with a malformed one (not echoing it), or with a bad port", async () => {
    await expect(runWebhooksListen({}, io().io)).rejects.toThrow(/no webhook secret: set FOLIO_WEBHOOK_SECRET/);
    const bad = "whsec_dG9vc2hvcnQ=";
    const refused = runWebhooksListen({ secret: bad }, io().io);
    await expect(refused).rejects.toBeInstanceOf(ClientError);
    await expect(refused).rejects.toThrow(/not usable: .*24 to 64 bytes, this one is 8/);
    await expect(refused).rejects.not.toThrow("dG9vc2hvcnQ");
    await expect(runWebhooksListen({ secret, port: "http" }, io().io)).rejects.toThrow(/--port is a port number/);
    await expect(runWebhooksListen({ secret, port: "70000" }, io().io)).rejects.toThrow(/--port is a port number/);
  });

  it("reads the secret from FOLIO_WEBHOOK_SECRET, says where it listens, prints events to stdout, and stops on Ctrl-C", async () => {
    const t = io({ FOLIO_WEBHOOK_SECRET: secret });
    const running = runWebhooksListen({ port: "0", host: "127.0.0.1" }, t.io);
    await expect.poll(() => t.text.err).toMatch(/listening for webhooks on http:\/\/127\.0\.0\.1:\d+\//);
    const url = /(http:\S+)/.exec(t.text.err)![1]!;
    const at = new Date();
    const res = await fetch(url, { method: "POST", headers: signed(event(9), "evt_9", at), body: event(9) });
    expect(res.status).toBe(204);
    expect(t.text.out).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ✓ evt_9 ocr\.job\.progress seq=9 job=job_7HcV2nQe5sRt1uYb3kDp\n$/);
    t.interrupt();
    await expect(running).resolves.toBeUndefined();
    await expect(fetch(url, { method: "POST", body: "{}" })).rejects.toThrow();
  });

  it("says so when the port is taken", async () => {
    const r = await start();
    const port = new URL(r.url).port;
    await expect(runWebhooksListen({ secret, port, host: "127.0.0.1" }, io().io)).rejects.toThrow(`cannot listen on 127.0.0.1:${port}: EADDRINUSE`);
  });
});
