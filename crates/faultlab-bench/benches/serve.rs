//! `faultlab serve` beside Node's reference server: see `faultlab_bench::serve`.

fn main() {
    faultlab_bench::serve::main();
}
