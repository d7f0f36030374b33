//! Processes: every process a bench starts is the leader of a process group of its own (a relay's server child in
//! it), killed with its group when its measurement ends, when one wait stalls for [`STALL`], on a panic and at the
//! end, when the benches count what is left (0). Facts about processes and tools, read from `/proc` or the tools.
//! Signals, pidfd waits and the `/proc` scan are `faultlab-proc`'s, as for eval and the proxy.

use faultlab_wire::sync::lock;
use serde_json::Value;
use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// No single wait (a stdio exchange, an HTTP request, a listening line) may take longer than this: the process
/// group is killed and the bench fails instead of hanging.
pub const STALL: Duration = Duration::from_secs(30);

/// Every process group a bench started: killed again at the end and on a panic, then counted (should be none).
static GROUPS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// A process started in a process group of its own; the group is killed on drop.
pub struct Proc {
    pub child: Child,
    pub pgid: u32,
}

impl Proc {
    /// Starts `cmd` (its stdio set by the caller) as the leader of a new process group; `LAB_SCENARIO` is not
    /// passed on (it would turn `faultlab serve` into the demo's probe server).
    pub fn spawn(cmd: &mut Command, what: &str) -> Result<Proc, String> {
        cmd.env_remove("LAB_SCENARIO").process_group(0);
        let child = cmd.spawn().map_err(|e| format!("cannot start {what} ({cmd:?}): {e}"))?;
        let pgid = child.id();
        lock(&GROUPS).push(pgid);
        Ok(Proc { child, pgid })
    }

    /// Waits up to [`STALL`] for a line on the process's (piped) stderr from which `ready` extracts its endpoint
    /// URL. The rest of stderr is drained on a thread, so a full pipe never blocks the process, and every line is
    /// copied to `log` when one is given.
    pub fn ready_line(
        &mut self,
        what: &str,
        mut log: Option<std::fs::File>,
        ready: impl Fn(&str) -> Option<String> + Send + 'static,
    ) -> Result<String, String> {
        let stderr = self.child.stderr.take().expect("piped stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(log) = log.as_mut() {
                    let _ = writeln!(log, "{line}");
                }
                if let Some(url) = tx.as_ref().and_then(|_| ready(&line)) {
                    let _ = tx.take().unwrap().send(url);
                }
            }
        });
        rx.recv_timeout(STALL).map_err(|_| format!("{what} exited or printed no listening line within {STALL:?}"))
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        kill_group(self.pgid);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// SIGKILL to the process group `pgid` (one gone already is no error here).
pub fn kill_group(pgid: u32) {
    faultlab_proc::group::signal_group(pgid as i32, faultlab_proc::Signal::SIGKILL);
}

pub fn kill_all_groups() {
    let groups = lock(&GROUPS).clone();
    for pgid in groups {
        kill_group(pgid);
    }
}

/// On a panic, kill every group before the message is printed, so no server outlives a failed bench.
pub fn kill_groups_on_panic() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        kill_all_groups();
        default_hook(info);
    }));
}

/// Processes still alive (not zombies) in any group the bench started.
fn group_processes() -> Vec<u32> {
    let groups = lock(&GROUPS).clone();
    let started = |p: &faultlab_proc::scan::ProcStat| !p.zombie() && groups.contains(&(p.pgrp as u32));
    faultlab_proc::scan::processes().filter(started).map(|p| p.pid as u32).collect()
}

/// Kills every group the bench started, waits for each of their processes to exit (poll on its pidfd, at most
/// `limit` each) and returns how many are still alive.
pub fn leftover_processes(limit: Duration) -> usize {
    kill_all_groups();
    for pid in group_processes() {
        exits_within(pid, limit);
    }
    group_processes().len()
}

/// Whether process `pid` is gone within `limit`, waited for on its pidfd (an event, not a sleep and a look).
pub fn exits_within(pid: u32, limit: Duration) -> bool {
    faultlab_proc::wait::exits_within(pid as i32, limit)
}

/// Whether `fd` (a pidfd, an inotify descriptor) becomes readable within `limit`: one `poll`, no sleep.
pub use faultlab_proc::wait::readable_within;

/// Kills a process group when one wait passes its deadline (ms since `epoch`; IDLE: not waiting). The watch thread
/// sleeps until the deadline it last saw (parked, woken early when a wait starts or the group ends), not in a loop
/// that looks again every so often.
#[derive(Clone)]
pub struct Watch {
    epoch: Instant,
    deadline: Arc<AtomicU64>,
    thread: std::thread::Thread,
    /// How long one wait may last, in ms ([`STALL`] outside the tests).
    stall_ms: u64,
}

impl Watch {
    const IDLE: u64 = u64::MAX;
    const DONE: u64 = u64::MAX - 1;

    pub fn start(pgid: u32) -> Watch {
        Self::with_stall(pgid, STALL)
    }

