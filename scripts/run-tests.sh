#!/usr/bin/env bash
# Runs vitest (arguments pass through: a file, `--project unit`, `-t name`;
# docs/testing.md), keeps its JSON report, prints the ten slowest files
# (test/slowest-reporter.ts), names each failed test again and ends with the
# line `N passed, N failed`. A whole run first times the machine (the
# tesseract CLI on one fixture page): these machines differ by up to 2.5x
# from one session to the next, and docs/benchmarks/test-suite.md compares
# whole runs by that figure.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p test-artifacts
rm -f test-artifacts/vitest.json
probe=""
if [ $# -eq 0 ] && command -v tesseract >/dev/null 2>&1; then
  probe="$(for _ in 1 2 3; do
    start=$(date +%s%N)
    OMP_THREAD_LIMIT=1 tesseract test/fixtures/ocr/english.png stdout -l eng --psm 3 >/dev/null 2>&1
    echo $(( ($(date +%s%N) - start) / 1000000 ))
  done | sort -n | sed -n 2p)"
  probe="the machine: tesseract CLI on test/fixtures/ocr/english.png (psm 3, 1 thread), median of 3: ${probe} ms"
  echo "$probe"
fi
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
  if (process.argv[1]) console.log(process.argv[1]);
  console.log(`${passed} passed, ${failed} failed` + (skipped ? `, ${skipped} skipped` : ""));
' "$probe"
exit $rc
