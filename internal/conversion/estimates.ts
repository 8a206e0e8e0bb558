/**
 * Estimates of a conversion's time and cost per format, from the compute
 * times actually observed in this process: the median of the last
 * {@link WINDOW} successful conversions of that format once there are at
 * least {@link MIN_SAMPLES}, a default table until then.
 *
 * The defaults are one-page fixtures measured through the runsc backend on
 * a 2-CPU machine (docs/benchmarks.md), rounded up.
 */
import { conversionChargeCents } from "../billing/index.ts";
import type { Estimate } from "../contracts/index.ts";
import type { ConversionFormat } from "../formats/index.ts";

export const WINDOW = 100;
export const MIN_SAMPLES = 5;

export const DEFAULT_SECONDS: Readonly<Record<ConversionFormat, number>> = Object.freeze({
  DOCX: 5,
  PPTX: 6,
  DOC: 5,
  ODT: 5,
  RTF: 4,
  TXT: 4,
});

export class EstimateBook {
  private readonly observed = new Map<ConversionFormat, number[]>();

  /** Records the compute time of one successful conversion. */
  record(format: ConversionFormat, computeMillis: number): void {
    const list = this.observed.get(format) ?? [];
    list.push(computeMillis);
    if (list.length > WINDOW) list.shift();
    this.observed.set(format, list);
  }

  estimate(format: ConversionFormat): Estimate {
    const list = this.observed.get(format) ?? [];
    const observed = list.length >= MIN_SAMPLES;
    const millis = observed ? median(list) : DEFAULT_SECONDS[format] * 1000;
    return {
      format,
      costCents: conversionChargeCents(millis),
      seconds: Math.round(millis / 100) / 10,
      basis: observed ? "observed" : "default",
      samples: observed ? list.length : 0,
    };
  }
}

function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}
