// Original file: proto/folio/conversion/v1/conversion.proto


export interface SubmitResultResponse {
}

export interface SubmitResultResponse__Output {
}
