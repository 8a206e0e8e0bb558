/**
 * The page count an office file's author saw, as the application that last
 * saved it stored it: what a conversion should reproduce.
 *
 * - DOCX (and PPTX, as slides): `docProps/app.xml`, `<Pages>` / `<Slides>`
 *   (Office Open XML extended properties; Word updates it at every save);
 * - ODT: `meta.xml`, `meta:document-statistic/@meta:page-count`;
 * - DOC: the `\x05SummaryInformation` property set of the compound file,
 *   property 14 (PIDSI_PAGECOUNT, a VT_I4);
 * - RTF: `{\info … {\nofpages N}}`.
 *
 * A file that stores none (plain text, a generator that leaves the field
 * out, a damaged file) gives undefined. Benchmarks only: the service never
 * trusts a count a client's file claims.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import CFB from "cfb";

const run = promisify(execFile);

/** One member of a zip file as text, or undefined when it is not there (`unzip -p`). */
async function zipMember(file: string, member: string): Promise<string | undefined> {
  return run("unzip", ["-p", file, member], { encoding: "utf8", maxBuffer: 16 * 1024 * 1024 }).then(
    (r) => r.stdout || undefined,
    () => undefined,
  );
}

const count = (raw: string | undefined): number | undefined => {
  const n = raw === undefined ? Number.NaN : Number(raw);
  return Number.isInteger(n) && n > 0 ? n : undefined;
};

/** PIDSI_PAGECOUNT of an OLE2 SummaryInformation stream ([MS-OLEPS] 2.21: header, one section, id/offset pairs). */
export function summaryPageCount(stream: Buffer): number | undefined {
  if (stream.length < 48 || stream.readUInt16LE(0) !== 0xfffe) return undefined;
  const section = stream.readUInt32LE(44);
  if (section + 8 > stream.length) return undefined;
  const properties = stream.readUInt32LE(section + 4);
  for (let i = 0; i < properties; i++) {
    const entry = section + 8 + i * 8;
    if (entry + 8 > stream.length) return undefined;
    if (stream.readUInt32LE(entry) !== 14) continue;
    const at = section + stream.readUInt32LE(entry + 4);
    // VT_I4 (3): a 4-byte type, then the value.
    if (at + 8 > stream.length || stream.readUInt16LE(at) !== 3) return undefined;
    return count(String(stream.readInt32LE(at + 4)));
  }
  return undefined;
}

/** The stored page (or slide) count of `file`, by its extension; undefined when it stores none. */
export async function storedPageCount(file: string, bytes: Buffer): Promise<number | undefined> {
  const ext = file.slice(file.lastIndexOf(".")).toLowerCase();
  if ([".docx", ".docm", ".pptx", ".pptm"].includes(ext)) {
    const app = await zipMember(file, "docProps/app.xml");
    return count(/<(?:\w+:)?(?:Pages|Slides)>\s*(\d+)\s*</.exec(app ?? "")?.[1]);
  }
  if (ext === ".odt") {
    return count(/meta:page-count="(\d+)"/.exec((await zipMember(file, "meta.xml")) ?? "")?.[1]);
  }
  if (ext === ".doc") {
    try {
      const entry = CFB.find(CFB.read(bytes, { type: "buffer" }), "\u0005SummaryInformation");
      return entry?.content ? summaryPageCount(Buffer.from(entry.content as Uint8Array)) : undefined;
    } catch {
      return undefined;
    }
  }
  if (ext === ".rtf") return count(/\\nofpages(\d+)/.exec(bytes.toString("latin1"))?.[1]);
  return undefined;
}
