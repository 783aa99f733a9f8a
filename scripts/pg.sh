#!/usr/bin/env bash
# scripts/pg.sh — start/stop a throwaway PostgreSQL 15 instance for tests.
#
# Usage:
#   scripts/pg.sh start [DIR]   Create a fresh instance and print exactly one line on stdout:
#                                 DATABASE_URL=postgres://postgres@127.0.0.1:<port>/gatehouse
#                               DIR defaults to a new mktemp dir under /tmp. If DIR is given it
#                               must not exist yet or be empty. All diagnostics go to stderr.
#   scripts/pg.sh stop [DIR]    Stop the instance (pg_ctl stop -m fast) and delete DIR.
#                               Without DIR: the instance of the most recent `start` by this user.
#                               Stopping a DIR that no longer exists is a no-op (exit 0).
#
#   Typical use:
#     eval "export $(scripts/pg.sh start)"   # exports DATABASE_URL
#     npm test
#     scripts/pg.sh stop
#
# Layout of DIR:
#   DIR/pg.env          state (PG_DIR, PG_DATA, PG_PORT, PG_BIN, PG_OS_USER, DATABASE_URL)
#   DIR/postgres.log    server log
#   DIR/data/           PGDATA; also the unix socket directory
#
# Server settings: listen on 127.0.0.1 only, on a free port chosen at start (retried if the
# port is taken in the meantime), trust auth, superuser "postgres", UTF8, locale C,
# fsync/synchronous_commit/full_page_writes off, max_connections=200. Durability is off: this
# is for tests only.
#
# Running as root: initdb/postgres refuse to run as root, so the server runs as an unprivileged
# system user (default "gatehouse-pg", created with useradd if missing). As a non-root user the
# server runs as that user directly. If the PostgreSQL 15 binaries are missing and we are root,
# postgresql-15 is installed with apt-get (without creating Debian's default cluster).
#
# Environment overrides:
#   PG_BIN              directory holding initdb/pg_ctl/postgres (default /usr/lib/postgresql/15/bin)
#   GATEHOUSE_PG_USER   OS user that runs the server when invoked as root (default gatehouse-pg)
#   GATEHOUSE_PG_LAST   pointer file to the last started DIR (default /tmp/gatehouse-pg.<uid>.last)
#   GATEHOUSE_PG_WAIT   seconds to wait for the server to accept connections (default 30)
#   GATEHOUSE_PG_SU_METHOD  runuser|setpriv|su: how root switches user (default: first available)

set -euo pipefail

# Keep stdout clean: everything goes to stderr, except the final DATABASE_URL line (fd 3).
exec 3>&1 1>&2

# Ignore libpq/server environment of the caller; we always pass explicit options.
unset PGHOST PGHOSTADDR PGPORT PGUSER PGDATABASE PGPASSWORD PGPASSFILE PGOPTIONS PGSERVICE \
  PGSERVICEFILE PGSSLMODE PGDATA PGCONNECT_TIMEOUT PGAPPNAME PGTZ PGCLIENTENCODING 2>/dev/null || true

readonly PG_MAJOR=15
readonly DB_NAME=gatehouse
readonly RUN_USER_DEFAULT=gatehouse-pg
PG_OS_USER_ROOT="${GATEHOUSE_PG_USER:-$RUN_USER_DEFAULT}"
LAST_FILE="${GATEHOUSE_PG_LAST:-/tmp/gatehouse-pg.$(id -u).last}"
WAIT_SECS="${GATEHOUSE_PG_WAIT:-30}"
START_ATTEMPTS=3
SAFE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

log() { printf 'pg.sh: %s\n' "$*" >&2; }
die() { printf 'pg.sh: error: %s\n' "$*" >&2; exit 1; }
usage() {
  sed -n '2,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
  exit 2
}

is_root() { [ "$(id -u)" -eq 0 ]; }

# --- PostgreSQL binaries ------------------------------------------------------------------

