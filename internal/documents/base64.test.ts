/**
 * Strict base64 and data URLs: what decodes, and the 400 every malformed
 * input gets, naming the field.
 */
import { describe, expect, it } from "vitest";
import { FolioError } from "../platform/errors/index.ts";
import { decodeBase64Strict, parseDataUrl } from "./base64.ts";
import { PNG_SIGNATURE } from "../formats/index.ts";

function failure(fn: () => unknown): FolioError {
  let result: unknown;
  try {
    result = fn();
  } catch (err) {
    if (err instanceof FolioError) return err;
    throw err;
  }
  throw new Error(`expected a FolioError, got ${JSON.stringify(result)}`);
}

describe("decodeBase64Strict", () => {
  const good: [string, string][] = [
    ["aGVsbG8=", "hello"],
    ["aGVsbG8h", "hello!"],
    ["aGk=", "hi"],
    ["aA==", "h"],
    ["+/+/", Buffer.from([0xfb, 0xff, 0xbf]).toString("latin1")],
    ["aGVs\nbG8=", "hello"],
    ["aGVs\r\nbG8=\r\n", "hello"],
    ["  aGVs bG8=\t", "hello"],
    ["a G V s b G 8 =", "hello"],
  ];
  it.each(good)("decodes %j", (input, expected) => {
    expect(decodeBase64Strict(input, "base64").toString("latin1")).toBe(expected);
  });

  const bad: [label: string, input: string, message: RegExp][] = [
    ["empty", "", /base64 is empty/],
    ["only whitespace", " \n\t", /base64 is empty/],
    ["URL-safe -", "-_8=", /URL-safe/],
    ["URL-safe _", "ab_c", /URL-safe/],
    ["missing padding", "aGVsbG8", /multiple of 4/],
    ["missing one of two pads", "aA=", /multiple of 4/],
    ["too much padding", "aA===", /multiple of 4|padding/],
    ["padding in the middle", "aA==aGk=", /padding may only appear at the end/],
    ["three pads", "a===", /padding may only appear at the end/],
    ["a stray character", "aGVs*G8=", /outside the base64 alphabet/],
    ["a non-ASCII letter", "aGVsbé8=", /outside the base64 alphabet/],
    ["vertical tab (not ASCII whitespace)", "aGVs\vbG8=", /outside the base64 alphabet/],
    ["non-zero padding bits after one pad", "aGl=", /non-zero padding bits/],
    ["non-zero padding bits after two pads", "aB==", /non-zero padding bits/],
  ];
  it.each(bad)("refuses %s", (_label, input, message) => {
    const err = failure(() => decodeBase64Strict(input, "base64"));
    expect(err.code, err.message).toBe("invalid_request");
    expect(err.param).toBe("base64");
    expect(err.message).toMatch(message);
  });

  it("names the field it was given", () => {
    const err = failure(() => decodeBase64Strict("%%%%", "file"));
    expect(err.param).toBe("file");
    expect(err.message).toMatch(/^file /);
  });

  it("tells a client who sent a data URL to drop the prefix and use mime_type", () => {
    const err = failure(() => decodeBase64Strict("data:application/pdf;base64,JVBERi0=", "base64"));
    expect(err.code).toBe("invalid_request");
    expect(err.param).toBe("base64");
    expect(err.message).toBe("base64 must not include a data-URL prefix; send only the base64 data and put the type in mime_type");
    const convert = failure(() => decodeBase64Strict(" DATA:text/plain;base64,aGk=", "file", "mimeType"));
    expect(convert.message).toBe("file must not include a data-URL prefix; send only the base64 data and put the type in mimeType");
  });

  it("round-trips random bytes, line-wrapped or not", () => {
    for (let n = 0; n < 200; n++) {
      const bytes = Buffer.from(Array.from({ length: n }, (_, i) => (i * 37 + n) & 255));
      const encoded = bytes.toString("base64");
      if (n === 0) continue; // empty is refused
      expect(decodeBase64Strict(encoded, "base64").equals(bytes), `n=${n}`).toBe(true);
      const wrapped = encoded.replace(/.{1,76}/g, "$&\n");
      expect(decodeBase64Strict(wrapped, "base64").equals(bytes), `wrapped n=${n}`).toBe(true);
    }
  });
});

describe("parseDataUrl", () => {
  it("returns the MIME type without parameters and the decoded bytes", () => {
    expect(parseDataUrl("data:image/png;base64,iVBORw0KGgo=", "image_url.url")).toEqual({
      mimeType: "image/png",
      bytes: Buffer.from(PNG_SIGNATURE),
    });
    const withParams = parseDataUrl("DATA:Text/Plain;charset=UTF-8;BASE64,aGk=", "image_url.url");
    expect(withParams).toEqual({ mimeType: "text/plain", bytes: Buffer.from("hi") });
  });

  const bad: [label: string, input: string, message: RegExp][] = [
    ["not a data URL", "https://example.com/a.png", /is not a data URL/],
    ["no comma", "data:image/png;base64", /is not a data URL/],
    ["no MIME type", "data:;base64,aGk=", /must name its MIME type/],
    ["an invalid MIME type", "data:image;base64,aGk=", /invalid MIME type/],
    ["not base64", "data:text/plain,hello%20world", /must be base64-encoded/],
    ["bad base64", "data:image/png;base64,iVBORw0KGgo", /not valid base64/],
    ["URL-safe base64", "data:image/png;base64,ab-_", /URL-safe/],
    ["empty data", "data:image/png;base64,", /is empty/],
  ];
  it.each(bad)("refuses %s", (_label, input, message) => {
    const err = failure(() => parseDataUrl(input, "messages[0].content[1].image_url.url"));
    expect(err.code, err.message).toBe("invalid_request");
    expect(err.param).toBe("messages[0].content[1].image_url.url");
    expect(err.message).toMatch(message);
  });
});
