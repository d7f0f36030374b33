//! A process's exit waited for as an event: its pidfd turns readable when it exits. Never a sleep and a look
//! again.

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::process::{Pid, PidfdFlags, pidfd_open};
use std::time::Duration;

fn timespec(limit: Duration) -> Timespec {
    Timespec { tv_sec: limit.as_secs() as _, tv_nsec: limit.subsec_nanos() as _ }
}

/// Whether `fd` (a pidfd, an inotify descriptor) becomes readable within `limit`: one `poll`, blocking.
pub fn readable_within(fd: &impl rustix::fd::AsFd, limit: Duration) -> bool {
    poll(&mut [PollFd::new(fd, PollFlags::IN)], Some(&timespec(limit))).is_ok_and(|n| n > 0)
}

/// Whether process `pid` is gone within `limit` (blocking). A process already gone (it cannot be opened) is.
pub fn exits_within(pid: i32, limit: Duration) -> bool {
    let Some(pid) = Pid::from_raw(pid) else { return true };
    // ESRCH: already gone.
    let Ok(fd) = pidfd_open(pid, PidfdFlags::empty()) else { return true };
    readable_within(&fd, limit)
}

/// Waits (off the runtime, on the blocking pool) until one of `pids` exits or `limit` passes. A process already
/// gone cannot be opened and counts as exited, so the wait ends at once.
pub async fn any_exit(pids: &[i32], limit: Duration) {
    let mut fds = Vec::new();
    for pid in pids {
        match Pid::from_raw(*pid).map(|pid| pidfd_open(pid, PidfdFlags::empty())) {
            Some(Ok(fd)) => fds.push(fd),
            _ => return,
        }
    }
    let timeout = timespec(limit);
    let _ = tokio::task::spawn_blocking(move || {
        let mut polled: Vec<PollFd> = fds.iter().map(|fd| PollFd::new(fd, PollFlags::IN)).collect();
        poll(&mut polled, Some(&timeout))
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_process_has_not_exited_and_a_killed_one_has() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id() as i32;
        assert!(!exits_within(pid, Duration::from_millis(100)), "sleep 30 runs on");
        child.kill().unwrap();
        assert!(exits_within(pid, Duration::from_secs(10)), "SIGKILL ends it");
        child.wait().unwrap();
    }

    #[tokio::test]
    async fn any_exit_returns_when_one_of_the_processes_exits() {
        let mut long = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let mut short = std::process::Command::new("true").spawn().unwrap();
        // The wait's own limit is an hour: it returns on `true`'s exit, long before the 60 s this test allows.
        let pids = [long.id() as i32, short.id() as i32];
        let waited = any_exit(&pids, Duration::from_secs(3600));
        tokio::time::timeout(Duration::from_secs(60), waited).await.expect("any_exit returned on the first exit");
        short.wait().unwrap();
        assert!(long.try_wait().unwrap().is_none(), "the long one still runs");
        long.kill().unwrap();
        long.wait().unwrap();
    }
}
