/**
 * Small real files for the sniffing tests, built in code so the tests show
 * exactly which bytes make a format: a ZIP writer (stored or deflated
 * entries), an OLE2 compound-file writer, and minimal images.
 */
import { crc32, deflateRawSync, deflateSync } from "node:zlib";
import { PNG_SIGNATURE } from "../formats/index.ts";

export interface ZipEntry {
  name: string;
  data: string | Buffer;
  /** Deflate the entry (method 8) instead of storing it (method 0). */
  deflate?: boolean;
}

/** A ZIP archive with the entries in order (local headers, central directory, end record). */
export function zip(entries: readonly ZipEntry[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.from(e.name, "utf8");
    const raw = typeof e.data === "string" ? Buffer.from(e.data, "utf8") : e.data;
    const body = e.deflate ? deflateRawSync(raw) : raw;
    const crc = crc32(raw);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed
    local.writeUInt16LE(0, 6); // flags
    local.writeUInt16LE(e.deflate ? 8 : 0, 8);
    local.writeUInt32LE(0, 10); // time, date
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(body.length, 18);
    local.writeUInt32LE(raw.length, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(0, 28);
    locals.push(local, name, body);

    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4); // version made by
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0, 8);
    central.writeUInt16LE(e.deflate ? 8 : 0, 10);
    central.writeUInt32LE(0, 12);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(body.length, 20);
    central.writeUInt32LE(raw.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    centrals.push(central, name);
    offset += local.length + name.length + body.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

const CONTENT_TYPES = (main: string, part: string) =>
  `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>
<Default Extension="xml" ContentType="application/xml"/>
<Override PartName="${part}" ContentType="${main}"/>
</Types>`;

/** A minimal Word document (OOXML), deflated like Word writes it. */
export function docx(): Buffer {
  return zip([
    {
      name: "[Content_Types].xml",
      data: CONTENT_TYPES("application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml", "/word/document.xml"),
      deflate: true,
    },
    {
      name: "_rels/.rels",
      data: `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`,
      deflate: true,
    },
    {
      name: "word/document.xml",
      data: `<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>Hello</w:t></w:r></w:p></w:body></w:document>`,
      deflate: true,
    },
  ]);
}

/** A minimal PowerPoint presentation (OOXML). */
export function pptx(): Buffer {
  return zip([
    {
      name: "[Content_Types].xml",
      data: CONTENT_TYPES("application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml", "/ppt/presentation.xml"),
      deflate: true,
    },
    { name: "_rels/.rels", data: "<Relationships/>", deflate: true },
    { name: "ppt/presentation.xml", data: "<p:presentation/>", deflate: true },
  ]);
}

/** A minimal OpenDocument text: the `mimetype` entry comes first and is stored, as the format requires. */
export function odt(mimetype = "application/vnd.oasis.opendocument.text"): Buffer {
  return zip([
    { name: "mimetype", data: mimetype },
    { name: "content.xml", data: "<office:document-content/>", deflate: true },
    { name: "META-INF/manifest.xml", data: "<manifest:manifest/>", deflate: true },
  ]);
}

/** An ordinary archive that is no office document. */
export function plainZip(): Buffer {
  return zip([
    { name: "readme.txt", data: "hello", deflate: true },
    { name: "data/values.csv", data: "a,b\n1,2\n" },
  ]);
}

/**
 * An OLE2 compound file (version 3, 512-byte sectors) whose root storage
 * holds one empty stream per name: `["WordDocument"]` looks like a .doc,
 * `["Workbook"]` like a .xls. Sector 0 is the FAT, sector 1 the directory.
 */
export function compoundFile(streams: readonly string[]): Buffer {
  const FREE = 0xffffffff;
  const END = 0xfffffffe;
  const FATSECT = 0xfffffffd;
  const entries = 1 + streams.length;
  const dirSectors = Math.ceil(entries / 4);
  const header = Buffer.alloc(512, 0);
  Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]).copy(header, 0);
  header.writeUInt16LE(0x3e, 0x18); // minor version
  header.writeUInt16LE(3, 0x1a); // major version 3
  header.writeUInt16LE(0xfffe, 0x1c); // little-endian
  header.writeUInt16LE(9, 0x1e); // 512-byte sectors
  header.writeUInt16LE(6, 0x20); // 64-byte mini sectors
  header.writeUInt32LE(1, 0x2c); // one FAT sector
  header.writeUInt32LE(1, 0x30); // directory starts at sector 1
  header.writeUInt32LE(0x1000, 0x38); // mini stream cutoff
  header.writeUInt32LE(END, 0x3c); // no mini FAT
  header.writeUInt32LE(END, 0x44); // no DIFAT sectors
  for (let i = 0; i < 109; i++) header.writeUInt32LE(i === 0 ? 0 : FREE, 0x4c + 4 * i);

  const fat = Buffer.alloc(512, 0xff);
  fat.writeUInt32LE(FATSECT, 0);
  for (let s = 1; s <= dirSectors; s++) fat.writeUInt32LE(s === dirSectors ? END : s + 1, 4 * s);

  const dir = Buffer.alloc(512 * dirSectors, 0);
  const writeEntry = (index: number, name: string, type: number, child: number, right: number) => {
    const at = index * 128;
    const encoded = Buffer.from(`${name}\0`, "utf16le");
    encoded.copy(dir, at);
    dir.writeUInt16LE(encoded.length, at + 0x40);
    dir[at + 0x42] = type;
    dir[at + 0x43] = 1; // black
    dir.writeUInt32LE(FREE, at + 0x44); // left sibling
    dir.writeUInt32LE(right, at + 0x48); // right sibling
    dir.writeUInt32LE(child, at + 0x4c);
    dir.writeUInt32LE(END, at + 0x74); // start sector: none
  };
  writeEntry(0, "Root Entry", 5, streams.length > 0 ? 1 : FREE, FREE);
  streams.forEach((name, i) => writeEntry(i + 1, name, 2, FREE, i + 2 <= streams.length ? i + 2 : FREE));
  for (let i = entries; i < dirSectors * 4; i++) {
    const at = i * 128;
    dir.writeUInt32LE(FREE, at + 0x44);
    dir.writeUInt32LE(FREE, at + 0x48);
    dir.writeUInt32LE(FREE, at + 0x4c);
  }
  return Buffer.concat([header, fat, dir]);
}

