/**
 * Address classification: every spelling of an internal address is judged
 * by the address it names, whether given raw or after Node's URL parser
 * normalised it; public addresses pass.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isForbiddenAddress, parseHostLiteral } from "./address.ts";

describe("parseHostLiteral", () => {
  const spellings: [string, string | null][] = [
    ["127.0.0.1", "127.0.0.1"],
    ["127.1", "127.0.0.1"],
    ["127.0.1", "127.0.0.1"],
    ["2130706433", "127.0.0.1"],
    ["0x7f000001", "127.0.0.1"],
    ["0X7F000001", "127.0.0.1"],
    ["0177.0.0.1", "127.0.0.1"],
    ["0x7f.0.0.1", "127.0.0.1"],
    ["0x7f.1", "127.0.0.1"],
    ["017700000001", "127.0.0.1"],
    ["127.0.0.1.", "127.0.0.1"],
    ["0", "0.0.0.0"],
    ["0x", "0.0.0.0"],
    ["10.0.0.010", "10.0.0.8"],
    ["[::1]", "::1"],
    ["::1", "::1"],
    ["[0:0:0:0:0:0:0:1]", "::1"],
    ["[::ffff:127.0.0.1]", "::ffff:7f00:1"],
    ["[fd00:ec2::254]", "fd00:ec2::254"],
    ["::8.8.8.8", "::808:808"],
    ["[64:ff9b::127.0.0.1]", "64:ff9b::7f00:1"],
    ["[2002:7F00:0001:0:0:0:0:0]", "2002:7f00:1::"],
    // Not address literals: DNS names, or numbers no parser accepts.
    ["example.com", null],
    ["127.0.0.1.example.com", null],
    ["256.0.0.1", null],
    ["1.2.3.4.5", null],
    ["4294967296", null],
    ["08.0.0.1", null],
    ["0x1g.0.0.1", null],
    ["", null],
    ["[127.0.0.1]", null],
    ["[fe80::1%25eth0]", null],
    ["::1]", null],
  ];
  it.each(spellings)("parses %j as %j", (raw, expected) => {
    expect(parseHostLiteral(raw)).toBe(expected);
  });

  it("agrees with the WHATWG URL parser on every literal in the table", () => {
    for (const [raw, expected] of spellings) {
      if (expected === null) continue;
      const v6 = raw.includes(":");
      const viaUrl = new URL(`http://${v6 && !raw.startsWith("[") ? `[${raw}]` : raw}/`).hostname;
      if (v6) {
        expect(viaUrl, `URL normalised ${raw}`).toBe(`[${expected}]`);
        expect(parseHostLiteral(viaUrl), `${raw} → URL hostname ${viaUrl}`).toBe(expected);
        continue;
      }
      expect(parseHostLiteral(viaUrl), `${raw} → URL hostname ${viaUrl}`).toBe(expected);
      expect(viaUrl, `URL normalised ${raw}`).toBe(expected);
    }
  });

  it("agrees with the URL parser on random dotted, hex, octal and short IPv4 spellings", () => {
    const part = (value: number, radix: 8 | 10 | 16) =>
      radix === 16 ? `0x${value.toString(16)}` : radix === 8 ? `0${value.toString(8)}` : value.toString(10);
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 0xffffffff }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.constantFrom(8 as const, 10 as const, 16 as const), { minLength: 4, maxLength: 4 }),
        (n, count, radixes) => {
          const bytes = [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255];
          const head = bytes.slice(0, count - 1);
          const tail = bytes.slice(count - 1).reduce((acc, b) => acc * 256 + b, 0);
          const spelled = [...head, tail].map((v, i) => part(v, radixes[i] as 8 | 10 | 16)).join(".");
          const expected = bytes.join(".");
          return parseHostLiteral(spelled) === expected && new URL(`http://${spelled}/`).hostname === expected;
        },
      ),
    );
  });
});

describe("isForbiddenAddress", () => {
  const refused: [string, string][] = [
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["127.1", "loopback"],
    ["2130706433", "loopback"],
    ["0x7f000001", "loopback"],
    ["0177.0.0.1", "loopback"],
    ["0x7f.0.0.1", "loopback"],
    ["::1", "loopback"],
    ["[::1]", "loopback"],
    ["0:0:0:0:0:0:0:1", "loopback"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["::127.0.0.1", "loopback"], // IPv4-compatible
    ["::ffff:0:127.0.0.1", "loopback"], // SIIT
    ["64:ff9b::7f00:1", "loopback"], // NAT64
    ["64:ff9b::10.0.0.1", "private"],
    ["2002:7f00:1::", "loopback"], // 6to4
    ["2002:a9fe:a9fe::1", "metadata"], // 6to4 of 169.254.169.254
    ["10.0.0.1", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["fd00::1", "private"],
    ["fc00::1", "private"],
    ["fec0::1", "private"],
    ["64:ff9b:1::a00:1", "private"],
    ["100.64.0.1", "cgnat"],
    ["100.127.255.254", "cgnat"],
    ["169.254.169.254", "metadata"],
    ["::ffff:169.254.169.254", "metadata"],
    ["fd00:ec2::254", "metadata"],
    ["100.100.100.200", "metadata"],
    ["169.254.1.1", "link-local"],
    ["fe80::1", "link-local"],
    ["fe80::1%eth0", "link-local"],
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["::", "unspecified"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["ff02::1", "multicast"],
    ["255.255.255.255", "broadcast"],
    ["198.18.0.1", "reserved"],
    ["198.19.255.255", "reserved"],
    ["240.0.0.1", "reserved"],
    ["192.0.0.170", "reserved"],
    ["2001::1", "reserved"], // Teredo
    ["2001:2::1", "reserved"], // benchmarking
    ["100::1", "reserved"],
    ["::8.8.8.8", "reserved"], // IPv4-compatible: not routed to the public host
    ["4000::1", "reserved"], // outside global unicast
    ["192.0.2.1", "documentation"],
    ["198.51.100.7", "documentation"],
    ["203.0.113.9", "documentation"],
    ["2001:db8::1", "documentation"],
    ["3fff::1", "documentation"],
    ["not-an-address", "invalid"],
    ["", "invalid"],
  ];
  it.each(refused)("refuses %s as %s", (ip, reason) => {
    expect(isForbiddenAddress(ip)).toBe(reason);
  });

  it.each(["8.8.8.8", "1.1.1.1", "93.184.216.34", "172.32.0.1", "100.128.0.1", "169.255.0.1", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1", "2a00:1450:4001:80b::200e"])(
    "lets public %s through",
    (ip) => {
      expect(isForbiddenAddress(ip)).toBeNull();
    },
  );

  it("judges the host Node's URL parser produces the same as the raw spelling", () => {
    const hosts = ["127.1", "2130706433", "0x7f000001", "0177.0.0.1", "0x7f.0.0.1", "[::ffff:127.0.0.1]", "[0:0:0:0:0:0:0:1]", "[64:ff9b::7f00:1]", "[2002:7f00:1::]"];
    for (const host of hosts) {
      const hostname = new URL(`http://${host}:80/`).hostname;
      expect(isForbiddenAddress(hostname), `${host} → ${hostname}`).toBe("loopback");
      expect(isForbiddenAddress(host), host).toBe("loopback");
    }
  });
});
