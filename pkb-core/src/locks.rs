//! Taking a lock that a panicking thread left poisoned.
//!
//! Every lock in this crate guards data that stays whole across a panic: collections changed
//! in one step, caches whose entries are replaced whole, and connections whose transaction
//! rolled back when the panic dropped it. So a poisoned lock only means one request failed,
//! and the server goes on serving the others instead of failing each after it.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `mutex`, poisoned or not.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Reads `lock`, poisoned or not.
#[cfg_attr(
    not(feature = "auth"),
    allow(
        dead_code,
        reason = "only the OAuth key set, behind `auth`, is an RwLock"
    )
)]
pub(crate) fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// Writes `lock`, poisoned or not.
#[cfg_attr(
    not(feature = "auth"),
    allow(
        dead_code,
        reason = "only the OAuth key set, behind `auth`, is an RwLock"
    )
)]
pub(crate) fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}
