/**
 * Documents and checks for the sandbox tests, built in code so each test
 * shows exactly what it feeds LibreOffice: OOXML and ODF files whose only
 * picture is an external link (never embedded), a canary SVG, a DOCX of
 * many numbered pages, a reader for the PNG header fields the
 * conversion promises (size, pHYs), and LibreOffice's greeting on its pipe.
 */
import { createServer } from "node:http";
import { createConnection, type AddressInfo } from "node:net";
import { zip, type ZipEntry } from "../documents/testdata.ts";
import { hasPngSignature } from "../formats/index.ts";

/** An SVG that shows `text` large enough for OCR and keeps it as text for pdftotext. */
export function canarySvg(text: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="1200" height="300" viewBox="0 0 1200 300">
<rect width="1200" height="300" fill="white"/>
<text x="20" y="200" font-family="DejaVu Sans" font-size="120" fill="black">${text}</text>
</svg>
`;
}

const EMU_PER_CM = 360_000;

/**
 * A DOCX with a line of body text and one picture per URL, each an
 * `<a:blip r:link>` to a relationship with `TargetMode="External"`: Word's
 * way of linking (not embedding) an image.
 */
export function linkedImageDocx(bodyText: string, urls: readonly string[]): Buffer {
  const cx = 16 * EMU_PER_CM;
  const cy = 4 * EMU_PER_CM;
  const pictures = urls
    .map(
      (_, i) =>
        `<w:p><w:r><w:drawing><wp:inline distT="0" distB="0" distL="0" distR="0"><wp:extent cx="${cx}" cy="${cy}"/><wp:docPr id="${i + 1}" name="Linked ${i + 1}"/>` +
        `<a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:pic>` +
        `<pic:nvPicPr><pic:cNvPr id="${i + 1}" name="linked${i + 1}.svg"/><pic:cNvPicPr/></pic:nvPicPr>` +
        `<pic:blipFill><a:blip r:link="rIdLink${i + 1}"/><a:stretch><a:fillRect/></a:stretch></pic:blipFill>` +
        `<pic:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="${cx}" cy="${cy}"/></a:xfrm><a:prstGeom prst="rect"><a:avLst/></a:prstGeom></pic:spPr>` +
        `</pic:pic></a:graphicData></a:graphic></wp:inline></w:drawing></w:r></w:p>`,
    )
    .join("");
  const document =
    `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` +
    `<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"` +
    ` xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"` +
    ` xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture"><w:body>` +
    `<w:p><w:r><w:rPr><w:sz w:val="48"/></w:rPr><w:t>${bodyText}</w:t></w:r></w:p>${pictures}` +
    A4_SECTION +
    `</w:body></w:document>`;
  const relationships =
    `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
    urls
      .map(
        (url, i) =>
          `<Relationship Id="rIdLink${i + 1}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="${url}" TargetMode="External"/>`,
      )
      .join("") +
    `</Relationships>`;
  return docxPackage(document, [{ name: "word/_rels/document.xml.rels", data: relationships, deflate: true }]);
}

/** The last thing in a DOCX body: A4 pages with 2 cm margins. */
const A4_SECTION =
  `<w:sectPr><w:pgSz w:w="11906" w:h="16838"/><w:pgMar w:top="1134" w:right="1134" w:bottom="1134" w:left="1134" w:header="0" w:footer="0" w:gutter="0"/></w:sectPr>`;

/** A DOCX (OOXML zip) around `document` (word/document.xml), with `parts` besides. */
function docxPackage(document: string, parts: ZipEntry[] = []): Buffer {
return zip([
    {
      name: "[Content_Types].xml",
      data:
        `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
        `<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>` +
        `<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`,
      deflate: true,
    },
    {
      name: "_rels/.rels",
      data:
        `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
        `<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`,
      deflate: true,
    },
    { name: "word/document.xml", data: document, deflate: true },
    ...parts,
  ]);
}

