//! `faultlab serve` beside Node's reference server: see `faultlab_bench::serve`.

// Every `unsafe` block of the lab is in `faultlab-proc` (the engine's timer registration aside): one crate to audit.
#![forbid(unsafe_code)]

fn main() {
    faultlab_bench::serve::main();
}
