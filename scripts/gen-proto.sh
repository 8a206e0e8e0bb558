#!/usr/bin/env bash
# Generates TypeScript types and protobufjs JSON descriptors from proto/ into
# internal/gen/proto (never edit those by hand). `--check` regenerates into a
# temporary folder and fails when the committed files differ.
set -euo pipefail
cd "$(dirname "$0")/.."
# The project's Node (the `node` devDependency) for the generators.
export PATH="$PWD/node_modules/.bin:$PATH"
out=internal/gen/proto
[ "${1:-}" = "--check" ] && out="$(mktemp -d)/proto"
rm -rf "$out"
mapfile -t protos < <(cd proto && find . -name "*.proto" | sed "s|^\./||" | sort)
node_modules/.bin/proto-loader-gen-types --keepCase --longs=Number --enums=String --defaults --oneofs \
  --grpcLib=@grpc/grpc-js --includeComments -I proto -O "$out" "${protos[@]}" >/dev/null
# ESM with NodeNext resolution needs explicit extensions on relative imports.
find "$out" -name '*.ts' -print0 | xargs -0 sed -i -E "s#(from '\.{1,2}/[^']*)'#\1.ts'#"
# The same definitions as JSON for the bundled sandbox program.
tsx scripts/gen-proto-descriptors.ts "$out"
if [ "${1:-}" = "--check" ]; then
  if ! diff -r "$out" internal/gen/proto >/dev/null; then
    echo "gen-proto: internal/gen/proto is out of date; run 'make generate' and commit" >&2
    diff -r "$out" internal/gen/proto | head -20 >&2
    exit 1
  fi
  echo "gen-proto: generated types are current" >&2
fi