have_pg_bins() {
  local b
  for b in initdb pg_ctl postgres pg_isready psql; do
    [ -x "$PG_BIN/$b" ] || return 1
  done
}

install_pg() {
  is_root || die "PostgreSQL $PG_MAJOR binaries not found in $PG_BIN and we are not root; install postgresql-$PG_MAJOR or set PG_BIN"
  command -v apt-get >/dev/null || die "PostgreSQL $PG_MAJOR binaries not found in $PG_BIN and apt-get is unavailable"
  log "PostgreSQL $PG_MAJOR binaries not found in $PG_BIN; installing postgresql-$PG_MAJOR with apt-get"
  # Don't let the Debian package create and start its own 'main' cluster on port 5432.
  if [ ! -e /etc/postgresql-common/createcluster.conf ]; then
    mkdir -p /etc/postgresql-common
    printf 'create_main_cluster = false\n' >/etc/postgresql-common/createcluster.conf
  fi
  DEBIAN_FRONTEND=noninteractive apt-get update </dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "postgresql-$PG_MAJOR" </dev/null
}

resolve_pg_bin() {
  PG_BIN="${PG_BIN:-/usr/lib/postgresql/$PG_MAJOR/bin}"
  if ! have_pg_bins; then
    install_pg
    have_pg_bins || die "PostgreSQL $PG_MAJOR binaries still missing in $PG_BIN after install"
  fi
  local v
  v="$("$PG_BIN/postgres" --version)" || die "cannot run $PG_BIN/postgres --version"
  case "$v" in
    *" $PG_MAJOR."*) ;;
    *) die "expected PostgreSQL $PG_MAJOR in $PG_BIN, found: $v" ;;
  esac
  log "using $v ($PG_BIN)"
}

# --- Running commands as the server's OS user -----------------------------------------------

ensure_os_user() {
  local u="$1"
  id -u "$u" >/dev/null 2>&1 && return 0
  command -v useradd >/dev/null || die "useradd not found; cannot create system user $u"
  log "creating system user $u"
  # Serialize concurrent starts; a lost race ("already exists") is fine.
  (
    if command -v flock >/dev/null; then flock -w 30 9 || true; fi
    id -u "$u" >/dev/null 2>&1 && exit 0
    useradd --system --user-group --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin --comment "Gatehouse throwaway PostgreSQL" "$u" ||
      id -u "$u" >/dev/null 2>&1
  ) 9>/tmp/.gatehouse-pg-useradd.lock || die "could not create system user $u"
  id -u "$u" >/dev/null 2>&1 || die "system user $u does not exist after useradd"
}

# run_as USER CMD...: run CMD as USER (or directly if USER is the current user), from /,
# with a minimal environment.
# All file descriptors above 2 are closed first: otherwise the daemonized postgres would keep
# our stdout (fd 3) open and `$(scripts/pg.sh start)` would never return.
run_as() {
  local u="$1"; shift
  local envv=(env -i "PATH=$SAFE_PATH" LC_ALL=C LANG=C HOME=/ "USER=$u" "LOGNAME=$u")
  local via=()
  if [ "$u" = "$(id -un)" ]; then
    via=()
  elif ! is_root; then
    die "cannot run as $u: not root (run this script as root or as $u)"
  else
    local method="${GATEHOUSE_PG_SU_METHOD:-}"
    if [ -z "$method" ]; then
      if command -v runuser >/dev/null; then method=runuser
      elif command -v setpriv >/dev/null; then method=setpriv
      else method=su
      fi
    fi
    # shellcheck disable=SC2016 # su: $0/$@ are expanded by the inner sh, on purpose
    case "$method" in
      runuser) via=(runuser -u "$u" --) ;;
      setpriv) via=(setpriv --reuid="$u" --regid="$u" --init-groups --) ;;
      su) via=(su -s /bin/sh -c 'exec "$0" "$@"' -- "$u") ;;
      *) die "unknown GATEHOUSE_PG_SU_METHOD: $method (runuser|setpriv|su)" ;;
    esac
  fi
  (
    cd /
    close_extra_fds
    exec "${via[@]}" "${envv[@]}" "$@"
  )
}

