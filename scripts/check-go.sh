#!/usr/bin/env bash
# Fails early, with a clear message, when Go is missing or older than go.mod's `go` line.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
need=$(awk '$1 == "go" { print $2; exit }' go.mod)
if ! command -v "$GO" >/dev/null 2>&1; then
	echo "switchboard needs Go $need or later, and \`$GO\` is not on PATH: install it from https://go.dev/dl/" >&2
	exit 1
fi
# GOTOOLCHAIN=local: report the Go installed here, not a toolchain it would download.
have=$(GOTOOLCHAIN=local "$GO" env GOVERSION 2>/dev/null || true)
have=${have#go}
if [ -z "$have" ] || [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -n 1)" != "$need" ]; then
	if [ "$(GOTOOLCHAIN="go$need" "$GO" env GOVERSION 2>/dev/null || true)" = "go$need" ] &&
		[ "$("$GO" env GOTOOLCHAIN 2>/dev/null)" != local ]; then
		echo "==> Go ${have:-unknown} is older than go.mod's $need: using the go$need toolchain it downloaded" >&2
		exit 0
	fi
	echo "switchboard needs Go $need or later (go.mod), and this is Go ${have:-older than 1.21}." >&2
	echo "Install Go $need from https://go.dev/dl/ (or let Go fetch it: GOTOOLCHAIN=auto with network access)." >&2
	exit 1
fi
