//! Every `pre_exec` hook of the lab: code that runs in the child between `fork` and `exec`. Each does only
//! async-signal-safe calls (no allocation, no lock), which is what makes it sound in a process forked from a
//! multi-threaded one. A tokio command is passed as `command.as_std_mut()`.

use nix::sys::signal::Signal;
use std::os::fd::RawFd;
use std::os::unix::process::CommandExt as _;
use std::process::Command;

/// The child gets `raw` (open in this process, close-on-exec or not) as descriptor `target`, without
/// close-on-exec, so the program it runs inherits it: the sandbox's status pipe and the proxy's listening socket
/// are handed over this way. `raw` must stay open until the child is spawned.
pub fn pass_fd(command: &mut Command, raw: RawFd, target: RawFd) {
    // SAFETY: fcntl and dup2 are async-signal-safe and touch only descriptors of the child. A descriptor that is
    // already `target` has its close-on-exec flag cleared instead (dup2 onto itself would keep the flag).
    unsafe {
        command.pre_exec(move || {
            let done = match raw == target {
                true => libc::fcntl(raw, libc::F_SETFD, 0),
                false => libc::dup2(raw, target),
            };
            match done {
                -1 => Err(std::io::Error::last_os_error()),
                _ => Ok(()),
            }
        });
    }
}

/// The kernel sends the child `signal` when the thread that started it (the lab) dies, even by SIGKILL: no child
/// of the lab outlives it.
pub fn parent_death_signal(command: &mut Command, signal: Signal) {
    // SAFETY: the closure only calls prctl, which is async-signal-safe.
    unsafe {
        command.pre_exec(move || nix::sys::prctl::set_pdeathsig(signal).map_err(std::io::Error::from));
    }
}

/// The child starts a session of its own (`setsid`), as SDK clients start their servers: it leaves the lab's
/// process group and terminal. What the adversarial `forker` control does to try to outlive its run.
pub fn new_session(command: &mut Command) {
    // SAFETY: setsid is async-signal-safe.
    unsafe {
        command.pre_exec(|| nix::unistd::setsid().map(drop).map_err(std::io::Error::from));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;

    /// The descriptor handed over is the one the program reads (a pipe's write end as descriptor 3, written by
    /// `sh` to fd 3), whether it had to be copied or was descriptor 3 already.
    #[test]
    fn a_passed_descriptor_reaches_the_program_under_its_number() {
        let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
        let mut command = Command::new("sh");
        command.args(["-c", "echo handed >&3"]);
        pass_fd(&mut command, std::os::fd::AsRawFd::as_raw_fd(&write), 3);
        let status = command.status().unwrap();
        drop(write);
        assert!(status.success(), "sh could write to descriptor 3");
        let mut text = String::new();
        std::fs::File::from(read).read_to_string(&mut text).unwrap();
        assert_eq!(text, "handed\n");
    }

    /// A child in a new session leads it: its session id is its own pid, not the test's.
    #[test]
    fn a_new_session_child_leads_its_own_session() {
        let mut command = Command::new("sh");
        command.args(["-c", "cut -d' ' -f6 /proc/self/stat"]).stdout(std::process::Stdio::piped());
        new_session(&mut command);
        let out = command.output().unwrap();
        let session: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        assert_ne!(session, nix::unistd::getsid(None).unwrap().as_raw(), "not the test's session");
    }
}
