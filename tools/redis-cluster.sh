#!/usr/bin/env bash
# A local Redis Cluster of three masters (no replicas) for tests, CI and trying zlink against a cluster.
#
#   tools/redis-cluster.sh start    start it, or reuse it when it already runs healthy (idempotent)
#   tools/redis-cluster.sh stop     shut our nodes down and remove their directories
#   tools/redis-cluster.sh status   print each node's cluster state
#   tools/redis-cluster.sh nodes    print the value for ZLINK_REDIS_CLUSTER (host:port,host:port,...)
#
# Ports: ZLINK_CLUSTER_PORTS (default "7101 7102 7103"), on 127.0.0.1. Each node keeps its nodes.conf and log in
# ZLINK_CLUSTER_DIR/<port> (default /tmp/zlink-redis-cluster); nothing is persisted (--save "" --appendonly no).
# `start` reuses a running cluster only when every node is ours (its dir is ours), answers, and reports
# cluster_state:ok with all slots and exactly our nodes; otherwise it shuts our nodes down, removes their
# directories (a stale nodes.conf would make a node rejoin a cluster that no longer exists) and creates a fresh
# cluster. A port held by anything that is not ours is an error, never touched. Concurrent starts (parallel test
# workers) are serialised with flock.
set -euo pipefail

read -r -a PORTS <<<"${ZLINK_CLUSTER_PORTS:-7101 7102 7103}"
HOST=127.0.0.1
BASE="${ZLINK_CLUSTER_DIR:-/tmp/zlink-redis-cluster}"

say() { echo "[redis-cluster] $*" >&2; }
die() {
  say "error: $*"
  exit 1
}
cli() { redis-cli -h "$HOST" -p "$1" "${@:2}" 2>/dev/null; }
answers() { [ "$(cli "$1" ping)" = PONG ]; }
ours() { [ "$(cli "$1" config get dir | sed -n 2p)" = "$BASE/$1" ]; }
info_field() { cli "$1" cluster info | tr -d '\r' | sed -n "s/^$2://p"; }

nodes_value() {
  local out=() p
  for p in "${PORTS[@]}"; do out+=("$HOST:$p"); done
  (IFS=,; echo "${out[*]}")
}

# Every node ours, ok, all slots served, and it knows exactly the nodes of our ports.
healthy() {
  local p
  for p in "${PORTS[@]}"; do
    answers "$p" && ours "$p" || return 1
    [ "$(info_field "$p" cluster_state)" = ok ] || return 1
    [ "$(info_field "$p" cluster_slots_ok)" = 16384 ] || return 1
    [ "$(info_field "$p" cluster_known_nodes)" = "${#PORTS[@]}" ] || return 1
    [ "$(info_field "$p" cluster_size)" = "${#PORTS[@]}" ] || return 1
  done
}

stop_nodes() {
  local p
  # Refuse before touching anything: a foreign Redis on one port must not cost us the others.
  for p in "${PORTS[@]}"; do
    ! answers "$p" || ours "$p" || die "$HOST:$p is a Redis that is not ours (its dir is not $BASE/$p); set ZLINK_CLUSTER_PORTS to free ports"
  done
  for p in "${PORTS[@]}"; do
    if answers "$p"; then
      cli "$p" shutdown nosave >/dev/null || true
      for _ in $(seq 1 50); do answers "$p" || break; sleep 0.1; done
      ! answers "$p" || die "node 127.0.0.1:$p did not shut down"
    fi
    rm -rf "${BASE:?}/$p"
  done
}

start() {
  command -v redis-server >/dev/null && command -v redis-cli >/dev/null || die "redis-server and redis-cli are needed (apt-get install redis-server)"
  mkdir -p "$BASE"
  exec 9>"$BASE.lock"
  flock -w 180 9 || die "could not take $BASE.lock within 180 s"
  if healthy; then
    say "reusing the running cluster $(nodes_value)"
    return
  fi
  say "creating a cluster on $(nodes_value) (dirs under $BASE)"
  stop_nodes
  local p
  for p in "${PORTS[@]}"; do
    mkdir -p "$BASE/$p"
    redis-server --port "$p" --bind "$HOST" --dir "$BASE/$p" --daemonize yes \
      --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
      --save "" --appendonly no --logfile "$BASE/$p/redis.log" --pidfile "$BASE/$p/redis.pid" >/dev/null 9>&- ||
      die "redis-server on port $p failed to start (see $BASE/$p/redis.log)"
  done
  for p in "${PORTS[@]}"; do
    for _ in $(seq 1 100); do answers "$p" && break; sleep 0.1; done
    answers "$p" || die "node 127.0.0.1:$p does not answer (port in use? see $BASE/$p/redis.log)"
  done
  local addresses=() 
  for p in "${PORTS[@]}"; do addresses+=("$HOST:$p"); done
  redis-cli --cluster create "${addresses[@]}" --cluster-replicas 0 --cluster-yes >"$BASE/create.log" 2>&1 ||
    die "redis-cli --cluster create failed: $(tail -5 "$BASE/create.log")"
  for _ in $(seq 1 300); do healthy && break; sleep 0.1; done
  healthy || die "the cluster did not reach cluster_state:ok within 30 s: $(for p in "${PORTS[@]}"; do echo -n "$p=$(info_field "$p" cluster_state) "; done)"
  say "cluster ready: $(nodes_value)"
}

status() {
  local p
  for p in "${PORTS[@]}"; do
    if answers "$p"; then
      echo "$HOST:$p cluster_state=$(info_field "$p" cluster_state) slots_ok=$(info_field "$p" cluster_slots_ok) known_nodes=$(info_field "$p" cluster_known_nodes) ours=$(ours "$p" && echo yes || echo no)"
    else
      echo "$HOST:$p down"
    fi
  done
  healthy
}

case "${1:-}" in
  start) start ;;
  stop)
    mkdir -p "$BASE"
    exec 9>"$BASE.lock"
    flock -w 180 9 || die "could not take $BASE.lock"
    stop_nodes
    rm -f "$BASE/create.log"
    say "stopped" ;;
  status) status ;;
  nodes) nodes_value ;;
  *) die "usage: $0 start|stop|status|nodes" ;;
esac
