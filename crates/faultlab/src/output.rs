//! Command output that never panics: `out!`/`outln!` for stdout (through [`write_stdout`]), `errln!` for stderr.
//! Declared first in `main.rs` (`#[macro_use]`), so every module of the binary has them without importing from
//! the crate root.

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};

/// `print!` for command output: never panics, even when stdout is a pipe whose reader is gone (`faultlab run … |
/// head -1`). From then on output is dropped and the command finishes its work and its exit code as usual.
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::write_stdout(format_args!($($arg)*)) };
}

/// `errln!` that never panics: when stderr is a pipe whose reader is gone (the program that started faultlab
/// has ended), the line is dropped and the command goes on; `errln!` would panic, and in a task that panic
/// would end, say, the task that stops a server on SIGTERM, leaving the server running.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `println!` as [`out!`] is `print!`.
macro_rules! outln {
    () => { $crate::output::write_stdout(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::output::write_stdout(format_args!("{}\n", format_args!($($arg)*))) };
}

/// Set once stdout cannot be written (its reader closed it): later output is dropped without trying.
static STDOUT_GONE: AtomicBool = AtomicBool::new(false);

/// Writes and flushes command output. A closed pipe (EPIPE; Rust ignores SIGPIPE) ends the output, not the
/// command; any other write error is reported once on stderr.
pub fn write_stdout(args: std::fmt::Arguments) {
    if STDOUT_GONE.load(Ordering::Relaxed) {
        return;
    }
    // Through anstream: the verdicts' colours reach a terminal, and are stripped in a pipe or under NO_COLOR.
    let text = crate::console::colour_verdicts(&args.to_string());
    let mut stdout = anstream::stdout().lock();
    if let Err(e) = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        STDOUT_GONE.store(true, Ordering::Relaxed);
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            let _ =
                writeln!(std::io::stderr(), "faultlab: cannot write to stdout: {e}; the rest of the output is dropped");
        }
    }
}
