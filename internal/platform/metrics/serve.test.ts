import { afterEach, describe, expect, it } from "vitest";
import type { Server } from "node:http";
import { ConversionMetrics, EdgeMetrics, ExtractionMetrics } from "./index.ts";

let server: Server | undefined;
afterEach(() => server?.close());

describe("Metrics.serve", () => {
  it("serves the registries of services sharing a process (folio dev), names they share included", async () => {
    const extraction = new ExtractionMetrics(() => ({ ageSeconds: 1, stale: false, models: [] }), false);
    const conversion = new ConversionMetrics(() => ({ waiting: 3 }), false);
    extraction.grpc.observe("/folio.extraction.v1.ExtractionService/ExtractPage", "OK", 0.1);
    conversion.grpc.observe("/folio.conversion.v1.ConversionService/Convert", "OK", 2);
    const served = await new EdgeMetrics().serve("127.0.0.1", 0, [extraction.registry, conversion.registry]);
    server = served.server;
    const res = await fetch(`http://127.0.0.1:${served.port}/metrics`);
    const text = await res.text();
    expect(res.status, text.slice(0, 300)).toBe(200);
    expect(text).toContain('folio_grpc_server_calls_total{method="/folio.extraction.v1.ExtractionService/ExtractPage",code="OK",process="extraction"} 1');
    expect(text).toContain('folio_grpc_server_calls_total{method="/folio.conversion.v1.ConversionService/Convert",code="OK",process="conversion"} 1');
    expect(text).toContain('folio_conversion_queue_depth{process="conversion"} 3');
    expect(text).toContain("folio_http_requests_total");
    expect(text.match(/^# TYPE folio_grpc_server_calls_total /gm)).toHaveLength(1);
  });
});
