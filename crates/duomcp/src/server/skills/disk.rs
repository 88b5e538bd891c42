//! Skills from a directory tree: finding the folders that hold a `SKILL.md`, listing their
//! files and digesting them (digests cached while a file's length and modification time stay put).

use super::{check, file_uri, Content, Loaded, LoadedFile, SkillProblem, SKILL_MD};
use crate::common::skills::digest_of;
use crate::util::lock;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

/// Digests of files on disk, reused while a file's length and modification time stay put.
pub(super) type DigestCache = Mutex<HashMap<PathBuf, (u64, SystemTime, String)>>;

fn is_hidden(name: &std::ffi::OsStr) -> bool {
    name.to_string_lossy().starts_with('.')
}

/// Regular, non-hidden files below `dir`, as `/`-separated relative paths (sorted).
fn walk_files(dir: &Path) -> std::io::Result<Vec<String>> {
    fn go(dir: &Path, prefix: &str, out: &mut Vec<String>) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name();
            if is_hidden(&name) {
                continue;
            }
            let Some(name) = name.to_str() else { continue };
            let kind = entry.file_type()?;
            let rel = if prefix.is_empty() {
                name.to_owned()
            } else {
                format!("{prefix}/{name}")
            };
            if kind.is_dir() {
                go(&entry.path(), &rel, out)?;
            } else if kind.is_file() {
                out.push(rel);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    go(dir, "", &mut out)?;
    out.sort();
    Ok(out)
}

fn load_dir_skill(
    dir: &Path,
    path: &str,
    cache: &DigestCache,
) -> Result<Loaded, Vec<SkillProblem>> {
    let problem = |m: String| SkillProblem {
        location: dir.display().to_string(),
        message: m,
    };
    let rels =
        walk_files(dir).map_err(|e| vec![problem(format!("cannot list the folder: {e}"))])?;
    let mut files = Vec::with_capacity(rels.len());
    let mut total = 0u64;
    let mut skill_md = None;
    for rel in rels {
        let file = dir.join(&rel);
        let meta = std::fs::metadata(&file)
            .map_err(|e| vec![problem(format!("cannot read {rel}: {e}"))])?;
        let size = meta.len();
        let mtime = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        total += size;
        let cached = lock(cache)
            .get(&file)
            .filter(|(l, m, _)| *l == size && *m == mtime)
            .map(|(_, _, d)| d.clone());
        let digest = match (cached, rel == SKILL_MD) {
            (Some(d), false) => d,
            (cached, is_skill_md) => {
                let bytes = std::fs::read(&file)
                    .map_err(|e| vec![problem(format!("cannot read {rel}: {e}"))])?;
                let d = cached.unwrap_or_else(|| digest_of(&bytes));
                lock(cache).insert(file.clone(), (size, mtime, d.clone()));
                if is_skill_md {
                    skill_md = Some(bytes);
                }
                d
            }
        };
        files.push(LoadedFile {
            uri: file_uri(path, &rel),
            digest,
            size,
            rel,
            content: Content::Disk(file),
        });
    }
    let frontmatter = check(path, skill_md.as_deref(), files.len(), total)
        .map_err(|ps| ps.into_iter().map(problem).collect::<Vec<_>>())?;
    Ok(Loaded {
        uri: file_uri(path, SKILL_MD),
        path: path.to_owned(),
        frontmatter,
        files,
    })
}

/// Every skill below `root`, and the problems of those that do not load.
pub(super) fn scan_root(root: &Path, cache: &DigestCache) -> (Vec<Loaded>, Vec<SkillProblem>) {
    fn find(dir: &Path, prefix: &str, found: &mut Vec<(PathBuf, String)>) -> std::io::Result<()> {
        let mut subdirs = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name();
            if is_hidden(&name) {
                continue;
            }
            let kind = entry.file_type()?;
            if kind.is_file() && name == SKILL_MD {
                found.push((dir.to_path_buf(), prefix.to_owned()));
            } else if kind.is_dir() {
                subdirs.push((entry.path(), name));
            }
        }
        for (path, name) in subdirs {
            let name = name.to_string_lossy();
            let rel = if prefix.is_empty() {
                name.into_owned()
            } else {
                format!("{prefix}/{name}")
            };
            find(&path, &rel, found)?;
        }
        Ok(())
    }
    let mut found = Vec::new();
    if let Err(e) = find(root, "", &mut found) {
        return (
            Vec::new(),
            vec![SkillProblem {
                location: root.display().to_string(),
                message: format!("cannot read the skills folder: {e}"),
            }],
        );
    }
    let mut skills = Vec::new();
    let mut problems = Vec::new();
    for (dir, path) in found {
        if path.is_empty() {
            problems.push(SkillProblem {
                location: dir.display().to_string(),
                message: format!(
                    "{SKILL_MD} sits at the root of the skills folder; put each skill in a folder named after it"
                ),
            });
            continue;
        }
        match load_dir_skill(&dir, &path, cache) {
            Ok(l) => skills.push(l),
            Err(ps) => problems.extend(ps),
        }
    }
    (skills, problems)
}
