/**
 * How `.proto` definitions are loaded everywhere (the generated types in
 * internal/gen assume these). No imports: the sandbox program bundles it.
 */
export const PROTO_LOAD_OPTIONS = Object.freeze({ keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true });

/** Largest gRPC message: one page image or one document chunk fits with room. */
export const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
