//! Descriptors inherited by number: `faultlab proxy --listen-fd N` serves a Unix socket eval bound and handed
//! over ([`crate::hooks::pass_fd`]), so the socket listens before the agent starts.

use std::os::fd::RawFd;
use std::os::unix::net::UnixListener;

/// The listening Unix socket this process has as descriptor `fd`, adopted (closed when the listener drops).
/// `None` unless `fd` is open here and a socket (Linux names an open socket descriptor `socket:[INODE]`); whether
/// it listens shows at the first accept. Adopt each number once: the caller promises that nothing else in the
/// process uses it (it was inherited for this alone).
pub fn inherited_unix_listener(fd: RawFd) -> Option<UnixListener> {
    if fd < 0 {
        return None;
    }
    let open = std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()?;
    if !open.to_string_lossy().starts_with("socket:") {
        return None;
    }
    // SAFETY: `fd` is open in this process and is a socket (checked above); by this function's contract nothing
    // else in the process owns it.
    Some(unsafe { <UnixListener as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_open_socket_is_adopted() {
        assert!(inherited_unix_listener(-1).is_none());
        let file = std::fs::File::open("/proc/self/stat").unwrap();
        let raw = std::os::fd::AsRawFd::as_raw_fd(&file);
        assert!(inherited_unix_listener(raw).is_none(), "a file is not a socket");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let raw = std::os::fd::IntoRawFd::into_raw_fd(listener);
        let adopted = inherited_unix_listener(raw).expect("a socket is adopted");
        assert_eq!(adopted.local_addr().unwrap().as_pathname(), Some(path.as_path()));
    }
}
