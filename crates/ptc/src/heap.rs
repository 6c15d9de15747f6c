//! Giving freed memory back to the operating system.
//!
//! glibc's allocator keeps what a thread freed in that thread's arena: after a `lisp_eval`
//! call with a large context (hundreds of thousands of small values, built on one
//! worker thread and freed on another), the server stayed resident at its peak for as
//! long as it ran. `malloc_trim(0)` walks every arena and returns their free pages. The
//! server calls it when it goes idle after work, never while a program runs (the walk
//! locks each arena in turn).

/// Returns free heap pages to the operating system where the allocator keeps them
/// (glibc); elsewhere it does nothing.
pub fn give_back_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    {
        unsafe extern "C" {
            fn malloc_trim(pad: usize) -> i32;
        }
        // SAFETY: malloc_trim takes a plain integer and has no precondition; it only
        // releases pages the allocator itself holds free.
        let released = unsafe { malloc_trim(0) } != 0;
        tracing::debug!(released, "returned free heap pages to the system");
    }
}

/// Caps glibc's malloc arenas at two before any thread starts. glibc gives threads up to
/// eight arenas per core; each keeps what its threads freed, and with evaluation threads
/// renewed after deep runs a long-running server spread its small leftovers over all of
/// them. Elsewhere it does nothing.
pub fn limit_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    {
        unsafe extern "C" {
            fn mallopt(param: i32, value: i32) -> i32;
        }
        /// glibc's `M_ARENA_MAX`.
        const M_ARENA_MAX: i32 = -8;
        // SAFETY: mallopt takes two plain integers; called first thing in main, before
        // any other thread exists.
        let _ = unsafe { mallopt(M_ARENA_MAX, 2) };
    }
}
