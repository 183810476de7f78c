//! The `swamp` binary: everything lives in the library; this only hands over.

// A pull or push allocates per request on many threads (the S3 and HTTP
// stacks), where glibc's malloc showed up as a sixth of a pull's profile.
// `--features system-alloc` keeps glibc's, which heap profilers
// (heaptrack) see into; mimalloc maps its own memory.
#[cfg(not(feature = "system-alloc"))]
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    // Return freed memory to the OS at once (mimalloc v3's options 15,
    // `purge_delay`, and 4, `arena_eager_commit`), and no transparent huge
    // pages: mimalloc asks for them (with THP in `madvise` mode a
    // 10,000-file pull peaked at 51 MiB instead of 35) and reads its own
    // `allow_thp` option before `main`, so the process turns THP off.
    // Peak RSS is a target, and none of these bought speed in the pull
    // benchmark.
    // SAFETY: mimalloc's C options API, which has no safe wrapper; called
    // before any other thread exists, with options that exist.
    #[cfg(not(feature = "system-alloc"))]
    unsafe {
        libmimalloc_sys::mi_option_set(15, 0);
        libmimalloc_sys::mi_option_set(4, 0);
    }
    #[cfg(target_os = "linux")]
    let _ = rustix::thread::disable_transparent_huge_pages(true);
    swamp::cli::main()
}
