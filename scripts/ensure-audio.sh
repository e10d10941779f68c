#!/usr/bin/env bash
# Makes sure espeak-ng and sox are installed for the tests of recordings and voice calls,
# which make their audio (spoken WAV, MP3, Ogg) with them: Debian's `espeak-ng`, `sox` and
# `libsox-fmt-mp3` (sox's MP3 writer), installed with apt-get when missing. Otherwise it says
# what to install and exits 0, like the other ensure-*.sh: those tests then skip (and fail
# under CI).
set -euo pipefail
if command -v espeak-ng >/dev/null 2>&1 && command -v sox >/dev/null 2>&1 && sox -h 2>/dev/null | grep -q 'AUDIO FILE FORMATS:.* mp3'; then
	exit 0
fi
"$(dirname "$0")/debian-install.sh" "the recordings tests (audio made with espeak-ng and sox)" espeak-ng sox libsox-fmt-mp3 || [ $? -eq 2 ]
