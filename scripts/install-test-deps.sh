#!/usr/bin/env bash
# Installs the Debian packages whose servers the tests start themselves (on loopback, own data dirs).
set -euo pipefail
need=()
# mariadbd runs the dev clusters (src/ops); the plain `mariadb` client is used by the acceptance tests.
if ! command -v mariadbd >/dev/null 2>&1 && [ ! -x /usr/sbin/mariadbd ]; then
  need+=(mariadb-server mariadb-client)
elif ! command -v mariadb >/dev/null 2>&1; then
  need+=(mariadb-client)
fi
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then echo "install-test-deps: need root to apt-get install ${need[*]}" >&2; exit 1; fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  # The package starts a system server; the tests run their own, so stop it.
  (service mariadb stop || true) >/dev/null 2>&1
fi
