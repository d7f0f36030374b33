//! The sealed run: the agent under test is untrusted code. `faultlab sandbox` (a hidden subcommand that
//! `faultlab eval` puts in front of every agent) starts it where it cannot see or touch the evidence, and makes
//! sure that nothing it started outlives the run.
//!
//! Where the kernel allows it (as root, or through a user namespace), the agent runs in its own PID and mount
//! namespaces:
//! - every path in [`Spec::hide`] is covered: a folder by an empty read-only tmpfs, a file by `/dev/null`; `/tmp`
//!   is an empty tmpfs of its own (but for the top-level folders that hold the agent's program and files, bound back
//!   in); the run's scratch folder (its working directory, `HOME` and `TMPDIR`, where its
//!   `mcpServers` file and the socket to faultlab live) is bound back in;
//! - every mount but the scratch folder is read-only: the agent cannot replace the `faultlab` executable its
//!   `mcpServers` file names, nor touch another batch's files;
//! - `/proc` shows only the sandbox's own processes, so no command line outside (the proxy's, the server's) can be
//!   read;
//! - the agent gets no capabilities (empty bounding set, `no_new_privs`, `SECBIT_NOROOT`), so even as root it
//!   cannot unmount what covers the evidence;
//! - the sandbox's first process is PID 1 of the namespace and exits with the agent: the kernel then kills every
//!   process left in it, whatever session or process group it moved to. It dies with `faultlab sandbox` (parent
//!   death signal), so `SIGKILL` from eval also ends the whole tree.
//!
//! Where namespaces are refused, `faultlab sandbox` becomes the child subreaper of the agent's tree and kills every
//! descendant when the agent ends; nothing is hidden then, and the status file says so.

use nix::errno::Errno;
use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, kill, sigaction};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid, fork};
use serde::{Deserialize, Serialize};
use std::ffi::{CString, OsString};
use std::io::Write as _;
use std::os::fd::{AsFd as _, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

/// What `faultlab sandbox` is asked to do.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The agent's working directory, `HOME` and `TMPDIR` (set by the caller); bound back in when hidden.
    pub scratch: PathBuf,
    /// Folders and files the agent must not see.
    pub hide: Vec<PathBuf>,
    /// Where the isolation that applied is written (JSON lines): a pipe to `faultlab eval`, which no process of
    /// the sandbox keeps open past `exec`, so an agent cannot forge it.
    pub status: std::os::fd::RawFd,
    /// The network the agent gets: a namespace of its own with only loopback (default), or the machine's.
    pub network: Network,
    /// With the private network: loopback ports inside whose connections go to Unix sockets (see
    /// [`crate::relay`]), so the agent reaches HTTP servers outside at the same URLs (the run's HTTP proxy, its
    /// model endpoint). At most [`MAX_RELAYS`].
    pub relays: Vec<Relay>,
    pub program: OsString,
    pub args: Vec<OsString>,
}

/// The most relays one sandbox runs (4: a run needs one for its HTTP proxy and one for its model endpoint; each is a
/// process with up to 64 connections of its own).
pub const MAX_RELAYS: usize = 4;

/// `127.0.0.1:port` inside the sandbox's network namespace, relayed to the Unix socket `socket`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relay {
    pub port: u16,
    pub socket: PathBuf,
}

/// The isolation a run had, as `report.json` names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Isolation {
    /// PID and mount namespaces (as root): evidence hidden, no capability, every process ends with the run.
    Namespaces,
    /// The same, inside a user namespace (not root).
    UserNamespaces,
    /// Namespaces were refused: a child subreaper kills every descendant; nothing is hidden.
    Subreaper,
    /// The sandbox did not report (it could not start).
    None,
}

impl Isolation {
    pub fn describe(&self) -> &'static str {
        match self {
            Isolation::Namespaces => "pid+mount(+network) namespaces, read-only root, private /tmp, no capabilities",
            Isolation::UserNamespaces => {
                "user+pid+mount(+network) namespaces, read-only root, private /tmp, no capabilities"
            }
            Isolation::Subreaper => "subreaper only (namespaces refused; evidence not hidden)",
            Isolation::None => "none (the sandbox did not start)",
        }
    }
}

