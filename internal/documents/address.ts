/**
 * Which network addresses Folio may fetch documents from.
 *
 * A document URL comes from a client, and so does every redirect it leads
 * to: the only addresses Folio connects to are public unicast ones. Every
 * spelling of an address is judged by the address it really names: the
 * IPv4 number forms `inet_aton` and the WHATWG URL parser accept, and IPv6
 * forms that carry an IPv4 address inside (mapped, compatible, NAT64, 6to4).
 */
import ipaddr from "ipaddr.js";

/** Why an address is refused; `null` from {@link isForbiddenAddress} means public. */
export type ForbiddenReason =
  | "loopback"
  | "private"
  | "link-local"
  | "cgnat"
  | "multicast"
  | "unspecified"
  | "broadcast"
  | "metadata"
  | "reserved"
  | "documentation"
  | "invalid";

type Range = readonly [cidr: string, reason: ForbiddenReason];

/**
 * IPv4 ranges refused, most specific first (the first match names the
 * reason). Public anycast ranges ipaddr.js lists apart (AS112, AMT) stay
 * allowed: they are ordinary Internet addresses.
 */
const IPV4_RANGES: readonly Range[] = [
  // Cloud metadata services: the prize of most SSRF attacks, named apart so
  // logs and the allow list can tell them from ordinary link-local space.
  ["169.254.169.254/32", "metadata"], // AWS, GCP, Azure, OCI, DigitalOcean…
  ["100.100.100.200/32", "metadata"], // Alibaba Cloud
  ["0.0.0.0/8", "unspecified"], // "this network"; 0.0.0.0 reaches localhost on Linux
  ["10.0.0.0/8", "private"],
  ["172.16.0.0/12", "private"],
  ["192.168.0.0/16", "private"],
  ["100.64.0.0/10", "cgnat"],
  ["127.0.0.0/8", "loopback"],
  ["169.254.0.0/16", "link-local"],
  ["192.0.0.0/24", "reserved"], // IETF protocol assignments
  ["192.0.2.0/24", "documentation"], // TEST-NET-1
  ["198.51.100.0/24", "documentation"], // TEST-NET-2
  ["203.0.113.0/24", "documentation"], // TEST-NET-3
  ["192.88.99.0/24", "reserved"], // deprecated 6to4 relay anycast
  ["198.18.0.0/15", "reserved"], // benchmarking
  ["224.0.0.0/4", "multicast"],
  ["255.255.255.255/32", "broadcast"],
  ["240.0.0.0/4", "reserved"], // future use
];

/**
 * IPv6 ranges refused outright, most specific first. Ranges that embed an
 * IPv4 address are not here: they are judged by that address (see
 * {@link embeddedIPv4}). Anything outside 2000::/3 (global unicast) that no
 * entry names is refused as reserved.
 */
const IPV6_RANGES: readonly Range[] = [
  ["fd00:ec2::254/128", "metadata"], // AWS IMDS over IPv6
  ["::/128", "unspecified"],
  ["::1/128", "loopback"],
  ["fe80::/10", "link-local"],
  ["fec0::/10", "private"], // deprecated site-local
  ["fc00::/7", "private"], // unique local
  ["ff00::/8", "multicast"],
  ["64:ff9b:1::/48", "private"], // local-use NAT64: translates into the operator's own networks
  ["2001::/32", "reserved"], // Teredo: a tunnel whose relay could reach anything
  ["2001::/23", "reserved"], // IETF protocol assignments (benchmarking 2001:2::/48, ORCHID…)
  ["2001:db8::/32", "documentation"],
  ["3fff::/20", "documentation"],
  ["5f00::/16", "reserved"], // segment routing SIDs
  ["100::/64", "reserved"], // discard-only
];

