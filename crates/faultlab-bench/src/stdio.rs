//! The line peer: one stdio connection to an MCP server, direct or through a relay, in a process group of its own
//! (see [`crate::procs`]); every wait is bounded by the group's [`Watch`].

use crate::procs::{Proc, STALL, Watch, cpu_us};
use serde_json::{Value, json};
use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

/// The `tools/call` requests the benches repeat, on server-everything (`echo`, `get-sum`).
#[derive(Clone, Copy)]
pub enum Tool {
    Echo,
    Sum,
}

/// One `tools/call` line (with its newline).
pub fn call_line(id: u64, tool: Tool) -> String {
    match tool {
        Tool::Echo => format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"message\":\"ping\"}}}}}}\n"
        ),
        Tool::Sum => format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"get-sum\",\"arguments\":{{\"a\":1,\"b\":2}}}}}}\n"
        ),
    }
}

/// An `initialize` request in protocol version `era`.
pub fn initialize(id: u64, era: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": era, "capabilities": {}, "clientInfo": {"name": "faultlab-bench", "version": "0"}}})
}

/// The JSON-RPC id of a response line, or None for anything else (notifications, requests from the server, noise);
/// an error response is an error.
pub fn response_id(line: &str) -> Result<Option<u64>, String> {
    let Ok(message) = serde_json::from_str::<Value>(line) else { return Ok(None) };
    let Some(id) = message.get("id").and_then(Value::as_u64) else { return Ok(None) };
    if message.get("method").is_some() {
        return Ok(None); // a request from the server
    }
    if message.get("result").is_none() {
        return Err(format!("error response to id {id}: {}", line.trim_end()));
    }
    Ok(Some(id))
}

pub struct Peer {
    pub label: String,
    pub proc: Proc,
    /// The server process: the group leader when direct, else the relay's child (set by the caller).
    pub server_pid: u32,
    pub stdin: Option<ChildStdin>,
    pub stdout: BufReader<ChildStdout>,
    pub watch: Watch,
    pub next_id: u64,
    pub line: String,
}

impl Peer {
    /// Starts `cmd` with its stdin and stdout piped (stderr discarded); nothing is sent yet.
    pub fn start(mut cmd: Command, label: String) -> Result<Peer, String> {
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
        let mut proc = Proc::spawn(&mut cmd, &label)?;
        let stdin = proc.child.stdin.take();
        let stdout = BufReader::with_capacity(1 << 16, proc.child.stdout.take().expect("piped stdout"));
        let watch = Watch::start(proc.pgid);
        let server_pid = proc.pgid;
        Ok(Peer { label, proc, server_pid, stdin, stdout, watch, next_id: 1, line: String::new() })
    }

    /// CPU time used so far (µs): by the relay process (0 when direct) and by the server process.
    pub fn cpu_us(&self) -> (f64, f64) {
        let server = cpu_us(self.server_pid);
        if self.server_pid == self.proc.pgid { (0.0, server) } else { (cpu_us(self.proc.pgid), server) }
    }

    pub fn send(&mut self, line: &str) -> Result<(), String> {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).map_err(|e| format!("{}: writing to its stdin: {e}", self.label))
    }

    /// Reads lines until the response to `id`; bounded by the watch.
    pub fn wait_for(&mut self, id: u64) -> Result<(), String> {
        self.watch.arm();
        let result = loop {
            self.line.clear();
            match self.stdout.read_line(&mut self.line) {
                Ok(0) => {
                    break Err(format!(
                        "{}: closed stdout (or stalled {STALL:?}) before answering id {id}",
                        self.label
                    ));
                }
                Err(e) => break Err(format!("{}: reading its stdout: {e}", self.label)),
                Ok(_) => {}
            }
            match response_id(&self.line) {
                Ok(Some(got)) if got == id => break Ok(()),
                Ok(_) => {}
                Err(e) => break Err(format!("{}: {e}", self.label)),
            }
        };
        self.watch.idle();
        result
    }

    /// `initialize` (id 0) in `era`, its response, then `notifications/initialized`.
    pub fn initialize(&mut self, era: &str) -> Result<(), String> {
        self.send(&format!("{}\n", initialize(0, era)))?;
        self.wait_for(0)?;
        self.send("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
    }

    /// One request `line` with id `id`, written and answered; its round trip in microseconds.
    pub fn round_trip(&mut self, line: &str, id: u64) -> Result<f64, String> {
        let start = Instant::now();
        self.send(line)?;
        self.wait_for(id)?;
        Ok(start.elapsed().as_secs_f64() * 1e6)
    }

    /// One sequential `tools/call`; its round trip in microseconds.
    pub fn call(&mut self, tool: Tool) -> Result<f64, String> {
        let id = self.next_id;
        self.next_id += 1;
        self.round_trip(&call_line(id, tool), id)
    }

    pub fn calls(&mut self, tool: Tool, n: usize) -> Result<Vec<f64>, String> {
        (0..n).map(|_| self.call(tool)).collect()
    }

    /// Writes `count` `echo` calls without waiting (on a thread of its own, so neither pipe can fill up and
    /// block both sides) while reading every reply; seconds from the first write to the last reply.
    pub fn pipelined(&mut self, count: usize) -> Result<f64, String> {
        let first = self.next_id;
        self.next_id += count as u64;
        let lines: Vec<String> = (first..first + count as u64).map(|id| call_line(id, Tool::Echo)).collect();
        let label = self.label.clone();
        let (stdin, stdout, line, watch) =
            (self.stdin.as_mut().expect("stdin open"), &mut self.stdout, &mut self.line, &self.watch);
        watch.arm();
        let result = std::thread::scope(|s| {
            let start = Instant::now();
            let writer = s.spawn(move || -> Result<(), String> {
                for l in &lines {
                    stdin.write_all(l.as_bytes()).map_err(|e| format!("{label}: pipelined write: {e}"))?;
                }
                Ok(())
            });
            let mut seen = 0;
            while seen < count {
                line.clear();
                match stdout.read_line(line) {
                    Ok(0) => return Err(format!("closed stdout (or stalled) after {seen} of {count} replies")),
                    Err(e) => return Err(format!("reading stdout: {e}")),
                    Ok(_) => {}
                }
                watch.arm();
                if let Some(id) = response_id(line)?
                    && (first..first + count as u64).contains(&id)
                {
                    seen += 1;
                }
            }
            let elapsed = start.elapsed().as_secs_f64();
            writer.join().expect("writer thread")?;
            Ok(elapsed)
        });
        self.watch.idle();
        result.map_err(|e| format!("{}: {e}", self.label))
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.watch.done();
        // Closing stdin first lets a relay end its server in order; the group is killed right after (Proc's drop).
        drop(self.stdin.take());
    }
}
