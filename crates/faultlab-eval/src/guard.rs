//! What `faultlab eval` does so that nothing an agent can reach decides what eval runs or how long it waits: its
//! own helpers (`faultlab proxy`, `faultlab workspace-server`, `faultlab sandbox`) started from a descriptor opened
//! at start, never by a path the agent could replace; files the agent could have planted or grown read without
//! following links, without blocking on a FIFO, up to a cap.

use sha2::{Digest as _, Sha256};
use std::collections::HashMap;
use std::io::Read as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// The program to start for `faultlab` at `path`: `/proc/PID/fd/N` of this process, on a descriptor opened the
/// first time it is asked for (before any agent runs: [`crate::runner::RunSettings::new`] asks). When `path` is
/// this very executable, the descriptor is `/proc/self/exe`, the file this process runs, whatever has been renamed
/// since. An agent that replaces the file at `path` (a wrapper in its place) changes nothing eval starts.
pub fn faultlab_program(path: &Path) -> PathBuf {
    static PINNED: OnceLock<Mutex<HashMap<PathBuf, std::fs::File>>> = OnceLock::new();
    let mut pinned = faultlab_wire::sync::lock(PINNED.get_or_init(Default::default));
    if let Some(file) = pinned.get(path) {
        return fd_path(file);
    }
    let this = std::env::current_exe().ok().is_some_and(|exe| exe == path);
    let opened = match this {
        true => std::fs::File::open("/proc/self/exe"),
        false => std::fs::File::open(path),
    };
    match opened {
        Ok(file) => {
            let shown = fd_path(&file);
            pinned.insert(path.to_owned(), file);
            shown
        }
        // Not openable: the path as given, so the error that follows names it.
        Err(_) => path.to_owned(),
    }
}

fn fd_path(file: &std::fs::File) -> PathBuf {
    PathBuf::from(format!("/proc/{}/fd/{}", std::process::id(), std::os::fd::AsRawFd::as_raw_fd(file)))
}

/// Why a file an agent could reach was not read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("not a regular file (a link, a FIFO, a device or a folder)")]
    NotRegular,
    #[error("larger than {limit} bytes ({bytes} bytes)")]
    TooLarge { bytes: u64, limit: u64 },
}

/// Opens `path` for reading without following a final symlink and without blocking (a FIFO opens at once), and
/// only if it is a regular file.
pub fn open_regular(path: &Path) -> Result<std::fs::File, ReadError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => ReadError::NotRegular,
            _ => ReadError::Io(e),
        })?;
    match file.metadata()?.is_file() {
        true => Ok(file),
        false => Err(ReadError::NotRegular),
    }
}

/// The whole of a regular file of at most `limit` bytes ([`open_regular`]).
pub fn read_capped(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let file = open_regular(path)?;
    let bytes = file.metadata()?.len();
    if bytes > limit {
        return Err(ReadError::TooLarge { bytes, limit });
    }
    let mut out = Vec::new();
    // The file may grow after the check: read one byte more than the cap to notice.
    file.take(limit + 1).read_to_end(&mut out)?;
    if out.len() as u64 > limit {
        return Err(ReadError::TooLarge { bytes: out.len() as u64, limit });
    }
    Ok(out)
}

/// The SHA-256 of a regular file, read in 64 KiB pieces (no file is held in memory whole, whatever its size).
pub fn sha256_file(path: &Path) -> Result<String, ReadError> {
    let mut file = open_regular(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        match file.read(&mut buffer)? {
            0 => break,
            n => hasher.update(&buffer[..n]),
        }
    }
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Writes `bytes` to a new file beside `path`, then renames it to `path`: whatever was there (a FIFO, a link an
/// agent planted) is replaced, never opened.
pub fn write_replacing(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    // 0644 as `fs::write` would make it under the usual umask: reports are for reading.
    let readable = std::os::unix::fs::PermissionsExt::from_mode(0o644);
    let mut file = tempfile::Builder::new().permissions(readable).tempfile_in(folder)?;
    std::io::Write::write_all(&mut file, bytes)?;
    file.persist(path).map(drop).map_err(|e| e.error)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A FIFO planted where a claim belongs is refused at once (a blocking `open` would wait for a writer for
    /// ever), as is a link, and a file past the cap.
    #[test]
    fn a_fifo_a_link_and_an_oversized_file_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("claim.json");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        assert!(matches!(read_capped(&fifo, 1024), Err(ReadError::NotRegular)));
        let target = dir.path().join("target");
        std::fs::write(&target, "{}").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(matches!(read_capped(&link, 1024), Err(ReadError::NotRegular)));
        assert_eq!(read_capped(&target, 1024).unwrap(), b"{}");
        assert!(matches!(read_capped(&target, 1), Err(ReadError::TooLarge { bytes: 2, limit: 1 })));
        assert!(matches!(sha256_file(&fifo), Err(ReadError::NotRegular)));
        assert_eq!(sha256_file(&target).unwrap(), crate::evidence::sha256_hex(b"{}"));
    }
}
