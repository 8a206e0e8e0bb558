/** Text written for the layout tests (joins.test.ts, layout.test.ts): no corpus page. */

/** Prose, wrapped at about 24 characters: the lines of three narrow columns. */
export const PROSE = [
  "The river rises in the",
  "hills above the town and",
  "runs for most of the year",
  "through a narrow valley of",
  "old farms and mills. In the",
  "spring the water is high and",
  "the mills were built to use",
  "it; in the summer the river",
  "is low and the farmers take",
  "what they need for the fields",
  "before it reaches the sea.",
  "The town grew up where the",
  "road from the north crosses",
  "the river, and for a long",
  "time the bridge was the only",
  "one between the hills and the",
  "coast. Traders came to the",
  "market every week, and the",
  "town kept a record of what",
  "they sold and of the prices",
  "they asked for it. Those",
  "records are still kept in the",
  "town hall, and they show how",
  "the prices of the market rose",
  "and fell with the harvest and",
  "with the level of the river",
  "in the years before the new",
  "bridge was built in the south",
  "of the valley, which took the",
  "trade of the road away from",
];

/** The same lines as three columns of ten, read across: row by row. */
export function acrossColumns(lines: readonly string[], columns: number): string[] {
  const rows = lines.length / columns;
  return Array.from({ length: rows }, (_, r) => Array.from({ length: columns }, (_, c) => lines[c * rows + r]!)).flat();
}
