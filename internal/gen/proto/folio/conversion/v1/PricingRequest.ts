// Original file: proto/folio/conversion/v1/conversion.proto


export interface PricingRequest {
}

export interface PricingRequest__Output {
}