/** One PNG chunk: its length, type, data and CRC. */
export function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const typed = Buffer.concat([Buffer.from(type, "latin1"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(typed));
  return Buffer.concat([length, typed, crc]);
}

/** A valid 1×1 white RGB PNG. */
export function png(): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(1, 0);
  ihdr.writeUInt32BE(1, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  const scanline = Buffer.from([0, 255, 255, 255]); // filter byte + one pixel
  return Buffer.concat([
    PNG_SIGNATURE,
    pngChunk("IHDR", ihdr),
    pngChunk("IDAT", deflateSync(scanline)),
    pngChunk("IEND", Buffer.alloc(0)),
  ]);
}

/** The start of a baseline JPEG (SOI + JFIF APP0), enough for a signature check. */
export function jpeg(): Buffer {
  return Buffer.from([
    0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00,
    0xff, 0xd9,
  ]);
}

/** A valid 1×1 GIF89a. */
export function gif(): Buffer {
  return Buffer.from([
    0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x2c,
    0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3b,
  ]);
}

/** A RIFF/WEBP container with a lossless (VP8L) 1×1 bitstream header. */
export function webp(): Buffer {
  const vp8l = Buffer.from([0x2f, 0x00, 0x00, 0x00, 0x00, 0x88, 0x88, 0x08, 0x00]);
  const chunk = Buffer.concat([Buffer.from("VP8L", "latin1"), u32le(vp8l.length), vp8l, Buffer.alloc(vp8l.length % 2)]);
  const body = Buffer.concat([Buffer.from("WEBP", "latin1"), chunk]);
  return Buffer.concat([Buffer.from("RIFF", "latin1"), u32le(body.length), body]);
}

/** A little-endian TIFF header with one IFD (ImageWidth = 1). */
export function tiff(): Buffer {
  const b = Buffer.alloc(8 + 2 + 12 + 4);
  b.write("II", 0, "latin1");
  b.writeUInt16LE(42, 2);
  b.writeUInt32LE(8, 4); // first IFD
  b.writeUInt16LE(1, 8); // one entry
  b.writeUInt16LE(256, 10); // ImageWidth
  b.writeUInt16LE(3, 12); // SHORT
  b.writeUInt32LE(1, 14);
  b.writeUInt16LE(1, 18);
  b.writeUInt32LE(0, 22); // no next IFD
  return b;
}

/** A 1×1 24-bit BMP. */
export function bmp(): Buffer {
  const b = Buffer.alloc(58);
  b.write("BM", 0, "latin1");
  b.writeUInt32LE(58, 2);
  b.writeUInt32LE(54, 10); // pixel data offset
  b.writeUInt32LE(40, 14); // BITMAPINFOHEADER
  b.writeInt32LE(1, 18);
  b.writeInt32LE(1, 22);
  b.writeUInt16LE(1, 26);
  b.writeUInt16LE(24, 28);
  b.writeUInt32LE(4, 34);
  return b;
}

/** A one-page PDF with a text object; plain ASCII, as small PDFs often are. */
export function pdf(): Buffer {
  return Buffer.from(
    `%PDF-1.4
1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj
2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj
3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R >> endobj
4 0 obj << /Length 35 >> stream
BT /F1 12 Tf 20 100 Td (Hello) Tj ET
endstream endobj
trailer << /Root 1 0 R >>
%%EOF
`,
    "latin1",
  );
}

export function rtf(): Buffer {
  return Buffer.from("{\\rtf1\\ansi\\deff0 {\\fonttbl {\\f0 Times;}} Hello \\b world\\b0.\\par }", "latin1");
}

function u32le(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
}