    fn with_stall(pgid: u32, stall: Duration) -> Watch {
        let (epoch, deadline) = (Instant::now(), Arc::new(AtomicU64::new(Self::IDLE)));
        let seen = deadline.clone();
        let thread = std::thread::spawn(move || {
            loop {
                let now = epoch.elapsed().as_millis() as u64;
                match seen.load(Ordering::Relaxed) {
                    Self::DONE => return,
                    // Until a wait starts (`arm` wakes this thread).
                    Self::IDLE => std::thread::park(),
                    deadline if now > deadline => {
                        eprintln!("bench: process group {pgid} stalled for {stall:?}; killing it");
                        kill_group(pgid);
                        return;
                    }
                    // Until this deadline; a wait that made progress since has moved it later, so look again then.
                    deadline => std::thread::park_timeout(Duration::from_millis(deadline + 1 - now)),
                }
            }
        });
        Watch { epoch, deadline, thread: thread.thread().clone(), stall_ms: stall.as_millis() as u64 }
    }
    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }
    /// A wait starts (or made progress): it may last the stall limit ([`STALL`]) from now. Cheap on the hot path: one atomic swap,
    /// and a wake-up only when the watch was idle.
    pub fn arm(&self) {
        let previous = self.deadline.swap(self.now_ms() + self.stall_ms, Ordering::Relaxed);
        if previous == Self::IDLE {
            self.thread.unpark();
        }
    }
    pub fn idle(&self) {
        self.deadline.store(Self::IDLE, Ordering::Relaxed);
    }
    /// The group is being ended: the watch thread stops.
    pub fn done(&self) {
        self.deadline.store(Self::DONE, Ordering::Relaxed);
        self.thread.unpark();
    }
}

/// Fields after `pid (comm)` of /proc/PID/stat (comm may hold spaces).
pub fn proc_stat(pid: &str) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(stat.rsplit_once(')')?.1.split_whitespace().map(str::to_owned).collect())
}

/// A child process of `parent`.
pub fn child_of(parent: u32) -> Option<u32> {
    faultlab_proc::scan::processes().find(|p| p.ppid == parent as i32).map(|p| p.pid as u32)
}

/// Microseconds per clock tick of /proc/PID/stat (`getconf CLK_TCK`, 100 when unknown).
static TICK_US: std::sync::OnceLock<f64> = std::sync::OnceLock::new();

/// User + system CPU time of one process (all its threads) so far, µs (0 when it is gone).
pub fn cpu_us(pid: u32) -> f64 {
    let tick_us = *TICK_US.get_or_init(|| {
        let out = Command::new("getconf").arg("CLK_TCK").stdin(Stdio::null()).output().ok();
        let hz = out.and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse::<f64>().ok()).unwrap_or(100.0);
        1e6 / hz
    });
    let Some(fields) = proc_stat(&pid.to_string()) else { return 0.0 };
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after `pid (comm)`.
    let ticks: u64 = [11, 12].iter().filter_map(|&i| fields.get(i)?.parse::<u64>().ok()).sum();
    ticks as f64 * tick_us
}

/// Resident memory of process `pid`, KiB (VmRSS in /proc/PID/status; NaN when unreadable).
pub fn rss_kib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let line = status.lines().find_map(|l| l.strip_prefix("VmRSS:"));
    line.and_then(|l| l.trim().trim_end_matches("kB").trim().parse().ok()).unwrap_or(f64::NAN)
}

/// The 1, 5 and 15 minute load averages.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free loopback port").port()
}

/// What `cmd args` prints (stdout, else stderr), trimmed; "unknown" when it prints nothing or does not run.
pub fn version_of(cmd: &Path, args: &[&str]) -> String {
    Command::new(cmd)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .ok()
        .map(|o| {
            let text = if o.stdout.is_empty() { o.stderr } else { o.stdout };
            String::from_utf8_lossy(&text).trim().to_owned()
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// The version in the `package.json` of the npm package folder `dir`.
pub fn package_version(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("package.json")).unwrap_or_default();
    let version = serde_json::from_str::<Value>(&text).ok().and_then(|v| v["version"].as_str().map(str::to_owned));
    version.unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn an_armed_wait_past_its_limit_kills_the_group_and_an_idle_one_does_not() {
        let mut idle = Command::new("sleep").arg("30").process_group(0).spawn().unwrap();
        let idle_watch = Watch::with_stall(idle.id(), Duration::from_millis(50));
        let mut stuck = Command::new("sleep").arg("30").process_group(0).spawn().unwrap();
        let watch = Watch::with_stall(stuck.id(), Duration::from_millis(50));
        watch.arm();
        assert!(exits_within(stuck.id(), Duration::from_secs(10)), "the stalled group is killed");
        let _ = stuck.wait();
        assert!(!exits_within(idle.id(), Duration::from_millis(300)), "an idle watch kills nothing");
        idle_watch.done();
        let _ = idle.kill();
        let _ = idle.wait();
    }
}
