/**
 * Folio's webhook signatures against the reference verifier receivers use
 * (the `standardwebhooks` npm package): each side accepts what the other
 * signs, both refuse the same forgeries, and a fixed vector pins the bytes.
 * Then Folio's own verifier's refusal reasons and the secret format.
 */
import { describe, expect, it } from "vitest";
import { Webhook, WebhookVerificationError } from "standardwebhooks";
import { newSecret, secretKey, sign, verify, webhookHeaders, WebhookSecretError, type VerifyFailure } from "./signing.ts";

const EVENT = JSON.stringify({
  id: "evt_4f1Kq0Zr8pXy2mTbLw9a",
  type: "ocr.job.progress",
  sequence: 3,
  created_at: 1795000003,
  data: { id: "job_7HcV2nQe5sRt1uYb3kDp", status: "running", note: "Grüße, 文字 ✓" },
});
const MSG_ID = "evt_4f1Kq0Zr8pXy2mTbLw9a";

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** What the reference package says about a delivery: "ok" or its error message. */
function packageVerdict(secret: string, headers: Record<string, string>, body: string): string {
  try {
    new Webhook(secret).verify(body, headers);
    return "ok";
  } catch (err) {
    expect(err, "the package refuses with its own error type").toBeInstanceOf(WebhookVerificationError);
    return (err as Error).message;
  }
}

function headersFor(msgId: string, timestamp: number, signature: string): Record<string, string> {
  return { "webhook-id": msgId, "webhook-timestamp": String(timestamp), "webhook-signature": signature };
}

describe("interoperability with the standardwebhooks package", () => {
  it("a delivery Folio signs with one secret verifies with the package, and with Folio's verifier", () => {
    const secret = newSecret();
    const headers = webhookHeaders([secret], MSG_ID, nowSeconds(), EVENT);
    expect(packageVerdict(secret, headers, EVENT)).toBe("ok");
    expect(new Webhook(secret).verify(EVENT, headers), "the package hands back the parsed body").toEqual(JSON.parse(EVENT));
    expect(verify(secret, headers, EVENT)).toEqual({ ok: true });
  });

  it("during a rotation both secrets sign, and a receiver holding either one accepts; a third secret does not", () => {
    const [old, current, stranger] = [newSecret(), newSecret(), newSecret()];
    const headers = webhookHeaders([old, current], MSG_ID, nowSeconds(), EVENT);
    const parts = headers["webhook-signature"].split(" ");
    expect(parts, headers["webhook-signature"]).toHaveLength(2);
    for (const p of parts) expect(p).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);

    for (const [name, secret] of [
      ["old", old],
      ["current", current],
    ] as const) {
      expect(packageVerdict(secret, headers, EVENT), `package, ${name} secret`).toBe("ok");
      expect(verify(secret, headers, EVENT), `Folio, ${name} secret`).toEqual({ ok: true });
    }
    expect(packageVerdict(stranger, headers, EVENT)).toBe("No matching signature found");
    expect(verify(stranger, headers, EVENT)).toMatchObject({ ok: false, code: "no_matching_signature" });
  });

  it("a delivery the package signs verifies with Folio's verifier, one signature or two", () => {
    const secret = newSecret();
    const other = new Webhook(newSecret());
    const at = new Date();
    const own = new Webhook(secret).sign(MSG_ID, at, EVENT);
    const ts = Math.floor(at.getTime() / 1000);
    expect(verify(secret, headersFor(MSG_ID, ts, own), EVENT)).toEqual({ ok: true });
    expect(verify(secret, headersFor(MSG_ID, ts, `${other.sign(MSG_ID, at, EVENT)} ${own}`), EVENT)).toEqual({ ok: true });
    expect(verify(secret, headersFor(MSG_ID, ts, other.sign(MSG_ID, at, EVENT)), EVENT)).toMatchObject({ ok: false, code: "no_matching_signature" });
  });

  it("both refuse a changed body, a wrong secret, a changed id, and timestamps over 5 minutes old or ahead", () => {
    const secret = newSecret();
    const now = nowSeconds();
    const cases: { what: string; secret: string; headers: Record<string, string>; body: string; pkg: string; folio: VerifyFailure }[] = [
      { what: "tampered body", secret, headers: webhookHeaders([secret], MSG_ID, now, EVENT), body: EVENT.replace('"sequence":3', '"sequence":4'), pkg: "No matching signature found", folio: "no_matching_signature" },
      { what: "wrong secret", secret: newSecret(), headers: webhookHeaders([secret], MSG_ID, now, EVENT), body: EVENT, pkg: "No matching signature found", folio: "no_matching_signature" },
      {
        what: "id swapped after signing",
        secret,
        headers: { ...webhookHeaders([secret], MSG_ID, now, EVENT), "webhook-id": "evt_other" },
        body: EVENT,
        pkg: "No matching signature found",
        folio: "no_matching_signature",
      },
      { what: "signed 10 minutes ago", secret, headers: webhookHeaders([secret], MSG_ID, now - 600, EVENT), body: EVENT, pkg: "Message timestamp too old", folio: "too_old" },
      { what: "signed 10 minutes ahead", secret, headers: webhookHeaders([secret], MSG_ID, now + 600, EVENT), body: EVENT, pkg: "Message timestamp too new", folio: "too_new" },
    ];
    for (const c of cases) {
      expect(packageVerdict(c.secret, c.headers, c.body), `package: ${c.what}`).toBe(c.pkg);
      expect(verify(c.secret, c.headers, c.body), `Folio: ${c.what}`).toMatchObject({ ok: false, code: c.folio });
    }
  });

  it("a signature with one character changed is refused by both", () => {
    const secret = newSecret();
    const headers = webhookHeaders([secret], MSG_ID, nowSeconds(), EVENT);
    const sig = headers["webhook-signature"];
    const flipped = sig.slice(0, 5) + (sig[5] === "A" ? "B" : "A") + sig.slice(6);
    const bad = { ...headers, "webhook-signature": flipped };
    expect(packageVerdict(secret, bad, EVENT)).toBe("No matching signature found");
    expect(verify(secret, bad, EVENT)).toMatchObject({ ok: false, code: "no_matching_signature" });
  });

  it("matches the package byte for byte on a fixed vector (non-ASCII body included)", () => {
    // Key bytes 0, 1, …, 31: a fixed secret nobody uses.
    const secret = "whsec_" + Buffer.from(Array.from({ length: 32 }, (_, i) => i)).toString("base64");
    const ts = 1795000003;
    const reference = new Webhook(secret).sign(MSG_ID, new Date(ts * 1000), EVENT);
    expect(sign([secret], MSG_ID, ts, EVENT)).toBe(reference);
    // What standardwebhooks 1.1.1 gave for this vector when this test was written: the bytes stay put if either side changes.
    expect(reference).toBe(PINNED_VECTOR);
  });
});

