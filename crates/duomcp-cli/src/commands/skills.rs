//! `duomcp skills` and `duomcp skill`: list a server's skills, and print a skill's `SKILL.md`
//! (or another of its files) after verifying it against the skill's entry.

use super::{finish, is_url, output, Failure, Outcome, Target};
use clap::Args;
use duomcp::client::skills::{SkillEntry, SkillError, SkillFile, SkillResources};
use duomcp::client::{Client, ClientBuilder};
use serde_json::json;
use std::io::Write;

/// `duomcp skill URI [URL | -- SERVER]` (the URL may also come first).
#[derive(Debug, Args)]
pub struct SkillArgs {
    /// The skill's `SKILL.md` URI, or the URI of another file of the skill.
    #[arg(value_name = "URI")]
    pub first: String,
    /// The server's Streamable HTTP URL (or give a command after `--`); may also come first.
    #[arg(value_name = "URL")]
    pub second: Option<String>,
    #[command(flatten)]
    pub target: Target,
    /// The file's URI, once the URL was taken from the positional words.
    #[arg(skip)]
    pub uri: String,
}

impl SkillArgs {
    /// Sorts the positional words into the URI and the server URL.
    pub(crate) fn normalize(&mut self) {
        let first = std::mem::take(&mut self.first);
        match self.second.take() {
            Some(second) if is_url(&first) && !is_url(&second) => {
                self.target.adopt_url(Some(first));
                self.uri = second;
            }
            second => {
                self.target.adopt_url(second);
                self.uri = first;
            }
        }
    }
}

fn with_skills(b: ClientBuilder) -> ClientBuilder {
    b.skills()
}

impl From<SkillError> for Failure {
    fn from(e: SkillError) -> Self {
        match e {
            SkillError::Client(e) => Failure::from(e),
            other => Failure::new(other.to_string()),
        }
    }
}

/// `12 B`, `3.4 KiB`, `1.2 MiB`.
fn human(bytes: u64) -> String {
    const KIB: f64 = 1024.0;
    let b = bytes as f64;
    if b < KIB {
        format!("{bytes} B")
    } else if b < KIB * KIB {
        format!("{:.1} KiB", b / KIB)
    } else {
        format!("{:.1} MiB", b / KIB / KIB)
    }
}

fn row(s: &SkillEntry) -> Vec<String> {
    let (files, size) = match &s.resources {
        SkillResources::Files(f) => (
            f.len().to_string(),
            human(s.total_size().unwrap_or_default()),
        ),
        SkillResources::Dynamic => ("dynamic".into(), "-".into()),
        SkillResources::Invalid(_) => ("invalid".into(), "-".into()),
    };
    vec![
        s.uri.clone(),
        s.name().unwrap_or_default().to_owned(),
        files,
        size,
        s.description().unwrap_or_default().to_owned(),
    ]
}

/// `duomcp skills`: every skill the server lists.
pub(crate) async fn list(target: &Target) -> Result<Outcome, Failure> {
    let (client, logs) = target.connect_with(with_skills).await?;
    let skills = client.list_all_skills().await?;
    logs.flush().await;
    if target.json {
        target.print_json(&skills)?;
        return finish(client, Outcome::Ok).await;
    }
    if skills.is_empty() {
        println!("(no skills listed)");
        return finish(client, Outcome::Ok).await;
    }
    let rows: Vec<Vec<String>> = skills.iter().map(row).collect();
    print!(
        "{}",
        output::table(&["URI", "NAME", "FILES", "SIZE", "DESCRIPTION"], &rows)
    );
    finish(client, Outcome::Ok).await
}

/// The skills that may hold `uri`, innermost first: `skill://a/b/x.md` → `skill://a/b/SKILL.md`,
/// `skill://a/SKILL.md`.
fn candidates(uri: &str) -> Vec<String> {
    if uri.ends_with("/SKILL.md") {
        return vec![uri.to_owned()];
    }
    let Some((scheme, rest)) = uri.split_once("://") else {
        return Vec::new();
    };
    let segs: Vec<&str> = rest.split('/').collect();
    (1..segs.len())
        .rev()
        .map(|n| format!("{scheme}://{}/SKILL.md", segs[..n].join("/")))
        .collect()
}

/// The entry of the innermost skill that lists `uri` (or whose `SKILL.md` it is). A dynamic
/// or malformed entry is taken as it is: loading it says what it offers.
async fn entry_for(client: &Client, uri: &str) -> Result<SkillEntry, Failure> {
    let mut last_error = None;
    let mut innermost = None;
    for candidate in candidates(uri) {
        match client.get_skill(&candidate).await {
            Ok(entry) => {
                let holds = entry.uri == uri
                    || match &entry.resources {
                        SkillResources::Files(f) => f.iter().any(|r| r.uri == uri),
                        SkillResources::Dynamic | SkillResources::Invalid(_) => true,
                    };
                if holds {
                    return Ok(entry);
                }
                innermost.get_or_insert(entry);
            }
            Err(e) if e.rpc_error().is_some_and(|r| r.code == -32602) => {}
            Err(e) => last_error = Some(e),
        }
    }
    // A skill that does not list the file: reading it is refused, and says so.
    if let Some(entry) = innermost {
        return Ok(entry);
    }
    match last_error {
        Some(e) => Err(e.into()),
        None => Err(Failure::new(format!(
            "no skill served by this server holds {uri}"
        ))),
    }
}

/// `duomcp skill`: the verified `SKILL.md`, or another verified file of the skill.
pub(crate) async fn show(args: &SkillArgs) -> Result<Outcome, Failure> {
    let target = &args.target;
    let (client, logs) = target.connect_with(with_skills).await?;
    let outcome = show_on(&client, args).await;
    logs.flush().await;
    let _ = client.close().await;
    outcome
}

async fn show_on(client: &Client, args: &SkillArgs) -> Result<Outcome, Failure> {
    let entry = entry_for(client, &args.uri).await?;
    let skill = client.load_skill(entry)?;
    let file: SkillFile = if args.uri == skill.entry().uri {
        skill.skill_md().await?
    } else {
        skill.read(&args.uri).await?
    };
    if args.target.json {
        let mut v = json!({
            "skill": skill.entry().uri,
            "uri": file.uri(),
            "mimeType": file.mime_type(),
            "size": file.bytes().len(),
            "verified": file.integrity() == duomcp::client::skills::Integrity::Verified,
        });
        match file.text() {
            Some(text) => v["text"] = json!(text),
            None => {
                use base64::Engine as _;
                v["blob"] = json!(base64::engine::general_purpose::STANDARD.encode(file.bytes()))
            }
        }
        args.target.print_json(&v)?;
        return Ok(Outcome::Ok);
    }
    let mut out = std::io::stdout().lock();
    out.write_all(file.bytes())?;
    if !file.bytes().ends_with(b"\n") && file.text().is_some() {
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(Outcome::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_uri_names_its_possible_skills_innermost_first() {
        assert_eq!(
            candidates("skill://a/b/refs/x.md"),
            [
                "skill://a/b/refs/SKILL.md",
                "skill://a/b/SKILL.md",
                "skill://a/SKILL.md"
            ]
        );
        assert_eq!(candidates("skill://a/SKILL.md"), ["skill://a/SKILL.md"]);
        assert!(candidates("not a uri").is_empty());
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human(812), "812 B");
        assert_eq!(human(2048), "2.0 KiB");
        assert_eq!(human(3 * 1024 * 1024), "3.0 MiB");
    }
}
