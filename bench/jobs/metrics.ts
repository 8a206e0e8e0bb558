/** Reading a Folio process's /metrics (Prometheus text) for the jobs benchmark. */
import { fetch } from "undici";
import { agent } from "./api.ts";

/** The samples of a Prometheus text page: name, labels (as written) and value. */
export function samples(text: string): { name: string; labels: string; value: number }[] {
  const out: { name: string; labels: string; value: number }[] = [];
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (m) out.push({ name: m[1]!, labels: m[2] ?? "", value: Number(m[3]) });
  }
  return out;
}

/** The first sample of each name asked for (folio dev serves one series per service sharing the process, by its `process` label: the same process figures). */
export async function scrape(url: string, names: readonly string[]): Promise<Record<string, number>> {
  const text = await fetch(url, { dispatcher: agent }).then((r) => r.text());
  const out: Record<string, number> = {};
  for (const x of samples(text)) if (names.includes(x.name) && out[x.name] === undefined) out[x.name] = x.value;
  return out;
}
