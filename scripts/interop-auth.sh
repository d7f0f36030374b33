#!/usr/bin/env bash
# The official TypeScript and Python SDKs' OAuth clients (headless: interop/ts/oauth_client.mjs, an
# OAuthClientProvider on StreamableHTTPClientTransport; interop/python/oauth_client.py, the SDK's OAuthClientProvider
# on its httpx2 client) against `faultlab serve --transport http --auth`, healthy and under each auth fault.
# Each SDK's healthy row must complete the flow (registration, PKCE, code exchange, four calls); every row must match the
# committed docs/auth-compatibility.json on its stable fields (outcome, calls that succeeded, the error's class).
#
#   scripts/interop-auth.sh                  # run and compare; fail on a change (Python: its healthy row only)
#   scripts/interop-auth.sh --python-faults  # the same with the Python SDK under every fault too (about 2 min)
#   scripts/interop-auth.sh --record         # run everything and rewrite docs/auth-compatibility.json
#
# About 25 s (15 rows, four at a time, each bounded by 8 s; refresh_slow holds a refresh 3 s). The pinned SDK installs
# into .cache/node (scripts/lib/interop-ts.sh), the pinned Python SDK into .cache/py-interop (scripts/lib/py-interop.sh). The last line printed is `N passed, M failed`.
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

record=0
python_faults=0
case "${1:-}" in
    "") ;;
    --record) record=1 python_faults=1 ;;
    --python-faults) python_faults=1 ;;
    *) die "usage: scripts/interop-auth.sh [--record | --python-faults]" ;;
esac

# shellcheck source=scripts/lib/interop-ts.sh
source "$ROOT/scripts/lib/interop-ts.sh"
install_interop_ts
# shellcheck source=scripts/lib/py-interop.sh
source "$ROOT/scripts/lib/py-interop.sh"
install_py_interop
resolve_faultlab_bin
cp interop/ts/oauth_client.mjs "$INTEROP_TS_DIR/oauth_client.mjs"

faults=(
    ""
    token_expired
    token_revoked
    refresh_invalid_grant
    refresh_unavailable
    '{"type": "refresh_slow", "delay_ms": 3000}'
    refresh_rotation
    insufficient_scope
    metadata_missing
    issuer_mismatch
    resource_mismatch
    registration_refused
    access_denied
    clock_skew
)

work=".cache/interop-auth"
mkdir -p "$work"
raw="$work/raw.jsonl"
rm -f "$work"/row-*.jsonl "$work"/row-*.failed "$work/python.log"
# Four rows at a time (each a Node client and a faultlab server, mostly waiting); each writes its own file, joined in
# the list's order.
run_row() {
    local index="$1" fault="$2"
    local fault_args=()
    [[ -z "$fault" ]] || fault_args=(--fault "$fault")
    # Each client bounds its own run; the outer bound is for a runtime that does not start.
    (cd "$INTEROP_TS_DIR" && timeout 20 "$INTEROP_TS_NODE" oauth_client.mjs --bin "$FAULTLAB_BIN" --calls 4 \
        --deadline-ms 8000 "${fault_args[@]}") >"$work/row-$index.jsonl" || echo typescript >>"$work/row-$index.failed"
    # Python starts slowly (about 2 s of imports, far more on a loaded machine): its healthy row always runs, its
    # fault rows with --record or --python-faults.
    if (( index == 0 || python_faults )); then
        timeout 60 "$PY_INTEROP_VENV/bin/python" interop/python/oauth_client.py --bin "$FAULTLAB_BIN" --calls 4 \
            --deadline 15 "${fault_args[@]}" >>"$work/row-$index.jsonl" 2>>"$work/python.log" \
            || echo python >>"$work/row-$index.failed"
    fi
}
for index in "${!faults[@]}"; do
    while (( $(jobs -rp | wc -l) >= 4 )); do wait -n || true; done
    run_row "$index" "${faults[$index]}" &
done
wait
for index in "${!faults[@]}"; do
    [[ ! -f "$work/row-$index.failed" ]] \
        || die "the $(paste -sd, "$work/row-$index.failed") OAuth client could not run (fault: ${faults[$index]:-none})"
done
: >"$raw"
for index in "${!faults[@]}"; do
    cat "$work/row-$index.jsonl" >>"$raw"
done

python3 - "$raw" "$record" <<'PY'
import json, re, sys
raw, record = sys.argv[1], sys.argv[2] == "1"
path = "docs/auth-compatibility.json"

def row(r):
    error = r["error"] or ""
    return {
        "sdk": r["sdk"], "sdkVersion": r["sdkVersion"], "fault": r["fault"] or "none",
        "outcome": r["outcome"], "callsOk": r["callsOk"], "calls": r["calls"],
        # The error's class only: its text carries ports.
        "errorClass": error.split(":", 1)[0] if error else None,
        "error": re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", error) or None,
        "redirects": r["redirects"], "auth": r["auth"],
    }

rows = [row(json.loads(line)) for line in open(raw)]
stable = lambda r: (r["sdk"], r["fault"], r["outcome"], r["callsOk"], r["errorClass"])
passed = failed = 0
for healthy in (r for r in rows if r["fault"] == "none"):
    if healthy["outcome"] != "ok" or healthy["callsOk"] != healthy["calls"]:
        print(f"FAIL the {healthy['sdk']} SDK's healthy flow did not complete: {healthy}")
        failed += 1
if record:
    with open(path, "w") as f:
        json.dump(rows, f, indent=2)
        f.write("\n")
    print(f"recorded {len(rows)} rows in {path}")
    passed += len(rows) - failed
else:
    expected = {(r["sdk"], r["fault"]): r for r in json.load(open(path))}
    for r in rows:
        want = expected.get((r["sdk"], r["fault"]))
        if want is not None and stable(want) == stable(r):
            passed += 1
            print(f"ok    {r['sdk']:10} {r['fault']:24} {r['outcome']:7} {r['callsOk']}/{r['calls']} {r['errorClass'] or ''}")
        else:
            failed += 1
            print(f"CHANGED {r['sdk']} {r['fault']}: now {stable(r)}, recorded {stable(want) if want else None}")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
