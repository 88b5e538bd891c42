#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| duomcp::fuzzing::stdio_server(data));
