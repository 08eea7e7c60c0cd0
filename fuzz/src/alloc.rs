//! The system allocator with a record of the largest single allocation made while a target
//! watches, so a target can check that a frame over its cap was refused without being allocated.
//!
//! It is the one place with `unsafe` in this crate besides AFL++'s entry points: `GlobalAlloc` is
//! an unsafe trait, and every method only forwards to [`System`].
#![allow(unsafe_code)]

use std::{
    alloc::{GlobalAlloc, Layout, System},
    cell::Cell,
};

// Per thread, so that tests running side by side do not count each other's allocations. Const
// initialisers: reading them never allocates.
thread_local! {
    static WATCHING: Cell<bool> = const { Cell::new(false) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

/// The allocator; install it with `#[global_allocator]` (the crate does).
#[derive(Debug)]
pub struct Tracking;

fn note(size: usize) {
    // `try_with`: a thread being torn down may still allocate after its locals are gone.
    if WATCHING.try_with(Cell::get).unwrap_or(false) {
        let _ = LARGEST.try_with(|largest| largest.set(largest.get().max(size)));
    }
}

// SAFETY: every method forwards its arguments unchanged to the system allocator, which upholds
// the trait's contract; the bookkeeping touches only this thread's two cells.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's pointer and layout, from this allocator (so from System).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: the caller's arguments, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Runs `work` and returns its result with the largest single allocation it made on this thread
/// (the frame readers it is used for run on the caller's thread).
pub fn largest_allocation<T>(work: impl FnOnce() -> T) -> (T, usize) {
    LARGEST.set(0);
    WATCHING.set(true);
    let result = work();
    WATCHING.set(false);
    (result, LARGEST.get())
}