/** An ODT with a line of body text and one linked (`xlink:href`, not embedded) picture per URL. */
export function linkedImageOdt(bodyText: string, urls: readonly string[]): Buffer {
  const frames = urls
    .map(
      (url, i) =>
        `<text:p><draw:frame draw:name="linked${i + 1}" text:anchor-type="as-char" svg:width="16cm" svg:height="4cm">` +
        `<draw:image xlink:href="${url}" xlink:type="simple" xlink:show="embed" xlink:actuate="onLoad"/></draw:frame></text:p>`,
    )
    .join("");
  const content =
    `<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"` +
    ` xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"` +
    ` xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" xmlns:xlink="http://www.w3.org/1999/xlink" office:version="1.3">` +
    `<office:body><office:text><text:p>${bodyText}</text:p>${frames}</office:text></office:body></office:document-content>`;
  return zip([
    { name: "mimetype", data: "application/vnd.oasis.opendocument.text" },
    {
      name: "META-INF/manifest.xml",
      data:
        `<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3">` +
        `<manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.text"/>` +
        `<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>`,
      deflate: true,
    },
    { name: "content.xml", data: content, deflate: true },
  ]);
}

/**
 * An A4 DOCX of `pages` pages, page N showing "Page N" in large type (OCR
 * tells the pages apart) and a line of body text; each page after the first
 * starts with a page break before its heading.
 */
export function pagedDocx(pages: number): Buffer {
  const body = Array.from(
    { length: pages },
    (_, i) =>
      `<w:p>${i > 0 ? "<w:pPr><w:pageBreakBefore/></w:pPr>" : ""}<w:r><w:rPr><w:sz w:val="96"/></w:rPr><w:t>Page ${i + 1}</w:t></w:r></w:p>` +
      `<w:p><w:r><w:t>The body text of page ${i + 1}.</w:t></w:r></w:p>`,
  ).join("");
  const document =
    `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` +
    `<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${body}` +
    A4_SECTION +
    `</w:body></w:document>`;
  return docxPackage(document);
}

export interface PngInfo {
  width: number;
  height: number;
  /** pHYs pixels per unit (x, y) and unit (1 = metre), when the chunk is there. */
  phys?: { x: number; y: number; unit: number };
}

/** Reads IHDR and pHYs from a PNG; throws when the signature is wrong. */
export function pngInfo(png: Buffer): PngInfo {
  if (!hasPngSignature(png)) throw new Error("not a PNG");
  const info: PngInfo = { width: 0, height: 0 };
  let offset = 8;
  while (offset + 8 <= png.length) {
    const length = png.readUInt32BE(offset);
    const type = png.toString("latin1", offset + 4, offset + 8);
    const data = png.subarray(offset + 8, offset + 8 + length);
    if (type === "IHDR") {
      info.width = data.readUInt32BE(0);
      info.height = data.readUInt32BE(4);
    } else if (type === "pHYs") {
      info.phys = { x: data.readUInt32BE(0), y: data.readUInt32BE(4), unit: data.readUInt8(8) };
    } else if (type === "IDAT" || type === "IEND") {
      break;
    }
    offset += 12 + length;
  }
  return info;
}

/**
 * A loopback HTTP server that answers every request with the canary SVG and
 * records the paths asked for: linked content in a sandboxed document must
 * never reach it.
 */
export interface CanaryServer {
  /** http://127.0.0.1:<port>/canary.svg */
  url: string;
  /** Paths requested so far (empty it with `requests.length = 0`). */
  requests: string[];
  close(): Promise<void>;
}

export async function startCanaryServer(canaryText: string): Promise<CanaryServer> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(req.url ?? "");
    res.setHeader("content-type", "image/svg+xml");
    res.end(canarySvg(canaryText));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/canary.svg`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * The first message on a new connection to a LibreOffice pipe
 * (`InternalIPC::SendArguments` once it has started), or undefined when
 * nothing answers.
 */
export function officeGreeting(pipe: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = createConnection(pipe);
    let text = "";
    socket.on("data", (chunk: Buffer) => {
      text += chunk.toString("utf8");
      if (!text.includes("\0")) return;
      socket.destroy();
      resolve(text.slice(0, text.indexOf("\0")));
    });
    socket.once("error", () => resolve(undefined));
    socket.once("close", () => resolve(undefined));
  });
}