const parsedV4 = IPV4_RANGES.map(([cidr, reason]) => [ipaddr.IPv4.parseCIDR(cidr), reason] as const);
const parsedV6 = IPV6_RANGES.map(([cidr, reason]) => [ipaddr.IPv6.parseCIDR(cidr), reason] as const);
const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR("2000::/3");

/**
 * Parses a host as an IP address literal, accepting every spelling that
 * reaches a socket as an address: IPv4 in the forms `inet_aton` and the
 * WHATWG URL parser accept (`2130706433`, `0x7f000001`, `0177.0.0.1`,
 * `0x7f.0.0.1`, `127.1`, a trailing dot) and IPv6 with or without brackets.
 * Returns the canonical address (`127.0.0.1`, `::1`), or `null` when the host
 * is not an address literal (a DNS name, or a malformed number).
 */
export function parseHostLiteral(host: string): string | null {
  let h = host;
  if (h.startsWith("[") && h.endsWith("]")) h = h.slice(1, -1);
  else if (h.includes("[") || h.includes("]")) return null;
  if (h.includes(":")) {
    // Zone ids (`%eth0`) never come through a URL; refuse to guess.
    if (h.includes("%")) return null;
    // ipaddr.js reads `::a.b.c.d` as `::ffff:a.b.c.d`; spell the IPv4 tail in hex so it parses as written.
    const tail = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(h);
    if (tail) {
      const dotted = tail[2] as string;
      if (!ipaddr.IPv4.isValidFourPartDecimal(dotted)) return null;
      const [a, b, c, d] = ipaddr.IPv4.parse(dotted).octets as [number, number, number, number];
      h = `${tail[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
    }
    if (!ipaddr.IPv6.isValid(h)) return null;
    return ipaddr.IPv6.parse(h).toString();
  }
  if (h !== host) return null; // brackets around something that is not IPv6
  const v4 = parseIPv4Number(h);
  if (v4 === null) return null;
  return [v4 >>> 24, (v4 >>> 16) & 255, (v4 >>> 8) & 255, v4 & 255].join(".");
}

/** The WHATWG "IPv4 parser" (also what inet_aton accepts), as a 32-bit number. */
function parseIPv4Number(host: string): number | null {
  const parts = host.split(".");
  if (parts.length > 1 && parts[parts.length - 1] === "") parts.pop();
  if (parts.length === 0 || parts.length > 4) return null;
  const numbers: number[] = [];
  for (const part of parts) {
    const n = parseIPv4Part(part);
    if (n === null) return null;
    numbers.push(n);
  }
  const last = numbers.pop() as number;
  if (numbers.some((n) => n > 255)) return null;
  // The last part fills every byte the earlier parts did not: `127.1` is 127.0.0.1.
  if (last >= 256 ** (4 - numbers.length)) return null;
  let value = last;
  numbers.forEach((n, i) => {
    value += n * 256 ** (3 - i);
  });
  return value;
}

function parseIPv4Part(part: string): number | null {
  let digits = part;
  let radix = 10;
  if (/^0x/i.test(digits)) {
    digits = digits.slice(2);
    radix = 16;
    if (digits === "") return 0; // WHATWG: a bare "0x" is zero
  } else if (digits.length > 1 && digits.startsWith("0")) {
    digits = digits.slice(1);
    radix = 8;
  }
  const valid = radix === 16 ? /^[0-9a-f]+$/i : radix === 8 ? /^[0-7]+$/ : /^[0-9]+$/;
  if (!valid.test(digits)) return null;
  // Long digit strings overflow to huge numbers or Infinity; the range checks refuse them.
  return parseInt(digits, radix);
}

/**
 * Judges one address. Returns why Folio must not connect to it, or `null`
 * when it is a public unicast address. Accepts any spelling
 * {@link parseHostLiteral} does; a string that is not an address at all is
 * `"invalid"`.
 */
export function isForbiddenAddress(ip: string): ForbiddenReason | null {
  const canonical = parseHostLiteral(ip) ?? zoneStripped(ip);
  if (canonical === null) return "invalid";
  const addr = ipaddr.parse(canonical);
  if (addr.kind() === "ipv4") return judgeV4(addr as ipaddr.IPv4);
  return judgeV6(addr as ipaddr.IPv6);
}

/** Resolvers can report link-local IPv6 with a zone (`fe80::1%eth0`); the zone does not change the verdict. */
function zoneStripped(ip: string): string | null {
  const at = ip.indexOf("%");
  if (at < 0) return null;
  return parseHostLiteral(ip.slice(0, at));
}

function judgeV4(addr: ipaddr.IPv4): ForbiddenReason | null {
  for (const [range, reason] of parsedV4) if (addr.match(range)) return reason;
  return null;
}

function judgeV6(addr: ipaddr.IPv6): ForbiddenReason | null {
  for (const [range, reason] of parsedV6) if (addr.match(range)) return reason;
  const inner = embeddedIPv4(addr);
  if (inner !== null) {
    const verdict = judgeV4(inner);
    // A deprecated IPv4-compatible address is not routed to its public IPv4 host: refuse it whole.
    if (verdict === null && addr.parts.slice(0, 6).every((x) => x === 0)) return "reserved";
    return verdict;
  }
  if (!addr.match(GLOBAL_UNICAST)) return "reserved";
  return null;
}

/**
 * The IPv4 address an IPv6 address stands for, when the network would
 * deliver it to that IPv4 host: mapped (`::ffff:a.b.c.d`), compatible
 * (`::a.b.c.d`), SIIT (`::ffff:0:a.b.c.d`), well-known NAT64
 * (`64:ff9b::a.b.c.d`) and 6to4 (`2002:aabb:ccdd::`).
 */
export function embeddedIPv4(addr: ipaddr.IPv6): ipaddr.IPv4 | null {
  const p = addr.parts as [number, number, number, number, number, number, number, number];
  const low = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 255, lo >> 8, lo & 255]);
  const zero = (from: number, to: number) => p.slice(from, to).every((x) => x === 0);
  if (zero(0, 5) && p[5] === 0xffff) return low(p[6], p[7]); // ::ffff:0:0/96 mapped
  if (zero(0, 4) && p[4] === 0xffff && p[5] === 0) return low(p[6], p[7]); // ::ffff:0:0:0/96 SIIT
  if (zero(0, 6)) return low(p[6], p[7]); // ::/96 compatible (:: and ::1 are judged before)
  if (p[0] === 0x64 && p[1] === 0xff9b && zero(2, 6)) return low(p[6], p[7]); // 64:ff9b::/96
  if (p[0] === 0x2002) return low(p[1], p[2]); // 2002::/16 6to4
  return null;
}

/** Parses an address the resolver or the allow list gave, IPv4-mapped IPv6 seen as IPv4. */
export function normalizeAddress(ip: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  const canonical = parseHostLiteral(ip) ?? zoneStripped(ip);
  if (canonical === null) return null;
  const addr = ipaddr.parse(canonical);
  if (addr.kind() === "ipv6" && (addr as ipaddr.IPv6).isIPv4MappedAddress()) return (addr as ipaddr.IPv6).toIPv4Address();
  return addr;
}

/** The words a client reads for each reason: "url resolves to <phrase>". */
export function describeReason(reason: ForbiddenReason): string {
  switch (reason) {
    case "loopback":
      return "a loopback address";
    case "private":
      return "a private address";
    case "link-local":
      return "a link-local address";
    case "cgnat":
      return "a carrier-grade NAT address";
    case "multicast":
      return "a multicast address";
    case "unspecified":
      return "an unspecified address";
    case "broadcast":
      return "a broadcast address";
    case "metadata":
      return "a cloud metadata address";
    case "reserved":
      return "a reserved address";
    case "documentation":
      return "a documentation-only address";
    case "invalid":
      return "an invalid address";
  }
}
