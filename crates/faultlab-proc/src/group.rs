//! Signals by process number: to one process, or to a whole process group (the lab starts every helper as the
//! leader of a group of its own, so what it started in turn is reached too). A process or group already gone is no
//! error here: ending something that has ended is done.

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// Sends `signal` to the process group `pgid`; whether some process got it (false: the group is empty, or
/// `pgid` is not a group id, 0 and below included, which would name the caller's own group or every process).
pub fn signal_group(pgid: i32, signal: Signal) -> bool {
    pgid > 0 && killpg(Pid::from_raw(pgid), signal).is_ok()
}

/// Sends `signal` to the process `pid`; whether it got it (false: it is gone, or `pid` is 0 or below, which would
/// name a group or every process).
pub fn signal_process(pid: i32, signal: Signal) -> bool {
    pid > 0 && kill(Pid::from_raw(pid), signal).is_ok()
}

/// Makes this process the subreaper of its descendants: an orphan of a process it started (a proxy's server) is
/// re-parented here rather than to init, so it can be waited for and reaped.
pub fn become_subreaper() {
    let _ = nix::sys::prctl::set_child_subreaper(true);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt as _;

    #[test]
    fn a_group_signal_reaches_the_leader_and_no_number_below_one_is_signalled() {
        let mut child = std::process::Command::new("sleep").arg("30").process_group(0).spawn().unwrap();
        assert!(!signal_group(0, Signal::SIGKILL), "0 would be the test's own group");
        assert!(!signal_process(-1, Signal::SIGKILL), "-1 would be every process");
        assert!(signal_group(child.id() as i32, Signal::SIGKILL));
        let status = child.wait().unwrap();
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(9));
        assert!(!signal_group(child.id() as i32, Signal::SIGKILL), "the group is gone");
    }
}
