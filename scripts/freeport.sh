#!/usr/bin/env bash
# Prints a TCP port on 127.0.0.1 that nothing listens on.
set -euo pipefail
for _ in $(seq 1 200); do
	port=$((20000 + RANDOM % 30000))
	if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		echo "$port"
		exit 0
	fi
done
echo "freeport: no free port found" >&2
exit 1
