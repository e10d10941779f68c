#!/usr/bin/env bash
# debian-install.sh WHY PACKAGE...: installs Debian packages with apt-get, as root or through
# passwordless sudo, for the ensure-*.sh scripts. WHY says what they are for, in the messages.
# Without apt-get, or without root or sudo, it says what to install and exits 2, so that its
# caller can carry on without them (the tests that need them skip, and fail under CI); a
# failed apt-get fails it with apt-get's status.
set -euo pipefail
why=$1
shift
if ! command -v apt-get >/dev/null 2>&1; then
	echo "==> $* missing and apt-get is not available: install $* for $why" >&2
	exit 2
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		sudo="sudo -n"
	else
		echo "==> $* missing: install with \`apt-get install $*\` (as root) for $why" >&2
		exit 2
	fi
fi
echo "==> Installing Debian's $* for $why (apt-get)" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >&2
$sudo apt-get install -y -qq --no-install-recommends "$@" >&2
