//! `/proc` read as a list of processes: what the lab looks at to find what is left of a run, of a bench or of a
//! sandbox (a process that ends while being read is skipped).

/// One process as `/proc/PID/stat` describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: i32,
    /// The state letter (`R`, `S`, `Z`, …).
    pub state: char,
    pub ppid: i32,
    pub pgrp: i32,
}

impl ProcStat {
    /// Ended but not yet reaped by its parent.
    pub fn zombie(&self) -> bool {
        self.state == 'Z'
    }
}

/// Process `pid` as `/proc/PID/stat` describes it now (`None`: gone or unreadable).
pub fn stat(pid: i32) -> Option<ProcStat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name (which may hold spaces and parentheses), closed by the last ')'.
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(ProcStat { pid, state, ppid, pgrp })
}

/// Every process visible in `/proc` now.
pub fn processes() -> impl Iterator<Item = ProcStat> {
    let entries = std::fs::read_dir("/proc").into_iter().flatten().flatten();
    entries.filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok()).filter_map(stat)
}

/// Every process whose chain of parents leads to `root` (not `root` itself).
pub fn descendants(root: i32) -> Vec<i32> {
    let parents: Vec<(i32, i32)> = processes().map(|p| (p.pid, p.ppid)).collect();
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(parents.iter().filter(|(_, ppid)| *ppid == parent).map(|(pid, _)| *pid));
        i += 1;
    }
    found.remove(0);
    found
}

/// Whether process `pid`'s command line holds `text` (false when it is gone or unreadable).
pub fn cmdline_contains(pid: i32, text: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| String::from_utf8_lossy(&c).contains(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt as _;

    /// A child in a group of its own is seen with this process as its parent, its own pid as its group, and as a
    /// descendant; its command line is read.
    #[test]
    fn a_child_is_found_with_its_parent_group_and_command_line() {
        let mut child = std::process::Command::new("sleep").arg("29.5").process_group(0).spawn().unwrap();
        let pid = child.id() as i32;
        let me = std::process::id() as i32;
        let seen = processes().find(|p| p.pid == pid).expect("the child is listed");
        assert_eq!((seen.ppid, seen.pgrp), (me, pid));
        assert!(!seen.zombie());
        assert!(descendants(me).contains(&pid));
        assert!(cmdline_contains(pid, "29.5"));
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(stat(pid), None, "reaped: gone from /proc");
    }
}
