#!/usr/bin/env bash
# Installs what the project needs beyond Python packages: redis-server (the cache tests and the
# Redis cache benchmark start their own private instance on a free loopback port).
set -euo pipefail
if command -v redis-server >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing redis-server (apt)..." >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq redis-server >/dev/null
  # The package starts a system instance on :6379; the project never uses it.
  exit 0
fi
echo "redis-server is not installed and cannot be installed automatically (not root or no apt)." >&2
echo "Install it (e.g. 'sudo apt-get install redis-server' or 'brew install redis') and rerun." >&2
exit 1
