//! Sleeping to the microsecond for latency faults.
//!
//! tokio's timer counts whole milliseconds and rounds a deadline up, and epoll's timeout is rounded up again, so a
//! 50 ms latency fault on tokio's timer alone went out 0.7–2 ms late. [`precise_sleep`] sleeps the bulk on tokio's
//! timer and the last few milliseconds on a Linux timerfd the reactor watches, which fires to the microsecond, then
//! polls through the last half millisecond so that the wake-up itself is not late.

use std::time::Duration;

/// What is left to the timerfd (3 ms): more than tokio's two roundings together, so the coarse part never
/// overshoots the deadline on an idle machine.
const SLACK: Duration = Duration::from_millis(3);
/// The end of the sleep spent polling (0.5 ms) rather than blocked: a thread woken from an idle CPU starts about
/// 0.1 ms late (more on a virtual machine whose idle vCPU was descheduled); one already running does not.
const POLL: Duration = Duration::from_micros(500);

/// Sleeps for `d`. Under a paused tokio clock (tests) it sleeps on tokio's clock only, so virtual time stays exact.
pub async fn precise_sleep(d: Duration) {
    if d <= SLACK * 2 {
        // Too short to be worth a second timer; the rounding is then at most the fault's own size.
        tokio::time::sleep(d).await;
        return;
    }
    let (virtual_start, real_start) = (tokio::time::Instant::now(), std::time::Instant::now());
    tokio::time::sleep(d - SLACK).await;
    if virtual_start.elapsed() > real_start.elapsed() + SLACK {
        // tokio's clock ran ahead of the real one: it is paused and auto-advancing. Finish on it.
        tokio::time::sleep_until(virtual_start + d).await;
        return;
    }
    let deadline = real_start + d;
    #[cfg(target_os = "linux")]
    if timerfd::sleep_until(deadline - POLL).await.is_ok() {
        // Yielding, not spinning: the runtime polls its reactor without blocking between turns, so other
        // messages keep flowing while this one waits out its last half millisecond.
        while std::time::Instant::now() < deadline {
            tokio::task::yield_now().await;
        }
        return;
    }
    tokio::time::sleep(deadline.saturating_duration_since(std::time::Instant::now())).await;
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
mod timerfd {
    use nix::sys::time::TimeSpec;
    use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
    use std::os::fd::{AsFd as _, AsRawFd, RawFd};
    use std::time::Instant;
    use tokio::io::Interest;
    use tokio::io::unix::AsyncFd;

    struct Timer(TimerFd);

    impl AsRawFd for Timer {
        fn as_raw_fd(&self) -> RawFd {
            self.0.as_fd().as_raw_fd()
        }
    }

    /// Waits until `deadline` (CLOCK_MONOTONIC, as `std::time::Instant`) on a one-shot timerfd.
    pub(super) async fn sleep_until(deadline: Instant) -> std::io::Result<()> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        let timer = TimerFd::new(ClockId::CLOCK_MONOTONIC, TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC)?;
        timer.set(Expiration::OneShot(TimeSpec::from_duration(left)), TimerSetTimeFlags::empty())?;
        // SAFETY: `Timer` owns the timerfd for as long as the `AsyncFd` holds it and always returns that same
        // descriptor, which is what registration requires.
        let timer = unsafe { AsyncFd::register_with_interest(Timer(timer), Interest::READABLE) }
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        // Readable means expired; a spurious wake-up before the deadline waits again.
        while Instant::now() < deadline {
            timer.readable().await?.clear_ready();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn it_is_never_early() {
        // Ten 20 ms sleeps on the real clock: none may end early (a precision claim that can fail); lateness is
        // measured by the proxy benchmark, not asserted here.
        for _ in 0..10 {
            let start = std::time::Instant::now();
            precise_sleep(Duration::from_millis(20)).await;
            assert!(start.elapsed() >= Duration::from_millis(20));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_paused_clock_advances_by_exactly_the_delay() {
        let start = tokio::time::Instant::now();
        precise_sleep(Duration::from_millis(250)).await;
        assert_eq!(start.elapsed(), Duration::from_millis(250));
        precise_sleep(Duration::from_millis(4)).await;
        assert_eq!(start.elapsed(), Duration::from_millis(254));
    }
}