/** `new Webhook(<key 0..31>).sign(MSG_ID, 1795000003 s, EVENT)` from standardwebhooks 1.1.1. */
const PINNED_VECTOR = "v1,z/uoqWKKGjm3bVUfSKrwQ/AdyQsrQ2wbhb3hu9xMyNI=";

describe("verify (Folio's verifier)", () => {
  const secret = newSecret();
  const now = 1795000000;
  const good = webhookHeaders([secret], MSG_ID, now, EVENT);

  it("takes header names in any case and the body as bytes", () => {
    const shouting = { "Webhook-Id": good["webhook-id"], "WEBHOOK-TIMESTAMP": good["webhook-timestamp"], "Webhook-Signature": good["webhook-signature"] };
    expect(verify(secret, shouting, Buffer.from(EVENT), 300, now)).toEqual({ ok: true });
  });

  it("names each missing header", () => {
    for (const name of ["webhook-id", "webhook-timestamp", "webhook-signature"] as const) {
      const headers: Record<string, string | undefined> = { ...good, [name]: undefined };
      expect(verify(secret, headers, EVENT, 300, now), name).toEqual({ ok: false, code: "missing_header", reason: `the ${name} header is missing` });
      expect(verify(secret, { ...good, [name]: "" }, EVENT, 300, now), `${name} empty`).toMatchObject({ ok: false, code: "missing_header" });
    }
  });

  it("refuses a timestamp that is not whole seconds", () => {
    for (const ts of ["1795000000.5", "-1", "1e9", " 1795000000", "soon", "17950000000000000"]) {
      expect(verify(secret, { ...good, "webhook-timestamp": ts }, EVENT, 300, now), ts).toMatchObject({ ok: false, code: "bad_timestamp" });
    }
  });

  it("accepts up to the tolerance either way and refuses one second beyond, saying how far off it was", () => {
    expect(verify(secret, webhookHeaders([secret], MSG_ID, now - 300, EVENT), EVENT, 300, now)).toEqual({ ok: true });
    expect(verify(secret, webhookHeaders([secret], MSG_ID, now + 300, EVENT), EVENT, 300, now)).toEqual({ ok: true });
    expect(verify(secret, webhookHeaders([secret], MSG_ID, now - 301, EVENT), EVENT, 300, now)).toEqual({
      ok: false,
      code: "too_old",
      reason: "the timestamp is 301 s old, more than the 300 s allowed",
    });
    expect(verify(secret, webhookHeaders([secret], MSG_ID, now + 301, EVENT), EVENT, 300, now)).toMatchObject({ ok: false, code: "too_new", reason: expect.stringContaining("301 s in the future") });
    expect(verify(secret, webhookHeaders([secret], MSG_ID, now - 3600, EVENT), EVENT, 7200, now), "a wider tolerance").toEqual({ ok: true });
  });

  it("skips other schemes and malformed entries and still finds the v1 signature among them", () => {
    const v1 = good["webhook-signature"];
    const sigs = `v1a,${v1.slice(3)} nocomma v1,short ${v1}`;
    expect(verify(secret, { ...good, "webhook-signature": sigs }, EVENT, 300, now)).toEqual({ ok: true });
    expect(verify(secret, { ...good, "webhook-signature": `v1a,${v1.slice(3)}` }, EVENT, 300, now), "the right bytes under another scheme").toMatchObject({
      ok: false,
      code: "no_matching_signature",
    });
  });

  it("throws a WebhookSecretError for a malformed secret instead of answering", () => {
    expect(() => verify("not-a-secret", good, EVENT, 300, now)).toThrow(WebhookSecretError);
  });
});

