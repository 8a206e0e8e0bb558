/** POST /v1/convert/estimate: what converting a document of a MIME type costs and takes. */
import { Type } from "typebox";
import { formatUsd } from "../../billing/index.ts";
import { formatForMimeType } from "../../conversion/client.ts";
import { conversionOf } from "../services.ts";
import { keyed } from "../schemas.ts";
import type { App, EdgeDeps } from "../types.ts";

export default function register(app: App, deps: EdgeDeps): void {
  app.post(
    "/v1/convert/estimate",
    keyed(["convert:write"], {
      summary: "Estimate the cost and time of a conversion",
      description:
        "From the compute times observed for that format (the median of recent conversions), or a default table until there are enough (docs/conversion.md). The charge of a real conversion is its measured compute time.",
      tags: ["Conversion"],
      body: Type.Object({ mimeType: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false }),
      response: {
        200: Type.Object({
          object: Type.Literal("conversion.estimate"),
          mimeType: Type.String(),
          estimated_cost: Type.Object({ cents: Type.Integer(), formatted: Type.String() }),
          estimated_time_seconds: Type.Number(),
          basis: Type.String({ description: "observed or default" }),
          samples: Type.Integer({ description: "Conversions the estimate is based on." }),
        }),
      },
    }, [503]),
    async (req) => {
      const { mimeType } = req.body;
      formatForMimeType(mimeType, "mimeType");
      const e = await conversionOf(deps).estimate(mimeType);
      return {
        object: "conversion.estimate" as const,
        mimeType,
        estimated_cost: { cents: e.costCents, formatted: formatUsd(e.costCents) },
        estimated_time_seconds: e.seconds,
        basis: e.basis,
        samples: e.samples,
      };
    },
  );
}
