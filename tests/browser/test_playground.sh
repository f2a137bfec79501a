#!/usr/bin/env bash
# The playground in a real browser (playground.cjs: Debian's chromium driven by npm's puppeteer-core):
# two windows of real training show "optimizer steps: 2" and a falling loss, a second window watches
# and is refused a second run, Stop ends a run, a configuration past the cap shows the OOM panel with
# the advised micro-batch, malformed requests get 400; then as a classroom (classroom.cjs): two
# students' workspaces, the queue, the teacher's page, pause and stop. Screenshots go to SHOTS.
#   test_playground.sh BUILD_DIR SHOTS_DIR
# Exits 77 (skipped, with the reason) without chromium, node and npm, puppeteer-core (installed from
# npm's registry into BUILD_DIR/browser-node on first use) or the FashionMNIST files.
set -uo pipefail
build=$1 shots=$2
here=$(cd "$(dirname "$0")" && pwd)
skip() { echo "SKIPPED: test_playground_browser: $1"; exit 77; }
chromium=$(command -v chromium || command -v chromium-browser || true)
[[ -n "$chromium" ]] || skip "no chromium (Debian's package chromium; tests/run_tests.sh installs it)"
command -v node >/dev/null && command -v npm >/dev/null || skip "no node and npm (Debian's nodejs and npm; tests/run_tests.sh installs them)"
modules="$(cd "$build" && pwd)/browser-node"
if [[ ! -f "$modules/node_modules/puppeteer-core/package.json" ]] || ! cmp -s "$here/package-lock.json" "$modules/package-lock.json"; then
  mkdir -p "$modules"
  cp "$here/package.json" "$here/package-lock.json" "$modules/"
  (cd "$modules" && timeout 300 npm ci --no-audit --no-fund --loglevel=error >npm.log 2>&1) ||
    skip "npm could not install puppeteer-core from the registry: $(tail -1 "$modules/npm.log")"
fi
mkdir -p "$shots"
work=$(mktemp -d)
server=
cleanup() { [[ -n "$server" ]] && kill "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

# Starts the playground with the flags given; sets url (and teacher, for a classroom).
start() {
  "$build/examples/playground" --port 0 "$@" >"$work/server.log" 2>&1 &
  server=$!
  url=
  for _ in $(seq 100); do
    url=$(grep -o 'http://[^ ]*' "$work/server.log" | head -1)
    [[ -n "$url" ]] && break
    kill -0 "$server" 2>/dev/null || break
    sleep 0.2
  done
  if [[ -z "$url" ]]; then
    grep -q FashionMNIST "$work/server.log" && skip "the playground needs the FashionMNIST files: $(tail -1 "$work/server.log")"
    cat "$work/server.log"
    echo "FAILED: the playground did not start"
    exit 1
  fi
  sleep 0.2
  teacher=$(grep -o 'http://[^ ]*/teacher?token=[0-9a-f]*' "$work/server.log" | head -1)
  echo "playground${*:+ $*} at $url"
}
# SIGTERM ends the server cleanly: its runs stopped, their processes reaped, its threads joined.
finish() {
  kill -TERM "$server"
  if ! timeout 20 tail --pid="$server" -f /dev/null; then echo "FAILED: the server did not end within 20 s of SIGTERM"; status=1; fi
  wait "$server"; code=$?
  server=
  [[ $code -eq 0 ]] || { echo "FAILED: the server exited with $code after SIGTERM"; cat "$work/server.log"; status=1; }
}
status=0
start
PUPPETEER_DIR="$modules" CHROMIUM="$chromium" timeout 240 node "$here/playground.cjs" "$url" "$shots" || status=1
finish
start --classroom --max-runs 1
PUPPETEER_DIR="$modules" CHROMIUM="$chromium" timeout 150 node "$here/classroom.cjs" "$url" "$teacher" "$shots" || status=1
finish
exit $status
