//! The fuzz corpora, replayed on stable in the ordinary test run: every file under
//! `fuzz/corpus/<target>/` and `fuzz/artifacts/<target>/` (the crashes fuzzing found, kept as
//! regressions) goes through the same entry point its cargo-fuzz target calls
//! (`duomcp::fuzzing`, feature `fuzzing`, enabled for this crate's tests by its
//! dev-dependency on itself). An entry panics when one of its oracles fails.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .map(|e| e.expect("a readable directory").path())
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    out
}

#[test]
fn every_corpus_and_artifact_file_passes_its_target() {
    // A panic's own message is printed by the hook; the summary below names the files.
    let mut failures = Vec::new();
    let mut replayed = 0;
    for (name, run) in duomcp::fuzzing::TARGETS {
        let corpus = files(&fuzz_dir().join("corpus").join(name));
        assert!(
            !corpus.is_empty(),
            "fuzz/corpus/{name}/ is empty or missing: every target keeps its corpus"
        );
        let artifacts = files(&fuzz_dir().join("artifacts").join(name));
        for path in corpus.iter().chain(&artifacts) {
            let data = std::fs::read(path).expect("a readable corpus file");
            replayed += 1;
            if catch_unwind(AssertUnwindSafe(|| run(&data))).is_err() {
                failures.push(path.display().to_string());
            }
        }
    }
    assert!(failures.is_empty(), "oracles failed on: {failures:#?}");
    assert!(replayed >= duomcp::fuzzing::TARGETS.len());
}

#[test]
fn every_target_has_a_cargo_fuzz_binary() {
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).expect("fuzz/Cargo.toml");
    for (name, _) in duomcp::fuzzing::TARGETS {
        let source = fuzz_dir().join("fuzz_targets").join(format!("{name}.rs"));
        let text = std::fs::read_to_string(&source)
            .unwrap_or_else(|_| panic!("{} is missing", source.display()));
        assert!(
            text.contains(&format!("duomcp::fuzzing::{name}(data)")),
            "{} does not call its entry point",
            source.display()
        );
        assert!(
            manifest.contains(&format!("name = \"{name}\"")),
            "fuzz/Cargo.toml has no [[bin]] {name}"
        );
    }
}
