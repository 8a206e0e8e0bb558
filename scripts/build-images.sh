#!/usr/bin/env bash
# Builds Folio's two images with buildah (no daemon), from deploy/docker:
# the service image `folio:<hash>` (Dockerfile) and the sandbox image
# `folio-sandbox:<hash>` (sandbox.Dockerfile), in local container storage.
# `make image` runs it; test/images.podman.test.ts runs it before it runs the
# images. docs/operations-images.md ("Building with make image").
#
# <hash> is a content hash of everything the images are built from: the
# files .dockerignore lets into the context, deploy/docker, this script, the
# fallback's script and the base images' ids. When both tags exist nothing is built, so a rerun
# (even from a fresh clone, with the same container storage) takes seconds;
# when something changed, `buildah bud --layers` reuses every step before
# the first changed input.
#
# Base images (FOLIO_IMAGE_BASE): `public` builds on node:24-bookworm-slim and
# debian:bookworm-slim, pulled when missing; `local` on the equivalents
# scripts/build-base-image.sh makes from Debian's packages and npm (THE
# FALLBACK, for machines that cannot pull them); `auto` (default) uses the
# public ones when present or pullable, else the fallback.
#
# Prints on stdout (for eval):
#   FOLIO_IMAGE=folio:<hash> FOLIO_SANDBOX_IMAGE=folio-sandbox:<hash>
set -euo pipefail
cd "$(dirname "$0")/.."

command -v buildah >/dev/null 2>&1 || { echo "build-images: buildah is missing (scripts/ensure-deps.sh test installs it)" >&2; exit 1; }
log() { echo "build-images: $*" >&2; }

public_node=node:24-bookworm-slim
public_debian=debian:bookworm-slim
have() { buildah inspect --type image "$1" >/dev/null 2>&1; }
pull() { have "$1" || buildah pull --quiet "$1" >/dev/null 2>&1; }

base="${FOLIO_IMAGE_BASE:-auto}"
case "$base" in
  public) pull "$public_node" && pull "$public_debian" || { log "cannot pull $public_node and $public_debian"; exit 1; } ;;
  auto)
    if pull "$public_node" && pull "$public_debian"; then
      base=public
    else
      log "the public base images cannot be pulled: building the fallback (scripts/build-base-image.sh)"
      base=local
    fi
    ;;
  local) ;;
  *) log "FOLIO_IMAGE_BASE must be auto, public or local, not '$base'"; exit 2 ;;
esac
if [ "$base" = public ]; then
  node_image="$public_node"
  debian_image="$public_debian"
else
  bases="$(scripts/build-base-image.sh)" || { log "the fallback base images could not be built"; exit 1; }
  eval "$(grep -E '^(NODE|DEBIAN)_IMAGE=[A-Za-z0-9:._-]+$' <<<"$bases")"
  node_image="$NODE_IMAGE"
  debian_image="$DEBIAN_IMAGE"
fi
image_id() { buildah inspect --type image --format '{{.FromImageID}}' "$1"; }

# The context is what .dockerignore allows (an allowlist of `!path` lines), less node_modules.
mapfile -t context < <(sed -n 's/^!//p' .dockerignore)
hash="$(
  {
    find "${context[@]}" .dockerignore deploy/docker scripts/build-images.sh scripts/build-base-image.sh -type f -not -path '*/node_modules/*' -print0 \
      | LC_ALL=C sort -z | xargs -0 sha256sum
    echo "node $(image_id "$node_image") debian $(image_id "$debian_image")"
  } | sha256sum | cut -c1-12
)"
service="folio:$hash"
sandbox="folio-sandbox:$hash"

# A machine whose TLS is intercepted (its CA in NODE_EXTRA_CA_CERTS, as Node reads it, else in the
# system's bundle): npm in the build stages gets that bundle too, mounted read-only for the RUN steps
# only. Always the same build argument, so that whether the variable is set does not change the
# layers' cache keys (npm ci would run again, and fail where TLS is intercepted).
ca_args=()
ca_file="${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}"
if [ -r "$ca_file" ]; then
  ca_args=(--volume "$ca_file:/run/folio-build-ca.crt:ro" --build-arg NODE_EXTRA_CA_CERTS=/run/folio-build-ca.crt)
fi

build() { # tag, Dockerfile
  if have "$1"; then
    log "$1 exists: nothing to build"
    return
  fi
  log "building $1 from $2 (bases $node_image, $debian_image)"
  local started=$SECONDS
  # --isolation chroot: RUN steps need no OCI runtime (crun cannot set rlimits in some
  # containers and CI machines); --layers: a changed input rebuilds only the steps after it.
  buildah bud --quiet --isolation chroot --layers --pull=never \
    --build-arg "NODE_IMAGE=$node_image" --build-arg "DEBIAN_IMAGE=$debian_image" \
    --build-arg "TARGETARCH=$(dpkg --print-architecture)" "${ca_args[@]}" \
    --label "dev.folio.inputs=$hash" -f "$2" -t "$1" . >&2
  log "built $1 in $((SECONDS - started)) s"
}
build "$service" deploy/docker/Dockerfile
build "$sandbox" deploy/docker/sandbox.Dockerfile

echo "FOLIO_IMAGE=$service FOLIO_SANDBOX_IMAGE=$sandbox"
