#!/bin/sh
# The PostgreSQL tests start throwaway clusters with Debian's binaries
# (/usr/lib/postgresql/<version>/bin, see test/support/postgres.ts): install the package where
# it is missing. Needs root, as CI and the developers' machines run.
set -e
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && exit 0
echo "installing Debian's postgresql for the PostgreSQL tests…"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq postgresql >/dev/null
ls /usr/lib/postgresql/*/bin/initdb
