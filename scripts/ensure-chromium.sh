#!/bin/sh
# The browser tests drive Debian's chromium (no browser can be downloaded here): install it
# where it is missing. Needs root, as CI and the developers' machines run.
set -e
command -v "${CHROMIUM_PATH:-/usr/bin/chromium}" >/dev/null 2>&1 && exit 0
echo "installing Debian's chromium for the browser tests…"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium >/dev/null
command -v chromium
