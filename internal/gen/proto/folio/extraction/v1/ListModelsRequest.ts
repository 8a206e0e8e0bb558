// Original file: proto/folio/extraction/v1/extraction.proto


export interface ListModelsRequest {
}

export interface ListModelsRequest__Output {
}
