#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| duomcp::fuzzing::jsonrpc_decode(data));
