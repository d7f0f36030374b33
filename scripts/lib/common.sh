# shellcheck shell=bash
# The preamble every script in scripts/ shares (sourced first, not run):
#   ROOT        the workspace root, made the working directory;
#   CALLER_PWD  the directory the script was started from (paths the user gave are relative to it);
#   log MSG     prints `NAME: MSG` on stderr, NAME being the script's file name without `.sh`;
#   die MSG     prints `NAME: error: MSG` on stderr and exits with DIE_STATUS (default 2, "could not be set up";
#               a script whose documented status differs sets DIE_STATUS before sourcing this file);
#   resolve_faultlab_bin  from scripts/lib/faultlab-bin.sh: FAULTLAB_BIN as given, else the debug build;
#   print_summary, summary_on_exit  the `N passed, M failed` line scripts/test.sh counts, printed once.
CALLER_PWD="$PWD"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
SCRIPT_NAME="$(basename "${BASH_SOURCE[1]}" .sh)"
log() { printf '%s: %s\n' "$SCRIPT_NAME" "$*" >&2; }
die() {
    log "error: $*"
    exit "${DIE_STATUS:-2}"
}
# shellcheck source=scripts/lib/faultlab-bin.sh
source "$ROOT/scripts/lib/faultlab-bin.sh"

# print_summary PASSED FAILED: the script's last summary line.
SUMMARY_PRINTED=0
print_summary() {
    echo "$1 passed, $2 failed"
    SUMMARY_PRINTED=1
}

# summary_on_exit STATUS TOTAL PASSED, from an EXIT trap: when the script ends before print_summary (its set-up
# failed, or it was interrupted), says so and prints the summary with all that did not pass counted as failed.
summary_on_exit() {
    [[ $SUMMARY_PRINTED -eq 0 ]] || return 0
    echo "$SCRIPT_NAME: run did not complete (exit $1); what did not finish counts as failed"
    echo "$3 passed, $(($2 - $3)) failed"
}
