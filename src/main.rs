//! The `swamp` binary: everything lives in the library; this only hands over.

// A pull or push allocates per request on many threads (the S3 and HTTP
// stacks), where glibc's malloc showed up as a sixth of a pull's profile.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    // Return freed memory to the OS at once (mimalloc v3's options 15,
    // `purge_delay`, and 4, `arena_eager_commit`): peak RSS is a target,
    // and the delay bought no speed in the pull benchmark.
    // SAFETY: called before any other thread exists.
    unsafe {
        libmimalloc_sys::mi_option_set(15, 0);
        libmimalloc_sys::mi_option_set(4, 0);
    }
    swamp::cli::main()
}