/// The network a run's agent had, as `report.json` names it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Network {
    /// A network namespace of its own: its own loopback (up, empty), no other interface. faultlab is reached
    /// through the run's Unix socket, a file; a model the agent starts on loopback works; nothing else is reachable.
    #[default]
    Private,
    /// The machine's network: every loopback port and the outside (`--network host`, or namespaces refused).
    Host,
}

/// One line of the status file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Status {
    /// The isolation in force; `why` says why namespaces were refused.
    Sealed {
        isolation: Isolation,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        why: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        network: Option<Network>,
    },
    /// The agent program could not be executed.
    ExecFailed { program: String, error: String },
}

/// The network the agent had, from what `faultlab sandbox` wrote (none when it did not report).
pub fn read_network(text: &str) -> Option<Network> {
    text.lines().find_map(|line| match serde_json::from_str::<Status>(line) {
        Ok(Status::Sealed { network, .. }) => network,
        _ => None,
    })
}

/// Reads what `faultlab sandbox` wrote to its status pipe: the isolation, and the reason the agent could not
/// start, if it could not.
pub fn read_status(text: &str) -> (Isolation, Option<String>) {
    let mut isolation = Isolation::None;
    let mut failed = None;
    for line in text.lines() {
        match serde_json::from_str::<Status>(line) {
            Ok(Status::Sealed { isolation: i, .. }) => isolation = i,
            Ok(Status::ExecFailed { program, error }) => failed = Some(format!("cannot start {program}: {error}")),
            Err(_) => {}
        }
    }
    (isolation, failed)
}

/// `FAULTLAB_SANDBOX=subreaper` skips the namespaces: every process still ends with the run, but nothing is
/// hidden. Reports name the isolation that applied.
pub const WEAKEN: &str = "FAULTLAB_SANDBOX";

/// Set by SIGTERM/SIGINT: the run's deadline passed; end everything.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Runs the agent sealed and returns the exit code to exit with (the agent's, 128 + signal, or 127 when it could
/// not be executed). Must be called before any thread is started: it forks.
pub fn run(spec: &Spec) -> i32 {
    use std::os::fd::FromRawFd as _;
    // The descriptor must be open and must not reach the agent: close-on-exec.
    // SAFETY: F_SETFD on a descriptor number: harmless whether or not it is open.
    if unsafe { libc::fcntl(spec.status, libc::F_SETFD, libc::FD_CLOEXEC) } == -1 {
        let _ = writeln!(std::io::stderr(), "faultlab sandbox: the status descriptor {} is not open", spec.status);
        return 125;
    }
    // SAFETY: the descriptor is open (checked above) and owned by this process from here on.
    let mut status = unsafe { std::fs::File::from_raw_fd(spec.status) };
    let handler = SigAction::new(SigHandler::Handler(on_stop), SaFlags::empty(), SigSet::empty());
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        let _ = sigaction(Signal::SIGTERM, &handler);
        let _ = sigaction(Signal::SIGINT, &handler);
    }
    match enter_namespaces(spec.network) {
        Ok((isolation, network, why)) => {
            write_status(&mut status, &Status::Sealed { isolation, why, network: Some(network) });
            // The machine's network reaches the server directly: no relay.
            let relays: &[Relay] = if network == Network::Private { &spec.relays } else { &[] };
            namespaced(spec, relays, status)
        }
        Err(why) => {
            let sealed =
                Status::Sealed { isolation: Isolation::Subreaper, why: Some(why), network: Some(Network::Host) };
            write_status(&mut status, &sealed);
            subreaper(spec, status)
        }
    }
}

fn write_status(file: &mut std::fs::File, status: &Status) {
    let mut line = serde_json::to_string(status).expect("plain data serialises");
    line.push('\n');
    let _ = file.write_all(line.as_bytes());
}

