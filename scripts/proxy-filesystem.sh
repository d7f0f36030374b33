#!/usr/bin/env bash
# `faultlab proxy` in front of a real stdio MCP server, used by a real client: the official MCP Python SDK (pinned
# in interop/python/requirements.txt) runs interop/python/proxy_filesystem_check.py, which talks through
# `faultlab proxy --rules R --record T -- node server-filesystem WORKDIR` to @modelcontextprotocol/server-filesystem,
# rooted at a fresh temporary folder. It checks that:
#   - for each fault category (transport, protocol, data, authorization, temporal; the catalogue has no systemic
#     fault) rules on filesystem tools surface in the SDK as they should, and an unrelated call on the same session
#     still works afterwards (disconnect: on a new session, a closed stdio connection being gone for good);
#   - a write the client saw time out (`mode: after` + `timeout`) really was executed once, the trajectory says
#     executed, and a client that retries blindly executes it twice: an append-style edit_file leaves its line twice.
# This script then checks the folder's content and the trajectories itself, and that no process was left behind.
#
#   scripts/proxy-filesystem.sh
#
# Installed, pinned, under git-ignored .cache/ on first use (idempotent, stamp files):
#   - Node.js 22 and @modelcontextprotocol/server-filesystem under .cache/node (scripts/lib/filesystem-tools.sh)
#   - the Python SDK venv under .cache/py-interop/venv (scripts/lib/py-interop.sh, shared with interop-python.sh)
#
# Environment:
#   FAULTLAB_BIN   the faultlab binary to test, taken as is; when unset, ${CARGO_TARGET_DIR:-target}/debug/faultlab
#                  (built with `cargo build -p faultlab` if it does not exist yet)
#   PYTHON         the Python that creates the venv (default: python3; 3.11 or newer)
#   KEEP_WORKDIR   1 keeps the temporary folder the server was rooted at (default: removed on exit)
#
# Rules, trajectories, the proxy's stderr and the client's JSON lines go to .cache/proxy-filesystem/ (replaced on
# each run). Prints one line per check, then `N passed, M failed` alone on a line; exits non-zero if a check
# failed, 2 if the run could not be set up.
set -euo pipefail

# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

export CI="${CI:-true}" PYTHONDONTWRITEBYTECODE=1
START_SECONDS=$SECONDS
OUT="$ROOT/.cache/proxy-filesystem"
WORKDIR=""
SUMMARY_PRINTED=0
passed=0
failed=0

# Processes whose command line names the work folder: the proxy and the server of this run, and nothing else.
leftover_pids() {
    [[ -n "$WORKDIR" ]] || return 0
    pgrep -f -- "$WORKDIR" || true
}

on_exit() {
    local status=$? pid
    for pid in $(leftover_pids); do
        log "ending leftover process $pid: $(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" || true)"
        kill -KILL "$pid" 2>/dev/null || true
    done
    if [[ -n "$WORKDIR" && "${KEEP_WORKDIR:-0}" != 1 ]]; then
        rm -rf "$WORKDIR"
    elif [[ -n "$WORKDIR" ]]; then
        log "kept $WORKDIR"
    fi
    if [[ $SUMMARY_PRINTED -eq 0 ]]; then
        echo "proxy-filesystem: run did not complete (exit $status)"
        echo "$passed passed, $((failed + 1)) failed"
    fi
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- tools
# shellcheck source=scripts/lib/filesystem-tools.sh
source "$ROOT/scripts/lib/filesystem-tools.sh"
# shellcheck source=scripts/lib/py-interop.sh
source "$ROOT/scripts/lib/py-interop.sh"
install_filesystem
verify_filesystem
install_py_interop
PY="$PY_INTEROP_PY"

# ---------------------------------------------------------------- binary
resolve_faultlab_bin

# ---------------------------------------------------------------- the run
rm -rf "$OUT"
mkdir -p "$OUT"
WORKDIR="$(mktemp -d "${TMPDIR:-/tmp}/faultlab-proxy-fs.XXXXXX")"
WORKDIR="$(realpath "$WORKDIR")"
log "server root: $WORKDIR; rules, trajectories and logs: $OUT"

client_rc=0
# The client bounds every wait itself (read timeouts, per-session bounds, a watchdog at 150 s); timeout is the last
# resort should the interpreter wedge.
timeout -k 10 180 "$PY" "$ROOT/interop/python/proxy_filesystem_check.py" \
    --bin "$FAULTLAB_BIN" --node "$FILESYSTEM_NODE_BIN" --server-js "$FILESYSTEM_JS" \
    --workdir "$WORKDIR" --out-dir "$OUT" </dev/null >"$OUT/checks.jsonl" 2>"$OUT/client.stderr.log" \
    || client_rc=$?

# One line per check, then the counts (interop/python/tally.py).
tally="$("$PY" "$ROOT/interop/python/tally.py" --show "$OUT/checks.jsonl" "$client_rc")"
sed '$d' <<<"$tally"
read -r p f <<<"$(tail -n 1 <<<"$tally")"
passed=$((passed + p))
failed=$((failed + f))
if [[ "$client_rc" != 0 ]]; then
    log "client exited $client_rc; stderr: $OUT/client.stderr.log"
    sed 's/^/    /' "$OUT/client.stderr.log" | tail -n 20 >&2 || true
