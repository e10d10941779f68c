#!/usr/bin/env bash
# Writes the configuration table into README.md, between its config-table markers, from
# `switchboard config table` (the defaults as the code applies them). `make generate` runs
# it; TestREADMEConfigurationTable fails when the README differs.
set -euo pipefail
cd "$(dirname "$0")/.."
TABLE=$(${GO:-go} run ./cmd/switchboard config table) awk '
	/^<!-- config-table:begin/ { print; print ENVIRON["TABLE"]; skip = 1; next }
	/^<!-- config-table:end/ { skip = 0 }
	!skip
' README.md > README.md.tmp
if ! grep -q '^<!-- config-table:end' README.md.tmp; then
	rm -f README.md.tmp
	echo "README.md has no <!-- config-table:begin --> ... <!-- config-table:end --> markers" >&2
	exit 1
fi
mv README.md.tmp README.md
