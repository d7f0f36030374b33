//! The lab's one lock policy. Shared state sits behind a `std::sync::Mutex` whose critical sections are short and
//! never span an `.await`, and is locked through [`lock`]; a `tokio::sync::Mutex` is used only where the guard
//! must be held across an `.await` (a child's stdin while a line is written, a process while it is stopped).

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, taking the data even when a thread panicked while holding it: every critical section leaves the
/// data consistent at each step (an insert, a take, a counter), so one panicked task must not take down every
/// connection that shares the state.
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_mutex_still_hands_out_its_data() {
        let mutex = std::sync::Arc::new(Mutex::new(1));
        let held = mutex.clone();
        let _ = std::thread::spawn(move || {
            let mut guard = held.lock().unwrap();
            *guard = 2;
            panic!("poisons the mutex");
        })
        .join();
        assert!(mutex.is_poisoned());
        assert_eq!(*lock(&mutex), 2);
    }
}
