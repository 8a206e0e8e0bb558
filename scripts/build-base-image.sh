#!/usr/bin/env bash
# THE FALLBACK for machines that cannot pull the public base images
# (`debian:bookworm-slim`, `node:24-bookworm-slim`): builds equivalents from
# Debian's packages (mmdebstrap) and Node from the npm registry, and tags them
# in local container storage. scripts/build-images.sh uses it only when the
# public images are neither present nor pullable; docs/operations.md
# ("Without the public base images") says what differs.
#
#   scripts/build-base-image.sh   # prints DEBIAN_IMAGE=… and NODE_IMAGE=…
#
# - folio-base-debian:bookworm-slim-<hash>: `mmdebstrap --variant=minbase`
#   of bookworm (with bookworm-updates and bookworm-security, as the public
#   image), with the public slim image's dpkg exclusions (no man pages, docs
#   or translations, also for packages installed later).
# - folio-base-node:24-bookworm-slim-<hash>: that, plus the Node
#   binary of the version package-lock.json pins for the `node`
#   devDependency (npm package node-linux-<arch>, which holds the official
#   build's bin/node) and npm (npm package `npm`, its dependencies bundled)
#   in /usr/local, as the public image has them. No corepack or yarn, no `node`
#   user: nothing here uses them.
#
# <hash> is a hash of this script and the pinned versions: a rerun with the
# same inputs finds the tags and does nothing. The Debian packages are
# whatever the mirror serves when the tag is first built.
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in mmdebstrap buildah podman npm; do
  command -v "$tool" >/dev/null 2>&1 || { echo "build-base-image: $tool is missing (scripts/ensure-deps.sh test installs it)" >&2; exit 1; }
done
if [ "$(id -u)" != 0 ]; then
  echo "build-base-image: needs root (mmdebstrap and buildah's storage)" >&2
  exit 1
fi

# The Node the project runs on (package.json devDependency `node`, exact version from the lockfile).
node_version="$(sed -n '/"node_modules\/node": {/,/}/s/.*"version": "\([^"]*\)".*/\1/p' package-lock.json | head -n1)"
[ -n "$node_version" ] || { echo "build-base-image: no node_modules/node version in package-lock.json" >&2; exit 1; }
# npm as the public node:24 images ship it (major 11); pinned so the tag's hash says what is inside.
npm_version=11.21.2
case "$(dpkg --print-architecture)" in
  amd64) node_arch=x64 ;;
  arm64) node_arch=arm64 ;;
  *) echo "build-base-image: no Node build for $(dpkg --print-architecture)" >&2; exit 1 ;;
esac

hash="$( { cat "$0"; echo "$node_version $npm_version $node_arch"; } | sha256sum | cut -c1-12)"
debian_image="folio-base-debian:bookworm-slim-$hash"
node_image="folio-base-node:24-bookworm-slim-$hash"

if buildah inspect --type image "$debian_image" >/dev/null 2>&1 && buildah inspect --type image "$node_image" >/dev/null 2>&1; then
  echo "build-base-image: $debian_image and $node_image exist" >&2
  echo "DEBIAN_IMAGE=$debian_image"
  echo "NODE_IMAGE=$node_image"
  exit 0
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/folio-base.XXXXXX")"
ctr=""
cleanup() {
  [ -z "$ctr" ] || buildah rm "$ctr" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# The public image's defaults: a shell, the usual PATH.
path_env="PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

if ! buildah inspect --type image "$debian_image" >/dev/null 2>&1; then
  echo "build-base-image: building $debian_image with mmdebstrap" >&2
  # The public image's apt settings (debuerreotype): no package caches (/var/cache/apt/*.bin,
  # 76 MB after an apt-get update), compressed lists, no translations. With them in place
  # mmdebstrap no longer finds its own caches to clean: the last hook removes them.
  export DOCKER_CLEAN='DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";'
  # The exclusions of the public slim image (debuerreotype's slimify), kept in
  # /etc/dpkg/dpkg.cfg.d so later apt-get installs leave the same files out.
  # Merged /usr by directory symlinks, as debootstrap (and so the public
  # image) makes it: without the hook apt picks the usrmerge package, which
  # brings Perl (+60 MB).
  mmdebstrap --variant=minbase --quiet \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/groff/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/lintian/*' \
    --dpkgopt='path-exclude=/usr/share/linda/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    --customize-hook='printf "%s\n" "$DOCKER_CLEAN" > "$1/etc/apt/apt.conf.d/docker-clean"' \
    --customize-hook='echo "Acquire::GzipIndexes \"true\";" > "$1/etc/apt/apt.conf.d/docker-gzip-indexes"' \
    --customize-hook='echo "Acquire::Languages \"none\";" > "$1/etc/apt/apt.conf.d/docker-no-languages"' \
    --customize-hook='rm -f "$1"/var/cache/apt/*.bin' \
    bookworm "$work/rootfs.tar" >"$work/mmdebstrap.log" 2>&1 || { cat "$work/mmdebstrap.log" >&2; exit 1; }
  podman import --quiet --change 'CMD ["bash"]' --change "ENV $path_env" \
    --message "Debian bookworm minbase with slim exclusions (scripts/build-base-image.sh)" \
    "$work/rootfs.tar" "$debian_image" >/dev/null
  rm -f "$work/rootfs.tar"
fi

echo "build-base-image: building $node_image (node $node_version, npm $npm_version)" >&2
mkdir -p "$work/pack" "$work/usr/local/bin" "$work/usr/local/lib/node_modules"
(cd "$work/pack" && npm pack --silent "node-linux-$node_arch@$node_version" "npm@$npm_version" >/dev/null)
tar -xzf "$work/pack/node-linux-$node_arch-$node_version.tgz" -C "$work/pack" package/bin/node
mv "$work/pack/package/bin/node" "$work/usr/local/bin/node"
mkdir -p "$work/usr/local/lib/node_modules/npm"
tar -xzf "$work/pack/npm-$npm_version.tgz" -C "$work/usr/local/lib/node_modules/npm" --strip-components=1
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$work/usr/local/bin/npx"
chmod -R a+rX,go-w "$work/usr"
"$work/usr/local/bin/node" --version >/dev/null

ctr="$(buildah from --pull=never "$debian_image")"
buildah copy --quiet "$ctr" "$work/usr/local" /usr/local >/dev/null
buildah config --env "NODE_VERSION=$node_version" --cmd node \
  --label org.opencontainers.image.description="Node $node_version and npm $npm_version on $debian_image (scripts/build-base-image.sh)" "$ctr"
buildah commit --quiet --rm "$ctr" "$node_image" >/dev/null
ctr=""

echo "DEBIAN_IMAGE=$debian_image"
echo "NODE_IMAGE=$node_image"
