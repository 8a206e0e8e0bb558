/**
 * `folio migrate` and `folio admin …`: operator commands that work on the
 * database directly (accounts, credits, keys; there is no payment
 * processor, so credits are added here): what they do, and their registration
 * (`commands.ts`, which loads the rest only when a command runs).
 */
export { adminAddCredits, adminCreateAccount, adminCreateKey, adminUpdateAccount, type AdminContext } from "./admin.ts";
export { withData } from "./context.ts";
export { registerAdminCommands } from "./commands.ts";
