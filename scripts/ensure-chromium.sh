#!/usr/bin/env bash
# Makes sure headless Chromium is installed for the dashboard's browser tests (chromedp):
# Debian's `chromium` package, installed with apt-get when missing. Without root or apt,
# it says what to install and exits 0: the browser tests then skip (and fail under CI).
set -euo pipefail
for name in chromium chromium-browser google-chrome; do
	if command -v "$name" >/dev/null 2>&1; then
		exit 0
	fi
done
if ! command -v apt-get >/dev/null 2>&1; then
	echo "==> chromium is missing and apt-get is not available: install Chromium for the browser tests" >&2
	exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		sudo="sudo -n"
	else
		echo "==> chromium is missing: install it with \`apt-get install chromium\` (as root) for the browser tests" >&2
		exit 0
	fi
fi
echo "==> Installing Debian's chromium for the dashboard's browser tests (apt-get; a minute or two)" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >&2
$sudo apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