/// New mount, PID and (unless `network` is `Host`) network namespaces for the children of this process; through
/// a user namespace when not root. Returns the isolation, the network that applied and, when the private network
/// could not be had, why.
fn enter_namespaces(network: Network) -> Result<(Isolation, Network, Option<String>), String> {
    // For showing what the seal stops (and for kernels where namespaces misbehave): the weaker isolation on demand.
    if std::env::var_os(WEAKEN).is_some_and(|v| v == "subreaper") {
        return Err(format!("{WEAKEN}=subreaper"));
    }
    let flags = CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID;
    let net = match network {
        Network::Private => CloneFlags::CLONE_NEWNET,
        Network::Host => CloneFlags::empty(),
    };
    let isolation = match unshare(flags | net) {
        Ok(()) => Isolation::Namespaces,
        Err(Errno::EPERM) => {
            let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
            unshare(flags | net | CloneFlags::CLONE_NEWUSER)
                .map_err(|e| format!("unshare(user, pid, mount, network): {e}"))?;
            // Map the caller to root inside: mounting needs it, and files the agent writes stay the caller's.
            let write = |file: &str, text: String| {
                std::fs::write(format!("/proc/self/{file}"), text).map_err(|e| format!("/proc/self/{file}: {e}"))
            };
            write("setgroups", "deny".into())?;
            write("uid_map", format!("0 {uid} 1"))?;
            write("gid_map", format!("0 {gid} 1"))?;
            Isolation::UserNamespaces
        }
        Err(e) => return Err(format!("unshare(pid, mount, network): {e}")),
    };
    // A new network namespace's loopback is down: up, so an agent's own loopback model can listen.
    let why = match network {
        Network::Private => loopback_up().err().map(|e| format!("loopback stays down: {e}")),
        Network::Host => None,
    };
    Ok((isolation, network, why))
}

/// Brings `lo` up (SIOCSIFFLAGS), in this process's network namespace.
fn loopback_up() -> Result<(), Errno> {
    // SAFETY: a plain socket for the ioctls, closed below.
    let socket = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if socket < 0 {
        return Err(Errno::last());
    }
    // SAFETY: ifreq is plain data; all zero is a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (to, from) in request.ifr_name.iter_mut().zip(b"lo\0") {
        *to = *from as libc::c_char;
    }
    // SAFETY: the request names an interface and has room for its flags, as both ioctls expect.
    let result = unsafe {
        match libc::ioctl(socket, libc::SIOCGIFFLAGS, &mut request) {
            0 => {
                request.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
                match libc::ioctl(socket, libc::SIOCSIFFLAGS, &request) {
                    0 => Ok(()),
                    _ => Err(Errno::last()),
                }
            }
            _ => Err(Errno::last()),
        }
    };
    // SAFETY: the socket opened above.
    unsafe { libc::close(socket) };
    result
}

/// This process stays outside the new PID namespace and waits; its child is the namespace's PID 1.
fn namespaced(spec: &Spec, relays: &[Relay], status: std::fs::File) -> i32 {
    let alive = match nix::unistd::pipe() {
        Ok(pipe) => pipe,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "faultlab sandbox: pipe: {e}");
            return 125;
        }
    };
    // SAFETY: single-threaded here (the caller's contract); the child only sets up mounts and forks again.
    match unsafe { fork() } {
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "faultlab sandbox: fork: {e}");
            125
        }
        Ok(ForkResult::Child) => {
            let code = init(spec, relays, alive, status);
            // SAFETY: exit without running the parent's destructors or flushing its buffers twice.
            unsafe { libc::_exit(code) }
        }
        Ok(ForkResult::Parent { child }) => {
            drop(status);
            // Held open until this process exits: PID 1 reads a hang-up as its death.
            let _alive = alive;
            loop {
                match waitpid(child, None) {
                    Ok(WaitStatus::Exited(_, code)) => return code,
                    Ok(WaitStatus::Signaled(_, signal, _)) => return 128 + signal as i32,
                    Ok(_) => {}
                    Err(Errno::EINTR) if STOP.load(Ordering::SeqCst) => {
                        // The deadline: PID 1's death ends every process of the namespace.
                        let _ = kill(child, Signal::SIGKILL);
                    }
                    Err(Errno::EINTR) => {}
                    Err(_) => return 125,
                }
            }
        }
    }
}

