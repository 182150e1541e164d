#!/usr/bin/env bash
# Production install on a clean clone, as an operator would do it:
#   git clone <this repo> && npm install --omit=dev && npm start, GET /health, SIGTERM to npm, the server exits.
# Usage: scripts/production-install-check.sh [repo-dir]   (default: this checkout's committed HEAD)
# Needs: git, Node.js 20 + npm, the npm registry. Nothing else (no Bun on PATH: it comes from npm).
set -euo pipefail
SRC="$(cd "${1:-$(dirname "$0")/..}" && pwd)"
WORK="$(mktemp -d /tmp/svc-prod-XXXXXX)"
PORT="${PORT:-18080}"
cleanup() {
  [[ -n "${NPM_PID:-}" ]] && kill -TERM "$NPM_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
step() { printf '\n== %s\n' "$*"; }

step "clone $SRC into $WORK/svc"
git clone --quiet "$SRC" "$WORK/svc"
cd "$WORK/svc"
git log --oneline -1

step "npm install --omit=dev (PATH without bun)"
export PATH="$(dirname "$(command -v node)"):/usr/bin:/bin"
if command -v bun >/dev/null; then echo "bun is on PATH at $(command -v bun); the check needs a PATH without it" >&2; exit 1; fi
npm install --omit=dev --no-audit --no-fund 2>&1 | tail -3
test -x node_modules/.bin/bun || { echo "node_modules/.bin/bun missing: bun is not a runtime dependency" >&2; exit 1; }
if [[ -d node_modules/cohere-ai || -d node_modules/autocannon || -d node_modules/dependency-cruiser ]]; then echo "dev dependencies were installed" >&2; exit 1; fi

step "npm start (port $PORT, data in $WORK/data)"
SVC_SERVER__HOST=127.0.0.1 SVC_SERVER__PORT="$PORT" SVC_STORAGE__PATH="$WORK/data/svc.db" npm start >"$WORK/server.log" 2>&1 &
NPM_PID=$!
for _ in $(seq 1 120); do
  if curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$NPM_PID" 2>/dev/null; then cat "$WORK/server.log"; echo "npm start exited" >&2; exit 1; fi
  sleep 0.5
done
echo "GET /health -> $(curl -fsS "http://127.0.0.1:$PORT/health")"
# readiness needs the runtime pieces a production install must bring: SQLite, the native vector index, the local embedding model
for _ in $(seq 1 120); do
  if curl -fsS "http://127.0.0.1:$PORT/ready" >/dev/null 2>&1; then break; fi
  sleep 0.5
done
echo "GET /ready -> $(curl -sS "http://127.0.0.1:$PORT/ready")"
curl -fsS "http://127.0.0.1:$PORT/ready" >/dev/null
node_modules/.bin/bun src/main.ts --version

step "SIGTERM to npm (pid $NPM_PID) stops the server"
kill -TERM "$NPM_PID"
for _ in $(seq 1 40); do
  if ! curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && ! kill -0 "$NPM_PID" 2>/dev/null; then break; fi
  sleep 0.25
done
if curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then echo "the server is still answering after SIGTERM to npm" >&2; exit 1; fi
wait "$NPM_PID" && status=0 || status=$?
NPM_PID=
grep -q '"msg":"shutting down","signal":"SIGTERM"' "$WORK/server.log" || { cat "$WORK/server.log"; echo "the server did not see SIGTERM" >&2; exit 1; }
echo "npm exited with $status; server log:"
grep -E '"msg":"(svc listening|data directory|shutting down)"' "$WORK/server.log"
step "OK: production install, start, /health and SIGTERM on a clean clone"
