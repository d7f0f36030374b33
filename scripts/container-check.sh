#!/usr/bin/env bash
# Builds the Containerfile's image and smoke-tests it the way it is meant to run: non-root, read-only root file
# system. Not part of scripts/test.sh: the build is a release build from nothing (several minutes).
#
#   scripts/container-check.sh            (ENGINE=podman|docker to choose; default: the first that can run)
#
# Checks, each with --read-only and no network:
#   faultlab --version                    the workspace's version
#   id -u inside                          65532 (not root)
#   faultlab serve, one initialize line   a JSON-RPC result on stdout (the MCP server on stdio)
#   faultlab run ping.yaml                exit 0 against the built-in server, with a tmpfs /tmp
# Exit 0 when all pass, 1 when one fails, 3 when no container engine can build and run here (the reason printed).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
image="localhost/faultlab:check"

usable() {
  command -v "$1" >/dev/null 2>&1 && "$1" info >/dev/null 2>&1
}
engine="${ENGINE:-}"
if [[ -z "$engine" ]]; then
  for candidate in podman docker; do
    if usable "$candidate"; then
      engine="$candidate"
      break
    fi
  done
fi
if [[ -z "$engine" ]]; then
  echo "container-check: no container engine can run here (tried podman and docker: missing, or 'info' fails)"
  exit 3
fi
echo "container-check: $engine build -t $image -f Containerfile ."
"$engine" build -t "$image" -f Containerfile . || {
  echo "container-check: the build failed (a base image that cannot be pulled shows above)"
  exit 3
}

run() { "$engine" run --rm --read-only --network none "$@"; }
failed=0
check() {
  local what="$1"
  shift
  if "$@"; then echo "PASS  $what"; else echo "FAIL  $what"; failed=1; fi
}

want="faultlab $(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)"
check "--version is '$want'" test "$(run "$image" --version)" = "$want"
check "runs as 65532, not root" test "$(run --entrypoint id "$image" -u)" = 65532
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"check","version":"1"}}}'
check "serve answers initialize on stdio" sh -c "printf '%s\n' '$init' | $engine run --rm -i --read-only --network none $image serve 2>/dev/null | grep -q '\"result\"'"
check "run ping.yaml passes on a read-only root (tmpfs /tmp)" \
  run --tmpfs /tmp -v "$root/examples/scenarios:/scenarios:ro" "$image" run /scenarios/ping.yaml
exit "$failed"
