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
# MyRocks (MariaDB's RocksDB engine, ha_rocksdb.so) for the wide-column engine on MariaDB (test/widecolumn/myrocks*).
if [ ! -e /usr/lib/mysql/plugin/ha_rocksdb.so ]; then need+=(mariadb-plugin-rocksdb); fi
# The cache tests (test/cache) run their own redis-server and memcached.
if ! command -v redis-server >/dev/null 2>&1; then need+=(redis-server); fi
if ! command -v memcached >/dev/null 2>&1; then need+=(memcached); fi
# The PostgreSQL backend tests run their own postgres (initdb into a temp dir, src/ops/postgres).
if [ ! -x /usr/lib/postgresql/15/bin/postgres ] && [ -z "${SHARDKIT_POSTGRES_BIN:-}" ]; then need+=(postgresql); fi
# The etcd topology store tests (test/topology/etcd-*) run their own etcd.
if ! command -v etcd >/dev/null 2>&1; then need+=(etcd-server); fi
# The dashboard tests (test/dashboard) drive a real headless Chromium through playwright-core.
if [ ! -x /usr/bin/chromium ] && [ -z "${SHARDKIT_CHROMIUM:-}" ]; then need+=(chromium); fi
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then echo "install-test-deps: need root to apt-get install ${need[*]}" >&2; exit 1; fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  # The packages start system servers; the tests run their own, so stop them.
  for svc in mariadb redis-server memcached postgresql etcd; do (service "$svc" stop || true) >/dev/null 2>&1; done
fi
