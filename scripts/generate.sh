#!/usr/bin/env bash
# Runs every generator of committed files, in order (a later one may read what
# an earlier one wrote: the kustomize base copies the CRD). With --check each
# one regenerates into memory or a temporary folder and fails, naming itself,
# when the committed files differ; `make lint` runs that.
#
#   scripts/generate.sh           rewrite the generated files
#   scripts/generate.sh --check   exit 1 when any is out of date
#
# Not here, on purpose: the test fixtures' generators (test/fixtures/*/generate.ts)
# render with the machine's LibreOffice and poppler, whose output changes with
# their versions; they are run by hand when a fixture should change.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-}"
if [ -n "$mode" ] && [ "$mode" != "--check" ]; then
  echo "usage: scripts/generate.sh [--check]" >&2
  exit 2
fi
# The project's Node (the `node` devDependency) and tsx, as npm scripts see them.
export PATH="$PWD/node_modules/.bin:$PATH"

# name | command (the mode is appended)
generators=(
  "proto types and descriptors|scripts/gen-proto.sh"
  "ConversionSandbox CRD|tsx scripts/gen-crd.ts"
  "kustomize base from the Helm chart|tsx deploy/kustomize/generate.ts"
  "prices in docs/|tsx scripts/gen-docs.ts"
)

failed=0
for g in "${generators[@]}"; do
  name="${g%%|*}"
  cmd="${g#*|}"
  # shellcheck disable=SC2086 # the command is a word list on purpose
  if ! $cmd $mode; then
    echo "generate: $name is out of date or failed; run \`make generate\` and commit the result" >&2
    failed=1
  fi
done
exit $failed