/// PID 1 of the sandbox: hides what must not be seen, starts the agent, reaps every orphan, and exits with the
/// agent (which ends every other process of the namespace).
fn init(spec: &Spec, relays: &[Relay], alive: (OwnedFd, OwnedFd), mut status: std::fs::File) -> i32 {
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    // The parent is outside this PID namespace (getppid() says 0 here, and its pid means nothing), so whether it
    // died before the line above is read from a pipe only it holds open: a hang-up means it is gone.
    drop(alive.1);
    let mut fds = [nix::poll::PollFd::new(alive.0.as_fd(), nix::poll::PollFlags::POLLIN)];
    if nix::poll::poll(&mut fds, nix::poll::PollTimeout::ZERO).unwrap_or(0) > 0 {
        return 125;
    }
    if let Err(e) = seal_mounts(spec) {
        let _ = writeln!(std::io::stderr(), "faultlab sandbox: {e}");
        return 125;
    }
    if relays.len() > MAX_RELAYS {
        let _ =
            writeln!(std::io::stderr(), "faultlab sandbox: {} relays asked for; at most {MAX_RELAYS}", relays.len());
        return 125;
    }
    for relay in relays {
        if let Err(e) = start_relay(relay, &mut status) {
            let _ = writeln!(std::io::stderr(), "faultlab sandbox: {e}");
            return 125;
        }
    }
    // PID 1 reaps every orphan until the agent ends; SIGTERM comes only from outside, as SIGKILL to this process.
    reap_until_agent_ends(spec, status, false)
}

/// Binds the relay's port on the namespace's loopback (before the agent starts, so its first connection finds it
/// listening) and forks the relay, a process of the namespace that ends with it. The relay holds neither the status
/// pipe nor anything of the agent's.
fn start_relay(relay: &Relay, status: &mut std::fs::File) -> Result<(), String> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", relay.port))
        .map_err(|e| format!("cannot listen on 127.0.0.1:{} for the relay: {e}", relay.port))?;
    // SAFETY: single-threaded here (PID 1 of a fresh namespace); the child starts its threads after the fork.
    match unsafe { fork() } {
        Err(e) => Err(format!("fork (relay): {e}")),
        Ok(ForkResult::Child) => {
            // SAFETY: closing this process's copy of the status pipe: only PID 1 and the agent write to it.
            unsafe { libc::close(std::os::fd::AsRawFd::as_raw_fd(status)) };
            let error = crate::relay::serve(listener, &relay.socket, crate::relay::Limits::default());
            let _ = writeln!(std::io::stderr(), "faultlab sandbox: the relay stopped: {error}");
            // SAFETY: the forked child leaves without the parent's destructors.
            unsafe { libc::_exit(1) }
        }
        Ok(ForkResult::Parent { .. }) => Ok(()),
    }
}

/// Forks the agent, then reaps every child (orphans re-parented here among them) until the agent ends; returns its
/// exit code (128 + signal when a signal ended it). With `stoppable`, SIGTERM/SIGINT to this process end the wait.
fn reap_until_agent_ends(spec: &Spec, mut status: std::fs::File, stoppable: bool) -> i32 {
    // SAFETY: single-threaded.
    let agent = match unsafe { fork() } {
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "faultlab sandbox: fork: {e}");
            return 125;
        }
        Ok(ForkResult::Child) => exec_agent(spec, &mut status),
        Ok(ForkResult::Parent { child }) => child,
    };
    drop(status);
    loop {
        match waitpid(None::<Pid>, None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == agent => return code,
            Ok(WaitStatus::Signaled(pid, signal, _)) if pid == agent => return 128 + signal as i32,
            Err(Errno::EINTR) if stoppable && STOP.load(Ordering::SeqCst) => return 128 + Signal::SIGKILL as i32,
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => return 125,
        }
    }
}

