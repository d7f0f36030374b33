//! The end of a set of processes: eval's runs (the agent's sandbox, the proxy and the servers it started) and
//! the sealed `command_succeeded` checks. Every member is waited for as an event ([`crate::wait::any_exit`]);
//! orphans re-parented to this process (a subreaper, [`crate::group::become_subreaper`]) are reaped; after the
//! grace, whatever is left gets SIGKILL.

use crate::scan::{self, ProcStat};
use nix::sys::signal::Signal;
use std::time::{Duration, Instant};

/// The processes of one run: process groups, and any process whose command line names a marker (the run folder:
/// a server that left its group still names its workspace).
#[derive(Debug, Clone, Default)]
pub struct Members {
    pub groups: Vec<i32>,
    /// Empty: no process is a member by its command line.
    pub marker: String,
}

impl Members {
    /// Live members (pid), and members that have ended but are still unreaped children of this process.
    fn scan(&self) -> (Vec<i32>, Vec<i32>) {
        let (mut live, mut zombies) = (Vec::new(), Vec::new());
        let me = std::process::id() as i32;
        for ProcStat { pid, state, ppid, pgrp } in scan::processes() {
            let in_group = pgrp > 0 && self.groups.contains(&pgrp);
            if state == 'Z' {
                // Tokio waits for the children it spawned (the group leaders); the rest are orphans reaped here.
                if in_group && ppid == me && !self.groups.contains(&pid) {
                    zombies.push(pid);
                }
                continue;
            }
            let marked = || !self.marker.is_empty() && scan::cmdline_contains(pid, &self.marker);
            if pid != me && (in_group || marked()) {
                live.push(pid);
            }
        }
        (live, zombies)
    }

    fn kill(&self) {
        for group in &self.groups {
            crate::group::signal_group(*group, Signal::SIGKILL);
        }
        for pid in self.scan().0 {
            crate::group::signal_process(pid, Signal::SIGKILL);
        }
    }
}

/// Waits until no member is left, reaping the ones re-parented to this subreaper; after `grace` the rest are
/// killed, and waited for up to `grace` again. Each wait is an event: a pidfd per live process turns readable
/// when that process exits (a proxy and its servers end on the agent's closed pipe within milliseconds), then the
/// members are looked over again, since an exit may orphan further ones.
pub async fn drain(members: Members, grace: Duration) {
    use nix::sys::wait::{WaitPidFlag, waitpid};
    let started = Instant::now();
    let mut killed = false;
    loop {
        let (live, zombies) = members.scan();
        for pid in zombies {
            let _ = waitpid(nix::unistd::Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
        }
        if live.is_empty() {
            return;
        }
        let limit = if killed { grace * 2 } else { grace };
        let left = limit.saturating_sub(started.elapsed());
        if left.is_zero() {
            if killed {
                return;
            }
            members.kill();
            killed = true;
            continue;
        }
        crate::wait::any_exit(&live, left).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt as _;

    /// A group whose leader ignores SIGTERM and has started a helper: after the grace both get SIGKILL, and the
    /// drain returns with nothing of the group left.
    #[tokio::test]
    async fn what_outlives_the_grace_is_killed_and_nothing_of_the_group_is_left() {
        let mut leader = std::process::Command::new("sh")
            .args(["-c", "trap '' TERM; sleep 30 & echo started; wait"])
            .stdout(std::process::Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let group = leader.id() as i32;
        // The shell says when its helper is forked (in its group from then on).
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(leader.stdout.take().unwrap()), &mut line).unwrap();
        assert_eq!(line, "started\n");
        let listed = || scan::processes().filter(|p| p.pgrp == group && !p.zombie()).count();
        assert_eq!(listed(), 2, "the shell and its sleep");
        let reaper = std::thread::spawn(move || leader.wait());
        drain(Members { groups: vec![group], marker: String::new() }, Duration::from_millis(200)).await;
        assert!(reaper.join().unwrap().is_ok());
        assert_eq!(listed(), 0, "nothing of the group is left");
    }
}
