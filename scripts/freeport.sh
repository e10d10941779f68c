#!/usr/bin/env bash
# Prints a TCP port on 127.0.0.1 that nothing listens on, outside the kernel's ephemeral
# range (ip_local_port_range), so that no outgoing connection holds it as its source port
# either: such a port looks free to a connect test, yet a server's bind on it fails
# ("Address already in use"), which once failed CI's throwaway PostgreSQL.
set -euo pipefail
lo=32768 hi=60999
if [ -r /proc/sys/net/ipv4/ip_local_port_range ]; then
	read -r lo hi </proc/sys/net/ipv4/ip_local_port_range
fi
for _ in $(seq 1 200); do
	if [ "$lo" -gt 11024 ]; then
		port=$((10000 + RANDOM % (lo - 10000))) # below the range
	elif [ "$hi" -lt 64511 ]; then
		port=$((hi + 1 + RANDOM % (65535 - hi))) # above it
	else
		port=$((20000 + RANDOM % 30000)) # the range is nearly all ports: take the chance
	fi
	if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		echo "$port"
		exit 0
	fi
done
echo "freeport: no free port found" >&2
exit 1