/// In the new mount namespace: nothing propagates back out; a fresh `/proc`; the hidden paths covered; a private
/// `/tmp`; the scratch folder bound back in; then every mount read-only but the scratch folder, so the agent can
/// change nothing outside it (not the `faultlab` executable its `mcpServers` file names, not another batch's
/// workspace).
fn seal_mounts(spec: &Spec) -> Result<(), String> {
    let none: Option<&str> = None;
    mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none)
        .map_err(|e| format!("cannot make the mounts private: {e}"))?;
    mount(Some("proc"), "/proc", Some("proc"), MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC, none)
        .map_err(|e| format!("cannot mount /proc: {e}"))?;
    // Held open across the covering: the scratch folder may lie beneath a hidden folder or `/tmp`.
    let scratch = std::fs::File::open(&spec.scratch)
        .map_err(|e| format!("cannot open the scratch folder {}: {e}", spec.scratch.display()))?;
    let shown = exposed(spec);
    for path in &spec.hide {
        let Ok(meta) = std::fs::metadata(path) else { continue };
        if meta.is_dir() {
            // 64 KiB: room for the mount points of the scratch folder, nothing more.
            mount(
                Some("tmpfs"),
                path,
                Some("tmpfs"),
                MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
                Some("size=64k,mode=755"),
            )
            .map_err(|e| format!("cannot hide {}: {e}", path.display()))?;
        } else {
            mount(Some("/dev/null"), path, none, MsFlags::MS_BIND, none)
                .map_err(|e| format!("cannot hide {}: {e}", path.display()))?;
        }
    }
    // A private `/tmp`: no other run's or batch's files, no socket of another program. 1 MiB: mount points only
    // (it turns read-only below; the agent's `TMPDIR` is its scratch folder).
    if std::path::Path::new("/tmp").is_dir() {
        mount(Some("tmpfs"), "/tmp", Some("tmpfs"), MsFlags::MS_NOSUID | MsFlags::MS_NODEV, Some("size=1m,mode=1777"))
            .map_err(|e| format!("cannot make /tmp private: {e}"))?;
    }
    let _ = std::fs::create_dir_all(&spec.scratch);
    let source = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&scratch));
    mount(Some(source.as_str()), &spec.scratch, none, MsFlags::MS_BIND | MsFlags::MS_REC, none)
        .map_err(|e| format!("cannot bind the scratch folder {}: {e}", spec.scratch.display()))?;
    for (path, folder) in shown {
        let source = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&folder));
        if std::fs::create_dir_all(&path).is_ok() {
            let _ = mount(Some(source.as_str()), &path, none, MsFlags::MS_BIND | MsFlags::MS_REC, none);
        }
    }
    read_only("/", true).map_err(|e| format!("cannot make the file system read-only: {e}"))?;
    writable(&spec.scratch)
        .map_err(|e| format!("cannot make the scratch folder {} writable: {e}", spec.scratch.display()))?;
    Ok(())
}

/// What the private `/tmp` would hide that the agent needs: the folders of `/tmp` that hold the `faultlab`
/// executable (its `mcpServers` file names it) and the files its command line names (an agent, its virtual
/// environment, beside it), each the whole top-level folder (`/tmp/NAME`), opened now, before anything is covered,
/// to be bound back in, read-only, with what covers the evidence inside it. Never `/tmp` itself, nor a hidden
/// folder (the batches' scratch folders).
fn exposed(spec: &Spec) -> Vec<(PathBuf, std::fs::File)> {
    let hidden = |path: &std::path::Path| spec.hide.iter().any(|h| path.starts_with(h));
    let words = std::env::current_exe()
        .into_iter()
        .chain(std::iter::once(&spec.program).chain(&spec.args).map(PathBuf::from).filter(|p| p.is_absolute()));
    let mut found: Vec<(PathBuf, std::fs::File)> = Vec::new();
    for path in words {
        let path = std::path::absolute(&path).unwrap_or(path);
        let mut parts = path.components();
        let top: PathBuf = parts.by_ref().take(3).collect();
        let in_tmp = top.starts_with("/tmp") && top != std::path::Path::new("/tmp") && path.exists();
        if !in_tmp || hidden(&top) || spec.scratch.starts_with(&top) || found.iter().any(|(p, _)| p == &top) {
            continue;
        }
        if let Ok(file) = std::fs::File::open(&top)
            && file.metadata().is_ok_and(|m| m.is_dir())
        {
            found.push((top, file));
        }
    }
    found
}

