/**
 * pdf.test.ts again with every poppler tool in the bubblewrap parser jail
 * (FOLIO_PARSER_JAIL=bwrap, platform/jail): counting, rendering, streaming,
 * pausing pdftoppm for a slow reader, time limits, aborts and nothing left
 * behind work the same through bwrap. Skipped, saying so, where bubblewrap
 * is not installed.
 */
import { readFileSync, readlinkSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { watchChildren, type SeenChild } from "../../test/children.ts";
import { useParserJail } from "../platform/jail/index.ts";
import { rasterizePdf } from "./pdf.ts";
import { bwrapInstalled } from "../../test/support.ts";


if (bwrapInstalled) {
  beforeAll(() => useParserJail("bwrap"));
  afterAll(() => useParserJail("none"));
  await import("./pdf.test.ts");

  it("runs pdfinfo and pdftoppm in a network namespace of their own", async () => {
    const watch = await watchChildren(["pdfinfo", "pdftoppm"]);
    let seen: SeenChild[];
    try {
      // pdfinfo lives a few milliseconds: under a loaded CI machine the 1 ms /proc watcher missed its one run
      // (stop 38); three documents give it three chances, and every run seen is checked below.
      const pdf = readFileSync(new URL("../../test/fixtures/ocr/multipage.pdf", import.meta.url));
      for (let i = 0; i < 3; i++) await rasterizePdf(pdf, { maxPages: 5, timeoutMs: 30_000 });
    } finally {
      seen = await watch.stop();
    }
    expect([...new Set(seen.map((c) => c.exe))].sort()).toEqual(["/usr/bin/pdfinfo", "/usr/bin/pdftoppm"]);
    const own = readlinkSync("/proc/self/ns/net");
    for (const c of seen) expect(c.netns, `${c.exe} (pid ${c.pid})`).not.toBe(own);
  });
} else {
  it.skip("bubblewrap is not installed: pdf.test.ts in the parser jail is skipped");
}
