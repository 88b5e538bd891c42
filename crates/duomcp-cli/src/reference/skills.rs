//! A small demo skill set (extension `io.modelcontextprotocol/skills`): two skills with
//! supporting files in sub-folders, one under an organizational prefix.

use duomcp::server::skills::{Skill, SkillRejection, SkillSet};
use duomcp::server::ServerBuilder;

const RELEASE_NOTES: &str = "---
name: release-notes
description: Draft release notes for a duomcp release from the changes merged since the last tag.
license: MIT OR Apache-2.0
metadata:
  author: duomcp
  version: \"1.0\"
---

# Release notes

1. List the changes merged since the last tag.
2. Sort them into the sections of `references/sections.md`.
3. Write one entry per change from `templates/entry.md`, most visible first.
";

const SECTIONS: &str = "# Sections

- **Added**: new methods, options, fixtures.
- **Changed**: behaviour a user can observe.
- **Fixed**: bugs, with the issue number.
";

const ENTRY: &str = "- {summary} ({issue})\n";

const ERAS: &str = "---
name: protocol-eras
description: Tell which MCP revision a client speaks and how its requests differ between the two eras.
---

# Protocol eras

A request is **2026-07-28** when it is `server/discover` or its `_meta` names a protocol
version; otherwise it belongs to a **2025-11-25** session opened with `initialize`.
See `examples/discover.json` for a modern request.
";

const DISCOVER: &str = r#"{
  "jsonrpc": "2.0",
  "id": 1,
  "method": "server/discover",
  "params": {
    "_meta": {
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientCapabilities": {}
    }
  }
}
"#;

/// The demo skills.
pub fn demo() -> Result<SkillSet, SkillRejection> {
    SkillSet::new()
        .skill(
            Skill::new("release-notes")
                .file("SKILL.md", RELEASE_NOTES)
                .file("references/sections.md", SECTIONS)
                .file("templates/entry.md", ENTRY),
        )?
        .skill(
            Skill::new("duomcp/protocol-eras")
                .file("SKILL.md", ERAS)
                .file("examples/discover.json", DISCOVER),
        )
}

pub(super) fn register(b: ServerBuilder) -> ServerBuilder {
    match demo() {
        Ok(skills) => b.skills(skills),
        Err(e) => {
            tracing::error!("the demo skills do not load: {e}");
            b
        }
    }
}
