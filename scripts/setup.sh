#!/usr/bin/env bash
# Set up pptarena on a fresh Debian/Ubuntu machine:
#   - system packages: LibreOffice Impress (renderer, GUI agent), metric-compatible fonts,
#     Xvfb + xdotool (GUI agent), Chromium (HTML report screenshot test), poppler-utils (pdftoppm:
#     the PPT-Eval baseline of the rendering benchmarks), bubblewrap + slirp4netns (sandboxes; the
#     command agent's network = "open"), python3-venv;
#   - a virtualenv in .venv with pptarena installed in editable mode with the test and SDK extras.
# Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
PACKAGES=(
  libreoffice-impress libreoffice-core python3-uno
  fonts-crosextra-carlito fonts-crosextra-caladea fonts-liberation fonts-liberation2 fonts-dejavu-core fonts-noto-cjk
  xvfb xdotool x11-utils
  bubblewrap slirp4netns iproute2 util-linux
  poppler-utils
  python3-venv
)
# Chromium only serves the HTML-report screenshot test; Debian ships it as a package, Ubuntu
# only as a snap (which does not work in containers), so it is installed when available.
OPTIONAL=(chromium)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "Installing system packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
for p in "${OPTIONAL[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$p" >/dev/null 2>&1 \
      || echo "note: optional package $p is not installable here; the report screenshot test will be skipped"
  fi
done

if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  for candidate in python3.13 python3.12 python3.11; do
    if command -v "$candidate" >/dev/null; then PYTHON="$candidate"; break; fi
  done
fi
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "pptarena needs Python >= 3.11; found $("$PYTHON" --version 2>&1). Install python3.11 (or newer) and rerun with PYTHON=python3.11." >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e ".[test,openai,anthropic]"
# PPT-Eval's reference code for the differential tests (tests/judges/rubric/test_ppteval_semantics.py); optional
.venv/bin/python -m pip install -q -e ".[ppteval-ref]" || echo "warning: the ppteval-ref extra did not install; its tests will skip"
# OSWorld's own checkers, for the differential test of the osworld judge only (never imported by
# pptarena): the wheel's files in a folder of their own, without its (heavy) dependencies.
if [ ! -f .venv/ref-osworld/desktop_env/evaluators/metrics/slides.py ]; then
  .venv/bin/python -m pip install -q --no-deps --target .venv/ref-osworld desktop-env==1.0.2 \
    || echo "warning: could not fetch desktop-env==1.0.2; the OSWorld differential test will be skipped" >&2
fi
echo "pptarena is set up in .venv ($(.venv/bin/arena --version))"
