export * from "./keys.ts";
export * from "./permissions.ts";
export { Authenticator, type AccountSnapshot, type Authenticated, type AuthenticatorOptions, type Principal } from "./authenticator.ts";
export { KeyStore, validatePermissions, type CreatedKey, type Grantor, type KeyChangeListener } from "./store.ts";
