//! The reference relays of figures 1 and 2, run as this bench re-run with `--relay-floor CMD ARGS`,
//! `--relay-parse CMD ARGS` or `--relay-spin CMD ARGS`: what the least a relay process does costs here.

use std::io::{Read as _, Write as _};
use std::process::{Command, Stdio};

/// A reference relay's child (CMD ARGS, its stdin and stdout piped) and the relay's own stdin and stdout.
struct Relayed {
    child: std::process::Child,
    to_child: std::process::ChildStdin,
    from_child: std::process::ChildStdout,
    input: std::fs::File,
    output: std::fs::File,
}

fn relayed(command: &[String], what: &str) -> Relayed {
    use std::os::fd::AsFd;
    let mut child = Command::new(&command[0])
        .args(&command[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start {command:?}: {e}"));
    let to_child = child.stdin.take().expect("piped stdin");
    let from_child = child.stdout.take().expect("piped stdout");
    let own = |fd: std::os::fd::BorrowedFd<'_>| std::fs::File::from(fd.try_clone_to_owned().expect("dup"));
    let (input, output) = (own(std::io::stdin().as_fd()), own(std::io::stdout().as_fd()));
    Relayed { child, to_child, from_child, input, output }
}

/// `--relay-floor CMD ARGS`: the least a stdio relay can do. Runs CMD and copies bytes both ways on two blocking
/// threads, unbuffered, parsing nothing; ends when either side closes.
pub(super) fn floor(command: &[String]) -> ! {
    relay_both_ways(command, "relay-floor", false)
}

/// `--relay-parse CMD ARGS`: the floor relay that also parses every line as JSON (to a `serde_json::Value`, as a
/// relay that matches rules on frames must) before copying it; the least a relay that can fault frames does. A
/// line goes on once it is whole and parsed; the bytes written are the bytes read.
pub(super) fn parse(command: &[String]) -> ! {
    relay_both_ways(command, "relay-parse", true)
}

fn relay_both_ways(command: &[String], what: &str, parse: bool) -> ! {
    let Relayed { mut child, mut to_child, mut from_child, mut input, mut output } = relayed(command, what);
    // Dropping `to_child` at the end of the thread closes the server's stdin.
    std::thread::spawn(move || copy(&mut input, &mut to_child, parse));
    copy(&mut from_child, &mut output, parse);
    let _ = child.kill();
    let _ = child.wait();
    std::process::exit(0)
}

/// Copies `from` to `to` until either side closes: each read as it came, or (`parse`) its whole lines once each
/// has been parsed, the part of a line not yet read kept for the next read.
fn copy(from: &mut impl std::io::Read, to: &mut impl std::io::Write, parse: bool) {
    let mut buf = vec![0u8; 1 << 16];
    // Parsing: bytes read but not written yet (the start of a line).
    let mut partial: Vec<u8> = Vec::new();
    while let Ok(n @ 1..) = from.read(&mut buf) {
        let chunk = &buf[..n];
        let written = if !parse {
            to.write_all(chunk)
        } else {
            partial.extend_from_slice(chunk);
            let Some(end) = partial.iter().rposition(|&b| b == b'\n') else { continue };
            for line in partial[..end].split(|&b| b == b'\n') {
                std::hint::black_box(serde_json::from_slice::<serde_json::Value>(line).ok());
            }
            let written = to.write_all(&partial[..=end]);
            partial.drain(..=end);
            written
        };
        if written.is_err() {
            break;
        }
    }
}

/// `--relay-spin CMD ARGS`: a relay that never sleeps. One thread asks both pipes whether they have bytes (`poll`
/// with a zero timeout) in a loop and copies what they have, so no wake-up of its own lies between a request and
/// its reply: what it costs is the two extra pipe hops. Ends when either side closes.
pub(super) fn spin(command: &[String]) -> ! {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let Relayed { mut child, mut to_child, mut from_child, mut input, mut output } = relayed(command, "relay-spin");
    let mut buf = vec![0u8; 1 << 16];
    let now = Timespec { tv_sec: 0, tv_nsec: 0 };
    'relay: loop {
        let mut fds = [PollFd::new(&input, PollFlags::IN), PollFd::new(&from_child, PollFlags::IN)];
        if poll(&mut fds, Some(&now)).is_err() {
            break;
        }
        let ready = [fds[0].revents(), fds[1].revents()].map(|r| !r.is_empty());
        if ready[0] {
            match input.read(&mut buf) {
                Ok(n @ 1..) if to_child.write_all(&buf[..n]).is_ok() => {}
                _ => break 'relay,
            }
        }
        if ready[1] {
            match from_child.read(&mut buf) {
                Ok(n @ 1..) if output.write_all(&buf[..n]).is_ok() => {}
                _ => break 'relay,
            }
        }
    }
    drop(to_child);
    let _ = child.kill();
    let _ = child.wait();
    std::process::exit(0)
}
