//! What the test binaries that count live handles share. live_handles()
//! counts every handle of the process, so such a binary runs its tests one
//! at a time (serial) and checks each case leaves nothing behind (no_leak).
use std::sync::{Mutex, MutexGuard};

static LOCK: Mutex<()> = Mutex::new(());

/// Holds the binary's lock for one test.
pub fn serial() -> MutexGuard<'static, ()> {
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `case` and checks that it leaves no handle behind.
pub fn no_leak(case: impl FnOnce()) {
    let before = spmd::live_handles().unwrap();
    case();
    assert_eq!(spmd::live_handles().unwrap(), before, "the case leaked a handle");
}
