// Broker addressing for sandbox pods, IPv4 and IPv6: what the backend puts in ConversionSandboxes and pool reports, checked against the CRD's schema.
import { Value } from "typebox/value";
import { describe, expect, it } from "vitest";
import { ConversionSandboxSpecSchema } from "../../operator/index.ts";
import { brokerAddressForPods } from "./backend.ts";

const spec = (address: string) => ({ format: "DOCX", maxPages: 1, timeoutSeconds: 10, broker: { address, token: "tok_0123456789abcdef0123" } });

describe("brokerAddressForPods", () => {
  it("leaves DNS names and IPv4 addresses as they are", () => {
    expect(brokerAddressForPods("folio-conversion-0.folio-conversion-broker.folio.svc:50053")).toBe("folio-conversion-0.folio-conversion-broker.folio.svc:50053");
    expect(brokerAddressForPods("10.244.1.7:50053")).toBe("10.244.1.7:50053");
    expect(brokerAddressForPods("[fd00::7]:50053")).toBe("[fd00::7]:50053");
  });

  it("puts an IPv6 pod IP (as $(POD_IP):50053 gives it) in brackets", () => {
    expect(brokerAddressForPods("fd00:10:244::7:50053")).toBe("[fd00:10:244::7]:50053");
    expect(brokerAddressForPods("::1:50053")).toBe("[::1]:50053");
  });

  it("gives addresses the CRD accepts, where the raw IPv6 form is refused", () => {
    for (const raw of ["10.244.1.7:50053", "fd00:10:244::7:50053", "folio-conversion.folio.svc:50053"]) {
      expect(Value.Check(ConversionSandboxSpecSchema, spec(brokerAddressForPods(raw))), raw).toBe(true);
    }
    expect(Value.Check(ConversionSandboxSpecSchema, spec("fd00:10:244::7:50053"))).toBe(false);
    expect(Value.Check(ConversionSandboxSpecSchema, spec("[not-an-ip]:50053"))).toBe(false);
  });
});
