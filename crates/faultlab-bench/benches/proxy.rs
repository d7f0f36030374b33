//! `faultlab proxy` against the direct path and peer relays: see `faultlab_bench::proxy`.

fn main() {
    faultlab_bench::proxy::main();
}
