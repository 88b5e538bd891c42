//! Links the echo server with packed relative relocations (`DT_RELR`) on Linux with glibc.
//!
//! A position-independent executable carries one relocation per pointer in its data (vtables,
//! `&'static str` tables, panic locations): about 20,000 here, 24 bytes each in `.rela.dyn`,
//! which the dynamic loader reads at every start. Packed (`-z pack-relative-relocs`, GNU ld
//! 2.38+ / lld 15+, glibc 2.36+ at run time), the table is a few kilobytes of bitmaps. Measured
//! on the echo server: `.rela.dyn` 559 KB → see bench/README.md ("Peak RSS"). Only this
//! package's binary is linked so; the library and its users are not affected.
//!
//! `DUOMCP_ECHO_NO_RELR=1` links without it (an older toolchain or C library).

fn main() {
    println!("cargo:rerun-if-env-changed=DUOMCP_ECHO_NO_RELR");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" && std::env::var_os("DUOMCP_ECHO_NO_RELR").is_none() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
