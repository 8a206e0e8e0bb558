/** GET /v1/convert/pricing: the conversion price list. */
import { Type } from "typebox";
import { PRICE_TEXT, formatUsd } from "../../billing/index.ts";
import { conversionOf } from "../services.ts";
import { keyed } from "../schemas.ts";
import type { App, EdgeDeps } from "../types.ts";

export default function register(app: App, deps: EdgeDeps): void {
  app.get(
    "/v1/convert/pricing",
    keyed(["convert:write"], {
      summary: "Conversion pricing",
      description: `${PRICE_TEXT.conversionList}; examples per format from the current estimates.`,
      tags: ["Conversion"],
      response: {
        200: Type.Object({
          object: Type.Literal("conversion.pricing"),
          pricing: Type.Object({
            base_rate_per_minute: Type.String({ description: "Dollars per minute of compute time, before the fee." }),
            platform_fee_percentage: Type.String(),
            minimum_charge: Type.String({ description: "Dollars per conversion." }),
            examples: Type.Array(Type.Object({ format: Type.String(), estimatedCost: Type.String(), estimated_time_seconds: Type.Number() })),
          }),
          supported_formats: Type.Array(Type.String()),
        }),
      },
    }, [503]),
    async () => {
      const p = await conversionOf(deps).pricing();
      return {
        object: "conversion.pricing" as const,
        pricing: {
          base_rate_per_minute: p.baseRatePerMinute,
          platform_fee_percentage: p.platformFeePercentage,
          minimum_charge: p.minimumCharge,
          examples: p.examples.map((e) => ({ format: e.format, estimatedCost: formatUsd(e.costCents), estimated_time_seconds: e.seconds })),
        },
        supported_formats: p.supportedFormats,
      };
    },
  );
}
