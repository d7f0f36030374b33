# shellcheck shell=bash
# Waiting on background processes as events, not by sleeping and looking again (sourced, not run). The sourcing
# script defines log.

# stop_job PID NAME [GRACE_S]: SIGTERM to a background job of this shell, `wait` for it, SIGKILL after GRACE_S
# seconds (default 10) if it is still there; sets STOP_STATUS to its exit status.
stop_job() {
    local pid="$1" name="$2" grace="${3:-10}" watchdog
    STOP_STATUS=""
    [[ -n "$pid" ]] || return 0
    kill -TERM "$pid" 2>/dev/null || true
    # The watchdog only bounds the wait; `wait` returns the moment the job exits.
    (sleep "$grace" && kill -0 "$pid" 2>/dev/null && log "$name (pid $pid) did not exit within ${grace} s of SIGTERM; sending SIGKILL" && kill -KILL "$pid" 2>/dev/null) &
    watchdog=$!
    STOP_STATUS=0
    wait "$pid" 2>/dev/null || STOP_STATUS=$?
    kill "$watchdog" 2>/dev/null || true
    wait "$watchdog" 2>/dev/null || true
}

# wait_for_line PID FILE SED_EXPR TIMEOUT_S: prints the first capture of SED_EXPR in FILE, which process PID writes.
# `tail -F` follows the file by inotify, so the line is seen as it is written. Fails (status 1) when PID exits
# first or TIMEOUT_S passes; the caller shows the file.
wait_for_line() {
    local pid="$1" file="$2" expr="$3" timeout="$4" line found deadline=$((SECONDS + $4))
    while IFS= read -r -t "$timeout" line; do
        found="$(sed -n "$expr" <<<"$line")"
        if [[ -n "$found" ]]; then
            printf '%s\n' "$found"
            return 0
        fi
        timeout=$((deadline - SECONDS))
        ((timeout > 0)) || return 1
    done < <(exec tail -n +1 -F --pid="$pid" "$file" 2>/dev/null)
    return 1
}
