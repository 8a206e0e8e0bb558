# syntax=docker/dockerfile:1
# Folio's sandbox image: what a sandbox pod runs (one office document → PNG
# pages, then exit). The operator starts it with FOLIO_BROKER_ADDRESS,
# FOLIO_BROKER_TOKEN and TRACEPARENT, as uid 65534, a read-only root file
# system and an in-memory /tmp, under gVisor. Build from the repository root:
#
#   docker build -f deploy/docker/sandbox.Dockerfile -t folio-sandbox:0.1.0 .
#
# It holds Debian's base, LibreOffice (Writer and Impress, no GUI), poppler's
# pdfinfo/pdftoppm, the declared font set, the Node binary alone (no npm, corepack or
# yarn), the bundled sandbox program and a prepared LibreOffice profile;
# nothing else is installed (no curl, no package caches). docs/sandbox.md.
# NODE_IMAGE and DEBIAN_IMAGE are the public images unless a build names
# others: `make image` (scripts/build-images.sh) passes equivalents built from
# Debian's packages and npm where the public ones cannot be pulled
# (scripts/build-base-image.sh).
ARG NODE_IMAGE=node:24-bookworm-slim
ARG DEBIAN_IMAGE=debian:bookworm-slim

# --- the program: cmd/sandbox bundled into one ES module, exactly as the runsc
# backend bundles it (internal/sandbox/assets.ts buildSandboxProgram), and a
# one-file program that prepares the LibreOffice profile (internal/sandbox/profile.ts).
FROM ${NODE_IMAGE} AS build
# A build machine behind a TLS-intercepting proxy hands npm its CA bundle
# (scripts/build-images.sh mounts it); unset otherwise. An ARG: not in the image.
ARG NODE_EXTRA_CA_CERTS
WORKDIR /src
COPY package.json package-lock.json ./
# The lockfile names bin/ (the checkout's `folio` launcher, a devDependency): npm wants it present.
COPY bin ./bin
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY proto ./proto
COPY cmd ./cmd
COPY internal ./internal
RUN mkdir -p /out \
 && npx --no-install tsx -e 'import("./internal/sandbox/assets.ts").then((m) => m.buildSandboxProgram("/out/sandbox.mjs"))' \
 && printf 'import { prepareProfile } from "./internal/sandbox/profile.ts";\nawait prepareProfile(process.argv[2]);\n' > prepare-profile.ts \
 && npx --no-install esbuild prepare-profile.ts --bundle --platform=node --format=esm --target=node24 --log-level=warning --outfile=/out/prepare-profile.mjs \
 && npx --no-install tsx -e 'import("./internal/sandbox/fonts.ts").then((m) => process.stdout.write(m.fontsConf()))' > /out/fonts.conf

FROM ${NODE_IMAGE} AS node
# One instruction, or buildah 1.28 (make image) leaves a working container behind for the stage.
WORKDIR /

# --- the image
FROM ${DEBIAN_IMAGE}
# The declared font set (internal/sandbox/fonts.ts) and its fontconfig configuration, the same
# as the runsc sandboxes' (docs/sandbox.md "Fonts"); the serif CJK collections are not in the set.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libreoffice-writer-nogui libreoffice-impress-nogui poppler-utils \
      fonts-dejavu-core fonts-liberation2 fonts-liberation fonts-crosextra-carlito fonts-crosextra-caladea \
      fonts-urw-base35 fonts-opensymbol fonts-noto-cjk fonts-symbola \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/* /var/cache/apt/*.bin /usr/share/doc/* /usr/share/man/* \
      /usr/share/fonts/opentype/noto/NotoSerifCJK-* /usr/share/fonts/type1/urw-base35
COPY --from=build /out/fonts.conf /etc/fonts/fonts.conf
RUN fc-cache
COPY --from=node /usr/local/bin/node /usr/local/bin/node
COPY --from=build /out/sandbox.mjs /opt/folio/sandbox.mjs
COPY --from=build /out/prepare-profile.mjs /tmp/prepare-profile.mjs
# A new profile makes LibreOffice exit 81 and ask for a restart, so it is made
# once here, with the security settings written in (docs/sandbox.md); each
# sandbox copies it into its own /tmp.
RUN HOME=/tmp /usr/local/bin/node /tmp/prepare-profile.mjs /opt/folio/profile \
 && rm -rf /tmp/* /tmp/.[!.]* \
 && chmod -R a+rX,go-w /opt/folio
ENV HOME=/tmp \
    TMPDIR=/tmp \
    FOLIO_PROFILE_DIR=/opt/folio/profile \
    NODE_ENV=production
USER 65534:65534
WORKDIR /tmp
ENTRYPOINT ["/usr/local/bin/node", "/opt/folio/sandbox.mjs"]