close_extra_fds() {
  local fd
  for fd in /proc/"$BASHPID"/fd/*; do
    fd="${fd##*/}"
    case "$fd" in ''|*[!0-9]*) continue ;; esac
    if [ "$fd" -gt 2 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
  done
}

# Make every ancestor of $1 traversable by user $2 (only needed/possible as root).
make_traversable() {
  local dir="$1" u="$2" p
  p="$(dirname "$dir")"
  while :; do
    if ! run_as "$u" test -x "$p" 2>/dev/null; then
      log "making $p traversable (chmod o+x) so $u can reach $dir"
      chmod o+x "$p"
    fi
    [ "$p" = / ] && break
    p="$(dirname "$p")"
  done
}

# --- Helpers ----------------------------------------------------------------------------------

free_port() {
  local p=""
  if command -v node >/dev/null; then
    p="$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{process.stdout.write(String(s.address().port));s.close()})' 2>/dev/null || true)"
  fi
  if [ -z "$p" ] && command -v python3 >/dev/null; then
    p="$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1]);s.close()' 2>/dev/null || true)"
  fi
  if [ -z "$p" ]; then
    # Last resort: random high port that nothing answers on.
    for _ in $(seq 1 50); do
      p=$(( 20000 + RANDOM % 30000 ))
      if ! (exec 9<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then break; fi
      p=""
    done
  fi
  case "$p" in ''|*[!0-9]*) die "could not find a free TCP port" ;; esac
  printf '%s\n' "$p"
}

