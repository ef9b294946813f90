//! The allocator of this library: the system's, with its large blocks backed by huge pages where the
//! kernel gives them on request (transparent huge pages in `madvise` mode). The segmenter's trie and
//! the lexicon are tables of tens of megabytes read at random, a few reads per character; with 4 KiB
//! pages nearly each such read also missed the address translation caches.

use std::alloc::{GlobalAlloc, Layout, System};

pub struct Allocator;

/// Blocks from this size on are advised (smaller ones hold no whole huge page worth asking for).
const LARGE: usize = 4 << 20;

/// Ask for huge pages for the whole 2 MiB pages of the `len` bytes at `at` (a hint: nothing changes
/// but how the memory is mapped).
fn advise(at: *mut u8, len: usize) {
    #[cfg(target_os = "linux")]
    if len >= LARGE && !at.is_null() {
        extern "C" {
            fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: i32) -> i32;
        }
        const MADV_HUGEPAGE: i32 = 14;
        const HUGE: usize = 2 << 20;
        let start = (at as usize).next_multiple_of(HUGE);
        let end = (at as usize + len) & !(HUGE - 1);
        if end > start {
            // SAFETY: a hint on pages of a block just allocated; it changes no content
            unsafe { madvise(start as *mut std::ffi::c_void, end - start, MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (at, len);
}

// SAFETY: every call is the system allocator's, with a hint added on the block it returned
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let at = unsafe { System.alloc(layout) };
        advise(at, layout.size());
        at
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let at = unsafe { System.alloc_zeroed(layout) };
        advise(at, layout.size());
        at
    }

    unsafe fn dealloc(&self, at: *mut u8, layout: Layout) {
        unsafe { System.dealloc(at, layout) }
    }

    unsafe fn realloc(&self, at: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        let moved = unsafe { System.realloc(at, layout, size) };
        advise(moved, size);
        moved
    }
}
