#!/usr/bin/env bash
# Writes the configuration table into README.md, between its config-table markers, from
# `switchboard config table` (the defaults as the code applies them). `make generate` runs
# it; TestREADMEConfigurationTable fails when the README differs.
set -euo pipefail
cd "$(dirname "$0")/.."
# The table is computed first, on its own line: as a prefix of awk's command, a failed build
# would not stop the script (set -e does not see it) and would write an empty table.
TABLE=$(${GO:-go} run ./cmd/switchboard config table)
if [ -z "$TABLE" ]; then
	echo "switchboard config table printed nothing" >&2
	exit 1
fi
export TABLE
awk '
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
