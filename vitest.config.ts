import { defineConfig } from "vitest/config";
import { TEST_FILES, TIER_FILES, TIER_NAMES, type Tier } from "./test/tiers.ts";

/**
 * Five tiers, each a project (docs/testing.md): `vitest run --project unit`
 * runs one. A whole run runs four of them together on one pool of workers,
 * longest files first (test/sequencer.ts), then the fault suite alone.
 */
const ORDER: Tier[] = ["faults", "e2e", "sandbox", "integration"];
/** Workers at once: many files wait on sockets, timers and child processes more than they compute (docs/testing.md). */
const WORKERS = Number(process.env.FOLIO_TEST_WORKERS ?? 3);
/** The globs of the tiers listed before `tier` (a file is in the first tier that lists it). */
const before = (tier: Tier) => ORDER.slice(0, ORDER.indexOf(tier)).flatMap((t) => TIER_FILES[t as Exclude<Tier, "unit">]);
const everyListed = ORDER.flatMap((t) => TIER_FILES[t as Exclude<Tier, "unit">]);

/** Runs before each tier: one migrated database per tier (test/global-setup.ts); sandbox tiers also prepare runsc's assets once. */
const setup = (tier: Tier) => ["test/global-setup.ts", ...(tier === "sandbox" || tier === "e2e" || tier === "faults" ? ["test/global-setup.sandbox.ts"] : [])];

export default defineConfig({
  test: {
    // Twice what one file alone needs: files run side by side, each slower than alone.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ["default"],
    maxWorkers: WORKERS,
    sequence: { sequencer: (await import("./test/sequencer.ts")).default },
    projects: TIER_NAMES.map((tier) => ({
      extends: true as const,
      test: {
        name: tier,
        include: tier === "unit" ? TEST_FILES : [...TIER_FILES[tier]],
        exclude: ["**/node_modules/**", ...(tier === "unit" ? everyListed : before(tier))],
        globalSetup: setup(tier),
        // Unit files share a worker's modules (half the tier's time and CPU goes to imports otherwise);
        // the others, which start services and children, get a fresh process each.
        isolate: tier !== "unit",
        // The fault suite alone, once every other file is done (test/tiers.ts).
        ...(tier === "faults" ? { sequence: { groupOrder: 1 }, maxWorkers: 1 } : { sequence: { groupOrder: 0 }, maxWorkers: WORKERS }),
      },
    })),
  },
});
