#![no_main]
#[path = "common/fixed_random.rs"]
mod fixed_random;
libfuzzer_sys::fuzz_target!(init: fixed_random::init(), |data: &[u8]| duomcp::fuzzing::uri_template(data));
