#!/usr/bin/env bash
# Makes sure axe-core (the accessibility checker the webchat browser tests inject into the
# page) is in the cache directory the tests read: the npm registry's axe-core package, at the
# pinned version, installed with npm (which checks the tarball's integrity) when missing.
# Prints nothing when it is there already. Without npm it installs Debian's npm when it can
# (root or sudo), else says what to do and exits 0: the accessibility checks then skip (and
# fail under CI).
#
# The tests look for axe.min.js in $AXE_CORE_DIR, default
# ${XDG_CACHE_HOME:-$HOME/.cache}/switchboard/axe-core-$VERSION (browsertest.AxeCore).
set -euo pipefail
VERSION=4.11.0
dir=${AXE_CORE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/switchboard/axe-core-$VERSION}
if [ -s "$dir/axe.min.js" ]; then
	exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
	"$(dirname "$0")/debian-install.sh" "fetching axe-core for the browser tests (a minute or two)" npm || { [ $? -eq 2 ] && exit 0; }
fi
echo "==> Fetching axe-core $VERSION from the npm registry into $dir (the accessibility checks of the browser tests)" >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
npm install --no-save --no-audit --no-fund --ignore-scripts --loglevel=error --prefix "$tmp" "axe-core@$VERSION" >&2
mkdir -p "$dir"
cp "$tmp/node_modules/axe-core/axe.min.js" "$tmp/node_modules/axe-core/LICENSE" "$dir/"
