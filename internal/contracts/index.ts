/**
 * The shapes the edge shares with the extraction and conversion services:
 * the one module besides their gRPC clients that the edge may import from
 * them (docs/architecture.md; `make lint` keeps it so). Types only, plus the
 * strategy names.
 */
export type * from "./extraction.ts";
export type * from "./conversion.ts";
export { DEFAULT_STRATEGY, STRATEGIES, type Strategy } from "./strategies.ts";