/// mount_setattr(2)'s `struct mount_attr` (linux/mount.h).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// MOUNT_ATTR_RDONLY and AT_RECURSIVE (linux/mount.h, linux/fcntl.h).
const MOUNT_ATTR_RDONLY: u64 = 0x1;
const AT_RECURSIVE: libc::c_uint = 0x8000;

fn mount_setattr(path: &str, recursive: bool, attr: &MountAttr) -> Result<(), Errno> {
    let path = CString::new(path).map_err(|_| Errno::EINVAL)?;
    let flags = if recursive { AT_RECURSIVE } else { 0 };
    // SAFETY: a path, flags and a pointer to a struct of the size given, all valid for the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            flags,
            attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    Errno::result(rc).map(drop)
}

/// Every mount at and beneath `path` read-only: in one call (Linux 5.12), else one remount per mount.
fn read_only(path: &str, recursive: bool) -> Result<(), Errno> {
    let attr = MountAttr { attr_set: MOUNT_ATTR_RDONLY, attr_clr: 0, propagation: 0, userns_fd: 0 };
    match mount_setattr(path, recursive, &attr) {
        Err(Errno::ENOSYS) => {}
        done => return done,
    }
    let none: Option<&str> = None;
    for (point, flags) in mounts() {
        if point.starts_with(path) {
            mount(
                none,
                point.as_str(),
                none,
                MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_RDONLY | flags,
                none,
            )?;
        }
    }
    Ok(())
}

/// The scratch folder's own mount writable again (it was made read-only with the rest).
fn writable(path: &std::path::Path) -> Result<(), Errno> {
    let text = path.to_str().ok_or(Errno::EINVAL)?;
    let attr = MountAttr { attr_set: 0, attr_clr: MOUNT_ATTR_RDONLY, propagation: 0, userns_fd: 0 };
    match mount_setattr(text, false, &attr) {
        Err(Errno::ENOSYS) => {}
        done => return done,
    }
    let flags = mounts().into_iter().find(|(p, _)| p == text).map_or(MsFlags::empty(), |(_, f)| f);
    let none: Option<&str> = None;
    mount(none, path, none, MsFlags::MS_REMOUNT | MsFlags::MS_BIND | flags, none)
}

/// Each mount point of this namespace with the per-mount flags a remount must keep (`/proc/self/mountinfo`).
fn mounts() -> Vec<(String, MsFlags)> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let unescape = |field: &str| {
        // Octal escapes (`\040` for a space).
        let mut out = Vec::new();
        let bytes = field.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            match (bytes[i], bytes.get(i + 1..i + 4).and_then(|d| std::str::from_utf8(d).ok())) {
                (b'\\', Some(d)) if u8::from_str_radix(d, 8).is_ok() => {
                    out.push(u8::from_str_radix(d, 8).unwrap_or(b'?'));
                    i += 4;
                }
                (b, _) => {
                    out.push(b);
                    i += 1;
                }
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    };
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            let (point, options) = (fields.get(4)?, fields.get(5)?);
            let mut flags = MsFlags::empty();
            for option in options.split(',') {
                flags |= match option {
                    "nosuid" => MsFlags::MS_NOSUID,
                    "nodev" => MsFlags::MS_NODEV,
                    "noexec" => MsFlags::MS_NOEXEC,
                    "noatime" => MsFlags::MS_NOATIME,
                    "nodiratime" => MsFlags::MS_NODIRATIME,
                    "relatime" => MsFlags::MS_RELATIME,
                    _ => MsFlags::empty(),
                };
            }
            Some((unescape(point), flags))
        })
        .collect()
}

