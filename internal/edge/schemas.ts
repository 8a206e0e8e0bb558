/** Shared wire schemas (TypeBox = JSON Schema; they also feed /v1/openapi.json). */
import { Type } from "typebox";
import { PERMISSIONS } from "../auth/index.ts";

export const ErrorBody = Type.Object(
  {
    error: Type.Object(
      {
        code: Type.String({ description: "Stable machine-readable code, see docs/errors.md." }),
        message: Type.String({ description: "What went wrong, for people." }),
        param: Type.Optional(Type.String({ description: "The request field at fault." })),
      },
      { additionalProperties: true },
    ),
  },
  { $id: "Error", description: "The one error shape of every endpoint." },
);

export const errorResponses = {
  400: Type.Ref("Error"),
  401: Type.Ref("Error"),
  403: Type.Ref("Error"),
  404: Type.Ref("Error"),
  429: Type.Ref("Error"),
};

/**
 * A string from a fixed set, as a JSON Schema `enum` (not `anyOf` of
 * constants) so a wrong value's 400 lists the allowed values.
 */
export function StringEnum<const T extends readonly string[]>(values: T, options: { description?: string; default?: T[number] } = {}) {
  return Type.Unsafe<T[number]>({ type: "string", enum: [...values], ...options });
}

export const Permission = StringEnum(PERMISSIONS, { description: "A permission name (docs/permissions.md)." });

export const UnixSeconds = Type.Integer({ minimum: 0, maximum: 253402300799, description: "Unix timestamp, seconds." });

/** Strings stored in Postgres text columns cannot hold NUL: refuse it with a 400 naming the field. */
export const NO_NUL = "^[^\\u0000]*$";
