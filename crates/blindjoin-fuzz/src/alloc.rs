//! A global allocator that refuses any single allocation above [`CAP`], so that a large
//! allocation driven by an input ends the run (Rust's allocation-failure handler aborts with
//! the size) instead of passing unnoticed. The AFL harness and the smoke test install it.

use std::alloc::{GlobalAlloc, Layout, System};

/// The largest single allocation a fuzz run may make (32 MiB). The targets run sets of at most
/// 21 items on inputs of at most a few MiB, so nothing legitimate comes near it.
pub const CAP: usize = 32 << 20;

/// The system allocator with every request above [`CAP`] refused.
#[derive(Clone, Copy, Debug, Default)]
pub struct CappedAlloc;

// SAFETY: every call is forwarded unchanged to `System`, except requests above `CAP`, which
// return null as the `GlobalAlloc` contract allows for a failed allocation.
unsafe impl GlobalAlloc for CappedAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > CAP {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller upholds `alloc`'s contract for `layout`.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() > CAP {
            return std::ptr::null_mut();
        }
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout` (we forward every allocation).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > CAP {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller upholds `realloc`'s contract; `ptr` came from `System`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
