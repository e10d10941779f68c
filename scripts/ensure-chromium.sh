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
"$(dirname "$0")/debian-install.sh" "the dashboard's browser tests (a minute or two)" chromium fonts-dejavu-core || [ $? -eq 2 ]
