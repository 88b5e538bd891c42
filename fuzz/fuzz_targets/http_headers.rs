#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| duomcp::fuzzing::http_headers(data));
