//! Serving skills (extension `io.modelcontextprotocol/skills`): one from memory, and every skill
//! under the directories given on the command line (each folder holding a `SKILL.md`; the
//! folders above it are its path). Their files become `skill://` resources.
//!
//! | ↔ | method | what it does |
//! |---|---|---|
//! | ← | `skills/list` | every skill: URI, frontmatter, files with digests |
//! | ← | `skills/get` | one skill, by the URI of its `SKILL.md` |
//! | ← | `resources/read` | a file of a skill (`skill://greeting/SKILL.md`) |
//! | ← | `resources/directory/read` | the files in a folder of a skill |
//!
//! ```text
//! $ cargo run -q -p duomcp --example skill -- ~/my-skills
//! # 2026-07-28 (in 2025-11-25: `initialize` first, then the same calls without `_meta`)
//! {"jsonrpc":"2.0","id":1,"method":"skills/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}
//! # ← {"jsonrpc":"2.0","id":1,"result":{"skills":[{"uri":"skill://greeting/SKILL.md","frontmatter":{"name":"greeting",…},…},…],…}}
//! {"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"skill://greeting/SKILL.md","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}
//! # ← {"jsonrpc":"2.0","id":2,"result":{"contents":[{"uri":"skill://greeting/SKILL.md","text":"---\nname: greeting\n…"}],…}}
//! ```
//!
//! A skill that breaks the rules (a `name` that differs from its folder, no `description`, too
//! many files) stops the server from starting, with every problem listed.

// ANCHOR: skills
use duomcp::server::skills::{Skill, SkillSet};
use duomcp::server::Server;

const GREETING: &str = "---
name: greeting
description: Greet people warmly, by name, in their language.
---
# Greeting

1. Ask for the person's name if you do not know it.
2. Greet them by name; see `phrases.md` for other languages.
";

const PHRASES: &str = "- French: Bonjour, {name} !\n- Spanish: ¡Hola, {name}!\n";

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut skills = SkillSet::new()
        .skill(
            Skill::new("greeting")
                .file("SKILL.md", GREETING)
                .file("phrases.md", PHRASES),
        )
        .map_err(std::io::Error::other)?;
    for dir in std::env::args_os().skip(1) {
        skills = skills.dir(&dir).map_err(std::io::Error::other)?;
    }
    Server::builder()
        .name("skill-example")
        .skills(skills)
        .build()
        .serve_stdio()
        .await
}
// ANCHOR_END: skills