describe("secrets", () => {
  it("newSecret is whsec_ and 32 random bytes in base64, different each time, and the package takes it", () => {
    const a = newSecret();
    const b = newSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(a).not.toBe(b);
    expect(secretKey(a)).toHaveLength(32);
    expect(() => new Webhook(a)).not.toThrow();
  });

  it("refuses a secret without the prefix, with text that is not padded base64, or with a key outside 24-64 bytes, never echoing it", () => {
    const key = (n: number) => Buffer.alloc(n, 7).toString("base64");
    const cases: [string, RegExp][] = [
      [key(32), /starts with 'whsec_'/],
      ["whsec_", /padded base64/],
      ["whsec_" + key(32).replace("=", ""), /padded base64/],
      ["whsec_" + key(32).slice(0, 10) + "-" + key(32).slice(11), /padded base64/],
      ["whsec_" + key(23), /24 to 64 bytes, this one is 23/],
      ["whsec_" + key(65), /24 to 64 bytes, this one is 65/],
    ];
    for (const [secret, message] of cases) {
      expect(() => secretKey(secret), secret).toThrow(message);
      try {
        secretKey(secret);
      } catch (err) {
        expect((err as Error).message).not.toContain(secret.slice(6) || "\u0000");
      }
    }
    expect(secretKey("whsec_" + key(24))).toHaveLength(24);
    expect(secretKey("whsec_" + key(64))).toHaveLength(64);
  });
});

describe("sign and webhookHeaders", () => {
  it("writes the spec's lower-case headers with the timestamp as whole seconds", () => {
    const secret = newSecret();
    expect(webhookHeaders([secret], MSG_ID, 1795000000, EVENT)).toEqual({
      "webhook-id": MSG_ID,
      "webhook-timestamp": "1795000000",
      "webhook-signature": sign([secret], MSG_ID, 1795000000, EVENT),
      "content-type": "application/json",
    });
  });

  it("joins one v1 signature per secret with a single space, in the order of the secrets", () => {
    const [a, b] = [newSecret(), newSecret()];
    expect(sign([a, b], MSG_ID, 1795000000, EVENT)).toBe(`${sign([a], MSG_ID, 1795000000, EVENT)} ${sign([b], MSG_ID, 1795000000, EVENT)}`);
  });

  it("refuses no secrets, a fractional or negative timestamp, and a malformed secret", () => {
    expect(() => sign([], MSG_ID, 1795000000, EVENT)).toThrow(RangeError);
    expect(() => sign([newSecret()], MSG_ID, 1795000000.5, EVENT)).toThrow(RangeError);
    expect(() => sign([newSecret()], MSG_ID, -1, EVENT)).toThrow(RangeError);
    expect(() => sign([newSecret(), "whsec_short"], MSG_ID, 1795000000, EVENT)).toThrow(WebhookSecretError);
  });
});
