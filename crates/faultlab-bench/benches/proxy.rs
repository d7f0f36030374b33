//! `faultlab proxy` against the direct path and peer relays: see `faultlab_bench::proxy`.

// Every `unsafe` block of the lab is in `faultlab-proc` (the engine's timer registration aside): one crate to audit.
#![forbid(unsafe_code)]

fn main() {
    faultlab_bench::proxy::main();
}