abspath() {
  case "$1" in
    /*) printf '%s\n' "$1" ;;
    *) printf '%s/%s\n' "$(pwd -P)" "$1" ;;
  esac
}

# Read KEY from a KEY=value file without sourcing it.
env_get() {
  local file="$1" key="$2" line
  [ -f "$file" ] || return 1
  while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in "$key="*) printf '%s\n' "${line#"$key="}"; return 0 ;; esac
  done <"$file"
  return 1
}

write_last_pointer() {
  local dir="$1" tmp
  tmp="$(mktemp "${LAST_FILE}.XXXXXX" 2>/dev/null)" || { log "warning: cannot write $LAST_FILE"; return 0; }
  printf '%s\n' "$dir" >"$tmp"
  mv -f "$tmp" "$LAST_FILE" 2>/dev/null || { rm -f "$tmp"; log "warning: cannot write $LAST_FILE"; }
}

read_last_pointer() {
  [ -f "$LAST_FILE" ] && [ ! -L "$LAST_FILE" ] || return 1
  [ "$(stat -c %u "$LAST_FILE")" = "$(id -u)" ] || die "$LAST_FILE is not owned by us; refusing to use it"
  local d
  IFS= read -r d <"$LAST_FILE" || true
  [ -n "$d" ] || return 1
  printf '%s\n' "$d"
}

# --- start --------------------------------------------------------------------------------------

START_DIR=""
START_CREATED_DIR=0
START_DONE=0
START_RUN_USER=""

start_cleanup() {
  local rc=$?
  [ "$START_DONE" = 1 ] && return 0
  [ -n "$START_DIR" ] || exit "$rc"
  log "start failed; cleaning up $START_DIR"
  if [ -f "$START_DIR/data/postmaster.pid" ] && [ -n "$START_RUN_USER" ]; then
    run_as "$START_RUN_USER" "$PG_BIN/pg_ctl" -D "$START_DIR/data" -m immediate -w -t 10 stop >/dev/null 2>&1 || true
  fi
  if [ "$START_CREATED_DIR" = 1 ]; then
    rm -rf -- "$START_DIR"
  else
    rm -rf -- "$START_DIR/data" "$START_DIR/pg.env" "$START_DIR/postgres.log"
  fi
  exit "$rc"
}

cmd_start() {
  [ $# -le 1 ] || usage
  resolve_pg_bin

  if is_root; then
    START_RUN_USER="$PG_OS_USER_ROOT"
    ensure_os_user "$START_RUN_USER"
  else
    START_RUN_USER="$(id -un)"
  fi

  trap start_cleanup EXIT
  local dir
  if [ $# -eq 1 ] && [ -n "$1" ]; then
    dir="$(abspath "$1")"
    if [ -e "$dir" ]; then
      [ -d "$dir" ] || die "$dir exists and is not a directory"
      [ -z "$(ls -A "$dir")" ] || die "$dir is not empty; refusing to reuse it (stop it or pick a new DIR)"
      START_DIR="$dir"
    else
      mkdir -p -- "$dir"
      START_DIR="$dir"
      START_CREATED_DIR=1
    fi
  else
    dir="$(mktemp -d /tmp/gatehouse-pg.XXXXXX)"
    START_DIR="$dir"
    START_CREATED_DIR=1
  fi
  dir="$(cd "$dir" && pwd -P)"
  START_DIR="$dir"
  case "$dir" in *"'"*|*'"'*|*$'\n'*) die "DIR must not contain quotes or newlines: $dir" ;; esac

  local data="$dir/data" logf="$dir/postgres.log"
  # Unix socket path limit (sun_path is 108 bytes): "$data/.s.PGSQL.65535"
  [ $(( ${#data} + 16 )) -lt 108 ] || die "DIR path too long for a unix socket directory ($data); use a shorter DIR"

  chmod 0755 "$dir"
  mkdir -m 0700 "$data"
  : >"$logf"
  if is_root; then
    chown "$START_RUN_USER:" "$data" "$logf"
    make_traversable "$dir" "$START_RUN_USER"
  fi

  log "initdb in $data (as $START_RUN_USER)"
  run_as "$START_RUN_USER" "$PG_BIN/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C \
    >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
  rm -f "$dir/initdb.log"

  cat >>"$data/postgresql.conf" <<EOF

# --- added by scripts/pg.sh (throwaway test instance; durability OFF) ---
listen_addresses = '127.0.0.1'
unix_socket_directories = '$data'
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
EOF

  local port="" attempt started=0 log_off=0
  for attempt in $(seq 1 "$START_ATTEMPTS"); do
    port="$(free_port)"
    log "starting postgres on 127.0.0.1:$port (attempt $attempt/$START_ATTEMPTS), log: $logf"
    log_off="$(stat -c %s "$logf")"
    if run_as "$START_RUN_USER" "$PG_BIN/pg_ctl" -D "$data" -l "$logf" -o "-p $port" -w -t "$WAIT_SECS" start >/dev/null; then
      started=1
      break
    fi
    log "pg_ctl start failed on port $port; last log lines:"
    tail -c "+$((log_off + 1))" "$logf" | tail -n 15 >&2 || true
    # Make sure nothing half-started lingers before retrying.
    run_as "$START_RUN_USER" "$PG_BIN/pg_ctl" -D "$data" -m immediate -w -t 10 stop >/dev/null 2>&1 || true
  done
  [ "$started" = 1 ] || die "could not start postgres after $START_ATTEMPTS attempts (server log above)"

  local waited=0
  until "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -t 1; do
    waited=$((waited + 1))
    [ "$waited" -lt "$WAIT_SECS" ] || { tail -n 30 "$logf" >&2 || true; die "postgres not accepting connections on port $port after ${WAIT_SECS}s"; }
    sleep 1
  done

  "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres -d postgres \
    -c "CREATE DATABASE $DB_NAME" </dev/null || die "could not create database $DB_NAME"

  local url="postgres://postgres@127.0.0.1:$port/$DB_NAME"
  {
    printf 'PG_DIR=%s\n' "$dir"
    printf 'PG_DATA=%s\n' "$data"
    printf 'PG_PORT=%s\n' "$port"
    printf 'PG_BIN=%s\n' "$PG_BIN"
    printf 'PG_OS_USER=%s\n' "$START_RUN_USER"
    printf 'DATABASE_URL=%s\n' "$url"
  } >"$dir/pg.env"
  write_last_pointer "$dir"

  START_DONE=1
  trap - EXIT
  log "ready: $url (dir $dir; stop with: scripts/pg.sh stop $dir)"
  printf 'DATABASE_URL=%s\n' "$url" >&3
}

# --- stop ---------------------------------------------------------------------------------------

cmd_stop() {
  [ $# -le 1 ] || usage
  local dir from_pointer=0
  if [ $# -eq 1 ] && [ -n "$1" ]; then
    dir="$(abspath "$1")"
  else
    dir="$(read_last_pointer)" || die "no DIR given and no recorded instance in $LAST_FILE"
    from_pointer=1
  fi

  if [ ! -e "$dir" ]; then
    log "$dir does not exist; nothing to stop"
    if [ "$from_pointer" = 1 ]; then rm -f -- "$LAST_FILE"; fi
    return 0
  fi
  [ -d "$dir" ] || die "$dir is not a directory"
  dir="$(cd "$dir" && pwd -P)"
  case "$dir" in /|/tmp|/root|/home|/usr|/etc|/var) die "refusing to remove $dir" ;; esac

  local data="$dir/data"
  if [ ! -f "$dir/pg.env" ] && [ ! -f "$data/PG_VERSION" ]; then
    if [ -z "$(ls -A "$dir")" ]; then
      log "$dir is empty (start never completed?); removing it"
      rmdir -- "$dir"
      return 0
    fi
    die "$dir does not look like a scripts/pg.sh instance (no pg.env or data/PG_VERSION); refusing to delete it"
  fi

  PG_BIN="$(env_get "$dir/pg.env" PG_BIN || true)"
  PG_BIN="${PG_BIN:-/usr/lib/postgresql/$PG_MAJOR/bin}"

  if [ -f "$data/postmaster.pid" ]; then
    [ -x "$PG_BIN/pg_ctl" ] || die "pg_ctl not found in $PG_BIN"
    local owner
    owner="$(stat -c %U "$data")"
    if ! is_root && [ "$owner" != "$(id -un)" ]; then
      die "$data is owned by $owner; run stop as root or as $owner"
    fi
    log "stopping postgres in $data (as $owner)"
    if ! run_as "$owner" "$PG_BIN/pg_ctl" -D "$data" -m fast -w -t 30 stop >/dev/null; then
      log "fast shutdown failed; trying immediate"
      if ! run_as "$owner" "$PG_BIN/pg_ctl" -D "$data" -m immediate -w -t 15 stop >/dev/null; then
        local pid
        pid="$(head -n 1 "$data/postmaster.pid" 2>/dev/null || true)"
        case "$pid" in ''|*[!0-9]*) ;; *)
          if [ "$(cat "/proc/$pid/comm" 2>/dev/null || true)" = postgres ]; then
            log "killing postmaster $pid"
            kill -KILL "$pid" 2>/dev/null || true
            sleep 1
          fi ;;
        esac
      fi
    fi
  else
    log "postgres in $data is not running"
  fi

  rm -rf -- "$dir"
  log "removed $dir"
  if [ -f "$LAST_FILE" ] && [ "$(read_last_pointer 2>/dev/null || true)" = "$dir" ]; then
    rm -f -- "$LAST_FILE"
  fi
}

# --- main ---------------------------------------------------------------------------------------

[ $# -ge 1 ] || usage
cmd="$1"; shift
case "$cmd" in
  start) cmd_start "$@" ;;
  stop) cmd_stop "$@" ;;
  -h|--help|help) usage ;;
  *) log "unknown command: $cmd"; usage ;;
esac
