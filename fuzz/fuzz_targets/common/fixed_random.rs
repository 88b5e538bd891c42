//! The same randomness in every run, so that `-seed=N -runs=M` gives the same run every time.
//!
//! The code under test draws randomness in several places it does not choose: std's `HashMap`
//! keys (`RandomState`: duomcp's own maps, serde_json's `Map`, jsonwebtoken's sets), ahash's
//! seeds (jsonschema), the tokio scheduler's generator (seeded from a `RandomState`), and the
//! `getrandom` crate (`SealingKey::random`). On Linux every one of them gets its bytes from
//! glibc's `getrandom(3)`, called or looked up by name (std and the `getrandom` crate use
//! `dlsym`). A fuzz target defines `getrandom` itself (this file, included by each target):
//! the executable's definition comes first both at link time and for `dlsym`, so all of them
//! read one fixed stream (SplitMix64 of a counter) instead of the kernel's. Only the fuzz
//! binaries have it; the library and its replay test on stable (`tests/fuzz_replay.rs`) are
//! untouched.
//!
//! ahash needs one more thing: its fixed seeds (it takes no runtime randomness under
//! `cfg(fuzzing)`) are mixed, per hasher, with the address of its random source, which ASLR
//! moves from run to run. `init` gives it a source that counts instead.
//!
//! foldhash (the hasher of `hashbrown`'s maps in `jsonschema` and `referencing`) seeds itself
//! once per process from addresses (a stack slot, a function, a static, a fresh box) and the
//! time of day, with no hook. The addresses stop moving when ASLR is off for the run
//! (`scripts/fuzz.sh` starts the CI form under `setarch -R`), and this file defines
//! `clock_gettime(2)` too: `CLOCK_REALTIME` reads a fixed clock (2026-01-01T00:00:00Z, one
//! microsecond later at every call); every other clock goes to the kernel. Monotonic time is
//! left alone (tokio's paused clock already makes the timers repeat).
//!
//! `init` (each target's libFuzzer `init`) also fails loudly when the interposition does not
//! take (a std or glibc that reads the kernel another way): without it, the runs would vary
//! again silently.

use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes handed out so far: the position in the fixed stream.
static DRAWN: AtomicU64 = AtomicU64::new(0);

fn byte_at(i: u64) -> u8 {
    // SplitMix64 of the word index, one byte of it.
    let mut z = (i / 8).wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    z.to_le_bytes()[(i % 8) as usize]
}

/// `ssize_t getrandom(void *buf, size_t buflen, unsigned int flags)`, with the fixed stream.
///
/// # Safety
/// As getrandom(3): `buf` is valid for writes of `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn getrandom(buf: *mut u8, len: usize, _flags: u32) -> isize {
    let start = DRAWN.fetch_add(len as u64, Ordering::SeqCst);
    for i in 0..len {
        // SAFETY: the caller gives `len` writable bytes at `buf` (getrandom(3)'s contract).
        unsafe { buf.add(i).write(byte_at(start + i as u64)) };
    }
    isize::try_from(len).unwrap_or(isize::MAX)
}

/// Reads of `CLOCK_REALTIME` so far.
static REALTIME_READS: AtomicU64 = AtomicU64::new(0);

/// Where the fixed `CLOCK_REALTIME` starts: 2026-01-01T00:00:00Z, in seconds since the epoch.
const FIXED_EPOCH_SECS: u64 = 1_767_225_600;

/// `int clock_gettime(clockid_t clock, struct timespec *tp)`: `CLOCK_REALTIME` from the fixed
/// clock, every other clock from the kernel (the system call; the vDSO is glibc's and is not
/// reached from here).
///
/// # Safety
/// As clock_gettime(2): `tp` is valid for writes of one `timespec`.
#[no_mangle]
pub unsafe extern "C" fn clock_gettime(
    clock: libc::clockid_t,
    tp: *mut libc::timespec,
) -> libc::c_int {
    if clock == libc::CLOCK_REALTIME {
        let micros = REALTIME_READS.fetch_add(1, Ordering::SeqCst);
        let secs = FIXED_EPOCH_SECS + micros / 1_000_000;
        let nanos = (micros % 1_000_000) * 1_000;
        // SAFETY: the caller gives one writable `timespec` at `tp` (clock_gettime(2)'s contract).
        unsafe {
            (*tp).tv_sec = secs as libc::time_t;
            (*tp).tv_nsec = nanos as libc::c_long;
        }
        return 0;
    }
    // SAFETY: the same arguments, passed on to the system call of the same contract.
    unsafe { libc::syscall(libc::SYS_clock_gettime, clock, tp) as libc::c_int }
}

/// ahash's per-hasher seeds: a counter, not an address.
struct Counting(AtomicU64);

impl ahash::random_state::RandomSource for Counting {
    fn gen_hasher_seed(&self) -> usize {
        self.0.fetch_add(0x9E37_79B9, Ordering::SeqCst) as usize
    }
}

/// Installs ahash's source; panics unless std's hash keys came from the fixed stream and the
/// time of day from the fixed clock.
pub fn init() {
    ahash::random_state::set_random_source(Counting(AtomicU64::new(1)))
        .expect("ahash's random source is set before any ahash map is made");
    let _ = std::collections::hash_map::RandomState::new();
    assert!(
        DRAWN.load(Ordering::SeqCst) > 0,
        "std's RandomState did not read its keys through getrandom(3): the fuzz runs would not \
         repeat (fuzz/fuzz_targets/common/fixed_random.rs)"
    );
    let now = std::time::UNIX_EPOCH
        .elapsed()
        .map(|d| d.as_secs())
        .unwrap_or(0);
    assert!(
        (FIXED_EPOCH_SECS..FIXED_EPOCH_SECS + 86_400).contains(&now),
        "std's SystemTime did not read clock_gettime(2) through this file: the fuzz runs would \
         not repeat (fuzz/fuzz_targets/common/fixed_random.rs)"
    );
}
