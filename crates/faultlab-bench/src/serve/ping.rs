//! Figure 2: stdio JSON-RPC `ping` round trip, µs, on one initialized connection, after a warm-up.

use super::cold_start::stdio_command;
use super::{Config, NODE_ERA, Server, compare};
use crate::stats::Stats;
use crate::stdio::Peer;
use serde_json::{Value, json};

pub(super) struct Ping {
    ours: Stats,
    node: Stats,
}

fn round_trips(cfg: &Config, server: Server) -> Vec<f64> {
    let mut peer = Peer::start(stdio_command(cfg, server), "stdio server".to_owned()).unwrap_or_else(|e| panic!("{e}"));
    peer.initialize(NODE_ERA).unwrap_or_else(|e| panic!("{e}"));
    let mut samples = Vec::with_capacity(cfg.ping_count);
    for id in 1..=(cfg.ping_warmup + cfg.ping_count) as u64 {
        let ping = format!("{}\n", json!({"jsonrpc": "2.0", "id": id, "method": "ping"}));
        let us = peer.round_trip(&ping, id).unwrap_or_else(|e| panic!("{e}"));
        if id > cfg.ping_warmup as u64 {
            samples.push(us);
        }
    }
    samples
}

pub(super) fn measure(cfg: &Config) -> Ping {
    Ping { ours: Stats::of(&round_trips(cfg, Server::Ours)), node: Stats::of(&round_trips(cfg, Server::Node)) }
}

impl Ping {
    fn ratio(&self) -> f64 {
        self.ours.median / self.node.median
    }

    pub(super) fn print(&self, cfg: &Config) {
        let what = format!("stdio `ping` round trip, µs (min / median / p99 / max, n={})", cfg.ping_count);
        compare(what, &self.ours, &self.node, true, 3, "<= 0.3x", Some(self.ratio() <= 0.3));
    }

    pub(super) fn json(&self, cfg: &Config) -> Value {
        json!({"ours": self.ours.json(), "node": self.node.json(), "warmup": cfg.ping_warmup,
            "ratio_median": self.ratio(), "goal": "ours/node <= 0.3", "met": self.ratio() <= 0.3})
    }
}
