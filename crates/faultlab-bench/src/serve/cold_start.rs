//! Figure 1: stdio cold start, ms from spawn to the `initialize` response line; runs alternate servers so drift
//! on a shared machine hits both alike.

use super::{Config, NODE_ERA, Server, compare};
use crate::stats::Stats;
use crate::stdio::{Peer, initialize};
use serde_json::{Value, json};
use std::process::Command;
use std::time::Instant;

pub(super) struct ColdStart {
    ours: Stats,
    node: Stats,
}

/// The command that serves MCP on stdio: `faultlab serve` or `node server-everything stdio`.
pub(super) fn stdio_command(cfg: &Config, server: Server) -> Command {
    match server {
        Server::Ours => {
            let mut c = Command::new(&cfg.tools.faultlab);
            c.arg("serve");
            c
        }
        Server::Node => {
            let mut c = Command::new(&cfg.tools.node);
            c.arg(&cfg.tools.everything).arg("stdio");
            c
        }
    }
}

fn once(cfg: &Config, server: Server) -> f64 {
    let init = format!("{}\n", initialize(0, NODE_ERA));
    let start = Instant::now();
    let mut peer = Peer::start(stdio_command(cfg, server), "stdio server".to_owned()).unwrap_or_else(|e| panic!("{e}"));
    peer.send(&init).and_then(|()| peer.wait_for(0)).unwrap_or_else(|e| panic!("{e}"));
    start.elapsed().as_secs_f64() * 1e3
}

pub(super) fn measure(cfg: &Config) -> ColdStart {
    let (mut ours, mut node) = (Vec::new(), Vec::new());
    for _ in 0..cfg.cold_runs {
        ours.push(once(cfg, Server::Ours));
        node.push(once(cfg, Server::Node));
    }
    ColdStart { ours: Stats::of(&ours), node: Stats::of(&node) }
}

impl ColdStart {
    fn met(&self) -> bool {
        self.ours.median <= 10.0
    }

    pub(super) fn print(&self, cfg: &Config) {
        let what = format!("stdio cold start to `initialize` response, ms (min / median / max, n={})", cfg.cold_runs);
        compare(what, &self.ours, &self.node, false, 3, "ours median <= 10 ms", Some(self.met()));
    }

    pub(super) fn json(&self) -> Value {
        json!({"ours": self.ours.json(), "node": self.node.json(), "ratio_median": self.ours.median / self.node.median,
            "goal": "ours median <= 10 ms", "met": self.met()})
    }
}
