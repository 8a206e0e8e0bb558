#!/usr/bin/env bash
# Makes sure a Postgres and a Redis server are reachable on loopback for the
# test suite and prints `export DATABASE_URL=… REDIS_URL=…` for eval.
# Given DATABASE_URL/REDIS_URL are used as they are. Otherwise a server
# already answering on the standard port is used when it accepts us, else a
# private one is started under .folio/ on a spare port.
set -euo pipefail
cd "$(dirname "$0")/.."
state="$PWD/.folio/test-services"
mkdir -p "$state"

pg_ok() { psql "$1" -Atqc 'select 1' >/dev/null 2>&1; }

if [ -z "${DATABASE_URL:-}" ]; then
  url="postgres://postgres@127.0.0.1:5432/postgres"
  if pg_ok "$url"; then
    DATABASE_URL="$url"
  else
    port=55432
    url="postgres://postgres@127.0.0.1:$port/postgres"
    if ! pg_ok "$url"; then
      bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)"
      # Outside the project: as root the server runs as `postgres`, which
      # may not be able to enter the project's folder (e.g. under /root).
      pgstate="${TMPDIR:-/tmp}/folio-test-pg-$(id -u)"
      data="$pgstate/data"
      mkdir -p "$pgstate"
      owner="$(id -un)"
      run() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
      if [ "$(id -u)" = 0 ]; then owner=postgres; chown -R postgres "$pgstate"; fi
      if [ ! -f "$data/PG_VERSION" ]; then
        run "$bin/initdb" -D "$data" -U postgres -A trust >/dev/null
      fi
      run "$bin/pg_ctl" -D "$data" -l "$pgstate/pg.log" -o "-p $port -k $pgstate -c listen_addresses=127.0.0.1 -c fsync=off" -w start >/dev/null
      echo "test-services: started a private Postgres ($owner) on 127.0.0.1:$port" >&2
    fi
    DATABASE_URL="$url"
  fi
fi

if [ -z "${REDIS_URL:-}" ]; then
  if redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; then
    REDIS_URL="redis://127.0.0.1:6379"
  else
    port=56379
    if ! redis-cli -h 127.0.0.1 -p $port ping 2>/dev/null | grep -q PONG; then
      redis-server --bind 127.0.0.1 --port $port --daemonize yes --save "" --appendonly no --dir "$state" --logfile "$state/redis.log"
      for _ in $(seq 50); do redis-cli -h 127.0.0.1 -p $port ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
      echo "test-services: started a private Redis on 127.0.0.1:$port" >&2
    fi
    REDIS_URL="redis://127.0.0.1:$port"
  fi
fi

echo "export DATABASE_URL='$DATABASE_URL' REDIS_URL='$REDIS_URL'"
