#!/usr/bin/env bash
# Builds Folio's native program: the resident tesseract (native/tesseract-server.cc,
# docs/adr/0009-resident-tesseract.md) as native/build/folio-tesseract, against
# Debian's libtesseract-dev (scripts/ensure-deps.sh installs it with g++ and
# pkg-config). scripts/ensure-deps.sh runs this when the program is missing or
# older than its source; deploy/docker/Dockerfile runs it in a build stage.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-native/build/folio-tesseract}"
mkdir -p "$(dirname "$out")"
# shellcheck disable=SC2046 # pkg-config's flags are words
c++ -O2 -std=c++17 -Wall -Wextra -Werror -o "$out.tmp" native/tesseract-server.cc $(pkg-config --cflags --libs tesseract)
mv -f "$out.tmp" "$out"
