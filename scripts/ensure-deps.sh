#!/usr/bin/env bash
# Installs what Folio needs and is missing: npm packages (always), and the
# system packages of a profile through apt-get when root (otherwise prints the
# one command to run). Profiles: run, test, eval.
set -euo pipefail
cd "$(dirname "$0")/.."
profile="${1:-run}"

# One install at a time: `make test` and `make run` started together on a
# fresh machine must not run apt-get or npm side by side.
if [ -z "${FOLIO_DEPS_LOCKED:-}" ] && command -v flock >/dev/null 2>&1; then
  # Beside node_modules, not in it: `npm ci` removes that folder.
  mkdir -p .folio
  export FOLIO_DEPS_LOCKED=1
  exec flock .folio/deps.lock "$PWD/scripts/ensure-deps.sh" "$@"
fi

# System packages per profile (Debian/Ubuntu names).
# `folio dev` converts office documents in runsc sandboxes, so run needs runsc and LibreOffice too.
# Tesseract languages: docs/ocr.md "Language" (frk: German Fraktur); osd: tesseract's page-orientation
# model, which Debian's tesseract-ocr depends on anyway (Folio's own turn check reads trials instead:
# docs/ocr.md "Turned and skewed pages").
# The fonts are the declared font set of office conversion (internal/sandbox/fonts.ts FONT_PACKAGES; a test checks the lists agree).
font_pkgs=(fonts-dejavu-core fonts-liberation2 fonts-liberation fonts-crosextra-carlito fonts-crosextra-caladea fonts-urw-base35 fonts-opensymbol fonts-noto-cjk fonts-symbola)
# g++ pkg-config libtesseract-dev: the resident tesseract program (native/, scripts/build-native.sh).
run_pkgs=(g++ pkg-config libtesseract-dev tesseract-ocr tesseract-ocr-eng tesseract-ocr-deu tesseract-ocr-fra tesseract-ocr-spa tesseract-ocr-ita tesseract-ocr-por tesseract-ocr-nld tesseract-ocr-frk tesseract-ocr-osd poppler-utils "${font_pkgs[@]}" runsc libreoffice-writer-nogui libreoffice-impress-nogui)
# chromium: the playground's browser tests drive Debian's build through playwright-core (test/playground.e2e.test.ts).
# bubblewrap: the parser jail (FOLIO_PARSER_JAIL=bwrap) and its tests (internal/platform/jail).
# buildah podman mmdebstrap: `make image` and test/images.podman.test.ts build the images without a
# daemon and run them under runsc (mmdebstrap builds the base images where the public ones cannot be pulled).
test_pkgs=(postgresql redis-server chromium unzip prometheus bubblewrap buildah podman mmdebstrap)
case "$profile" in
  run) want=("${run_pkgs[@]}") ;;
  test) want=("${run_pkgs[@]}" "${test_pkgs[@]}") ;;
  # pandoc: make eval-structure's reference markdown of office files.
  eval) want=("${run_pkgs[@]}" pandoc) ;;
  *) echo "ensure-deps: unknown profile '$profile'" >&2; exit 2 ;;
esac
command -v npm >/dev/null 2>&1 || want+=(nodejs npm)

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "ensure-deps: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    # prometheus (tests start their own): where systemd runs, Debian's package starts a
    # service on port 9090, folio dev's metrics port. Only one this script just installed.
    if [[ " ${missing[*]} " == *" prometheus "* ]] && command -v systemctl >/dev/null 2>&1; then
      systemctl disable --now prometheus >/dev/null 2>&1 || true
    fi
  else
    echo "ensure-deps: missing system packages. Run:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

# npm packages: install when absent or when the lockfile changed since the last install.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "ensure-deps: installing npm packages" >&2
  npm ci --no-audit --no-fund --loglevel=error
fi

# The resident tesseract program (docs/adr/0009-resident-tesseract.md): built when missing or older than its source.
if [ ! -x native/build/folio-tesseract ] || [ native/tesseract-server.cc -nt native/build/folio-tesseract ]; then
  echo "ensure-deps: building native/build/folio-tesseract" >&2
  scripts/build-native.sh
fi
