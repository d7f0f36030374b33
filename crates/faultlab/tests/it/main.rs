//! End-to-end tests of the `faultlab` binary, in one test binary (one link instead of one per file).
//!
//! Each module was its own test binary before; its first line says what it covers. `common` holds what they share:
//! a raw line client on stdio, the listening-line reader for `--port 0`, the binary's path.

mod auth;
mod auth_rules;
mod auth_run;
mod baseline;
mod cli;
mod common;
mod config;
mod diagnose;
mod eval;
mod eval_auth;
mod eval_model;
mod eval_report;
mod eval_seal;
mod exit_codes;
mod explore;
mod faults;
mod init;
mod limits;
mod listener_bounds;
mod model;
mod proxy;
mod proxy_http;
mod proxy_remote;
mod proxy_replay;
mod proxy_restart;
mod reference_client;
mod reliability;
mod rmcp_client;
mod run;
mod schemas;
mod serve_stdio;
mod ship;
mod stdio_fuzz;
mod stdio_reliability;
mod streams;
mod workspace_server;
