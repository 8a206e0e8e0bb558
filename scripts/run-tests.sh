#!/usr/bin/env bash
# Runs vitest (arguments pass through: a file, `--project unit`, `-t name`;
# docs/testing.md), keeps its JSON report, prints the ten slowest files
# (test/slowest-reporter.ts), names each failed test again and ends with the
# line `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p test-artifacts
rm -f test-artifacts/vitest.json
npx --no-install vitest run --reporter=default --reporter=./test/slowest-reporter.ts --reporter=json --outputFile.json=test-artifacts/vitest.json "$@"
rc=$?
node_modules/.bin/node -e '
  const fs = require("fs");
  let passed = 0, failed = 0, skipped = 0;
  try {
    const r = JSON.parse(fs.readFileSync("test-artifacts/vitest.json", "utf8"));
    passed = r.numPassedTests; failed = r.numFailedTests + (r.numFailedTestSuites && !r.numFailedTests ? r.numFailedTestSuites : 0);
    skipped = r.numPendingTests + r.numTodoTests;
    // The failures again, just above the last line: CI keeps only the tail of the output.
    for (const file of r.testResults ?? []) {
      const name = file.name.replace(process.cwd() + "/", "");
      if (file.status === "failed" && !file.assertionResults?.some((t) => t.status === "failed")) {
        console.log(`FAILED ${name}: ${(file.message ?? "").split("\n")[0].slice(0, 300)}`);
      }
      for (const t of file.assertionResults ?? []) {
        if (t.status !== "failed") continue;
        const why = (t.failureMessages?.[0] ?? "").split("\n")[0].slice(0, 300);
        console.log(`FAILED ${name} > ${t.fullName}: ${why}`);
      }
    }
  } catch { failed = 1; }
  console.log(`${passed} passed, ${failed} failed` + (skipped ? `, ${skipped} skipped` : ""));
'
exit $rc