fi

# ---------------------------------------------------------------- checks made here, on the folder and trajectories
check() { # check NAME OK DETAIL
    if [[ "$2" == 1 ]]; then
        passed=$((passed + 1))
        echo "ok    $1 [script]: $3"
    else
        failed=$((failed + 1))
        echo "FAIL  $1 [script]: $3"
    fi
}

# The folder: the blind retry of the append-style edit left the line twice; write_file's retry left one content.
ledger="$WORKDIR/ledger.txt"
n=0
[[ -f "$ledger" ]] && n="$(grep -cx 'entry: pay invoice 42' "$ledger" || true)"
cp "$ledger" "$OUT/ledger.txt" 2>/dev/null || true
check folder_ledger_line_twice "$([[ "$n" == 2 ]] && echo 1 || echo 0)" \
    "ledger.txt has 'entry: pay invoice 42' $n time(s) (want 2): $(tr '\n' '|' 2>/dev/null <"$ledger" || echo missing)"
report="$WORKDIR/report.txt"
want_report='report v1: written once, or twice, the same'
check folder_report_written "$([[ -f "$report" && "$(cat "$report")" == "$want_report" ]] && echo 1 || echo 0)" \
    "report.txt = '$(cat "$report" 2>/dev/null || echo missing)'"
absent=1
for name in auth-expired.txt forbidden.txt; do
    [[ ! -e "$WORKDIR/$name" ]] || absent=0
done
check folder_instead_not_executed "$absent" "auth-expired.txt and forbidden.txt (mode instead) $(
    [[ $absent == 1 ]] && echo 'were never created' || echo 'EXIST')"

# The trajectories: each request of the faulted writes, and the fate of its reply.
"$PY" - "$OUT" >"$OUT/trajectory-checks.txt" <<'EOF' || true
import json, os, sys
out = sys.argv[1]

def events(session):
    with open(os.path.join(out, f"{session}.trajectory.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]

def say(name, ok, detail):
    print(f"{1 if ok else 0}\t{name}\t{' '.join(str(detail).split())}")

def short(e):
    return {k: e.get(k) for k in ("direction", "action", "id", "tool", "rule", "fault", "executed")}

try:
    ev = events("idempotency")
except (OSError, ValueError) as exc:
    say("trajectory_idempotency", False, f"unreadable: {exc}")
    sys.exit(0)
frames = [e for e in ev if e.get("event") == "frame"]
replies = {e["id"]: e for e in frames if e["direction"] == "server_to_client" and e.get("id") is not None}
for tool, what in (("edit_file", "edit_file ledger.txt"), ("write_file", "write_file report.txt")):
    reqs = [e for e in frames if e["direction"] == "client_to_server" and e.get("tool") == tool
            and e["action"] == "forwarded"]
    if tool == "write_file":
        reqs = reqs[1:]  # the first write_file sets up ledger.txt
    got = [(short(r), short(replies[r["id"]]) if r["id"] in replies else None) for r in reqs]
    ok = (len(reqs) == 2 and got[0][1] is not None and got[1][1] is not None
          and got[0][1]["action"] == "consumed" and got[0][1]["fault"] == "timeout" and got[0][1]["executed"] is True
          and got[1][1]["action"] == "forwarded" and got[1][1]["fault"] is None)
    lines = "; ".join(
        f"request id {q['id']} {q['action']} (rule {q['rule']}) -> reply {a['action'] if a else 'none'}"
        f" fault={a['fault'] if a else None} executed={a['executed'] if a else None}" for q, a in got)
    say(f"trajectory_{tool}_twice", ok, f"{what}: {len(reqs)} forwarded request(s): {lines}")
for session in ("categories", "disconnect", "idempotency"):
    try:
        ledger = [e for e in events(session) if e.get("event") == "ledger"]
    except (OSError, ValueError) as exc:
        say(f"trajectory_ledger_{session}", False, f"unreadable: {exc}")
        continue
    if not ledger:
        say(f"trajectory_ledger_{session}", False, "no ledger event")
        continue
    l = ledger[-1]
    ok = l["framesIn"] == l["framesOut"] + l["consumed"] - l["injected"]
    say(f"trajectory_ledger_{session}", ok,
        f"framesIn {l['framesIn']} = out {l['framesOut']} + consumed {l['consumed']} - injected {l['injected']}")
EOF
while IFS=$'\t' read -r ok name detail; do
    check "$name" "$ok" "$detail"
done <"$OUT/trajectory-checks.txt"
[[ -s "$OUT/trajectory-checks.txt" ]] || check trajectory_checks 0 "the trajectory checks printed nothing"

# Nothing left running: no process names the work folder (the proxy and the server are gone with the client).
left="$(leftover_pids | tr '\n' ' ')"
check no_processes_left "$([[ -z "$left" ]] && echo 1 || echo 0)" \
    "$([[ -z "$left" ]] && echo 'no proxy or server process left' || echo "left running: $left")"

log "done in $((SECONDS - START_SECONDS)) s; details: $OUT/checks.jsonl, trajectories: $OUT/*.trajectory.jsonl"
SUMMARY_PRINTED=1
echo "$passed passed, $failed failed"
[[ "$failed" == 0 ]]
