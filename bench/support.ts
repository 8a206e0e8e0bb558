import { openDatabase } from "../internal/platform/db/index.ts";
import { adminAddCredits } from "../internal/cli/admin.ts";

/** Adds credits to a benchmark account. */
export async function addCredits(databaseUrl: string, accountId: string, cents: number): Promise<void> {
  const handle = await openDatabase({ databaseUrl, poolSize: 1 });
  try {
    await adminAddCredits({ db: handle.db }, { accountId, cents });
  } finally {
    await handle.close();
  }
}