/// The agent's process: the scratch folder as working directory, no capabilities, then `exec`. Never returns.
fn exec_agent(spec: &Spec, status: &mut std::fs::File) -> ! {
    let failed = |status: &mut std::fs::File, error: String| -> ! {
        write_status(status, &Status::ExecFailed { program: spec.program.to_string_lossy().into_owned(), error });
        // SAFETY: the forked child leaves without the parent's destructors.
        unsafe { libc::_exit(127) }
    };
    // The deadline handler belongs to faultlab, not to the agent.
    // SAFETY: restoring the default disposition.
    unsafe {
        let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
        let _ = sigaction(Signal::SIGTERM, &default);
        let _ = sigaction(Signal::SIGINT, &default);
    }
    if let Err(e) = nix::unistd::chdir(&spec.scratch) {
        failed(status, format!("cannot enter the scratch folder {}: {e}", spec.scratch.display()));
    }
    drop_privileges();
    let cstr = |s: &OsString| CString::new(s.as_bytes()).ok();
    let Some(program) = cstr(&spec.program) else { failed(status, "a NUL byte in the program name".into()) };
    let mut argv = vec![program.clone()];
    for arg in &spec.args {
        match cstr(arg) {
            Some(arg) => argv.push(arg),
            None => failed(status, "a NUL byte in an argument".into()),
        }
    }
    let error = nix::unistd::execvp(&program, &argv).unwrap_err();
    failed(status, error.desc().to_owned())
}

/// Best effort: no capability survives the agent's `exec`, even as uid 0 (so it cannot unmount what hides the
/// evidence), and nothing it runs can gain privileges.
fn drop_privileges() {
    // SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP | its lock (linux/securebits.h).
    const SECURE_BITS: libc::c_ulong = 0x01 | 0x02 | 0x04 | 0x08;
    // SAFETY: plain prctl/capset calls on this process.
    unsafe {
        libc::prctl(libc::PR_SET_SECUREBITS, SECURE_BITS, 0, 0, 0);
        for cap in 0..64 {
            if libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) != 0 && Errno::last() == Errno::EINVAL
            {
                break;
            }
        }
        libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong, 0, 0, 0);
        // _LINUX_CAPABILITY_VERSION_3: two 32-bit words per set, all zero.
        #[repr(C)]
        struct Header {
            version: u32,
            pid: i32,
        }
        #[repr(C)]
        #[derive(Clone, Copy)]
        struct Data {
            effective: u32,
            permitted: u32,
            inheritable: u32,
        }
        let header = Header { version: 0x2008_0522, pid: 0 };
        let data = [Data { effective: 0, permitted: 0, inheritable: 0 }; 2];
        libc::syscall(libc::SYS_capset, &header as *const Header, data.as_ptr());
    }
    let _ = nix::sys::prctl::set_no_new_privs();
}

/// Without namespaces: this process adopts every orphan of the agent's tree and kills all of it when the agent
/// ends or the deadline passes.
fn subreaper(spec: &Spec, status: std::fs::File) -> i32 {
    let _ = nix::sys::prctl::set_child_subreaper(true);
    let code = reap_until_agent_ends(spec, status, true);
    kill_descendants();
    code
}

/// Kills every descendant of this process until none is left. Orphans are re-parented here (subreaper), so a
/// process forked between a scan and its kill shows up in the next scan.
pub fn kill_descendants() {
    let me = nix::unistd::getpid().as_raw();
    loop {
        for pid in crate::scan::descendants(me) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        match waitpid(None::<Pid>, Some(WaitPidFlag::__WALL)) {
            Err(Errno::ECHILD) => return,
            Err(Errno::EINTR) | Ok(_) => {}
            Err(_) => return,
        }
    }
}
