//! Installing and uninstalling the hooks in the agent CLIs' settings files.

use super::*;

const USER_SETTINGS: &str = r#"{
  "model": "opus",
  "permissions": {
    "allow": [
      "Bash(npm run test:*)"
    ]
  },
  "hooks": {
    "PostToolUse": [
      {
        "matcher": "Write|Edit",
        "hooks": [
          {
            "type": "command",
            "command": "npx prettier --write"
          }
        ]
      }
    ]
  },
  "env": {
    "FOO": "1"
  }
}
"#;

#[test]
fn install_then_uninstall_gives_each_settings_file_back() {
    let p = polis();
    let root = project(&p);
    for rel in [
        ".claude/settings.json",
        ".codex/hooks.json",
        ".gemini/settings.json",
    ] {
        std::fs::create_dir_all(root.join(rel).parent().unwrap()).unwrap();
        std::fs::write(root.join(rel), USER_SETTINGS).unwrap();
    }
    std::fs::write(root.join("CLAUDE.md"), "# House rules\n\nBe brief.\n").unwrap();
    let out = p.polisd(&["hooks", "install", "--all", "--as", ME, "--bin", BIN]);
    assert!(out.status.success(), "{out:?}");
    let claude: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join(".claude/settings.json")).unwrap())
            .unwrap();
    assert_eq!(claude["model"], "opus");
    assert_eq!(
        claude["hooks"]["PostToolUse"][0]["hooks"][0]["command"],
        "npx prettier --write"
    );
    assert_eq!(
        claude["hooks"]["PostToolUse"][1]["hooks"][0]["command"],
        format!("{BIN} hook claude notices")
    );
    assert_eq!(
        claude["hooks"]["SessionStart"][0]["hooks"][0]["command"],
        format!("{BIN} hook claude prime")
    );
    let gemini: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join(".gemini/settings.json")).unwrap())
            .unwrap();
    assert_eq!(
        gemini["hooks"]["AfterTool"][0]["hooks"][0]["name"],
        "polisd-notices"
    );
    let claude_md = std::fs::read_to_string(root.join("CLAUDE.md")).unwrap();
    assert!(claude_md.starts_with("# House rules\n\nBe brief.\n"));
    assert!(claude_md.contains("polisd prime --as <your-citizen-id>"));
    assert!(
        std::fs::read_to_string(root.join(".agents/skills/polis-protocol/SKILL.md"))
            .unwrap()
            .contains("name: polis-protocol")
    );
    // Installing again changes nothing (a warning, such as Gemini CLI not trusting this
    // machine's temporary folder, is not a change).
    let again = p.polisd(&["hooks", "install", "--all", "--as", ME, "--bin", BIN]);
    assert!(
        text(&again)
            .lines()
            .all(|l| l.starts_with("unchanged") || l.starts_with("warning: ")),
        "{}",
        text(&again)
    );
    let status = p.polisd(&["hooks", "status", "--json"]);
    let s: Value = serde_json::from_str(&text(&status)).unwrap();
    let rows = s.as_array().unwrap();
    assert_eq!(rows.len(), 4, "{s:#}");
    for row in rows {
        if row["cli"] == "aider" {
            // Aider has no hooks: it reads the bridge pointer its config lists.
            assert_eq!(row["reads"], json!(["AGENTS.md"]), "{row:#}");
        } else {
            assert_eq!(row["hooks"].as_array().unwrap().len(), 3, "{row:#}");
        }
    }

    let out = p.polisd(&["hooks", "uninstall", "--all"]);
    assert!(out.status.success(), "{out:?}");
    for rel in [
        ".claude/settings.json",
        ".codex/hooks.json",
        ".gemini/settings.json",
    ] {
        assert_eq!(
            std::fs::read_to_string(root.join(rel)).unwrap(),
            USER_SETTINGS,
            "{rel}"
        );
    }
    // The Aider config polisd created goes with it.
    assert!(!root.join(".aider.conf.yml").exists());
}

#[test]
fn install_refuses_bad_json_read_only_files_and_unknown_ids_writing_nothing() {
    let p = polis();
    let root = project(&p);
    let claude_md = std::fs::read_to_string(root.join("CLAUDE.md")).unwrap();
    std::fs::write(root.join("CLAUDE.md"), "# Mine\n").unwrap();
    std::fs::create_dir_all(root.join(".claude")).unwrap();
    let bad = "{\n  \"model\": \"opus\",\n  \"hooks\": {,\n}\n";
    std::fs::write(root.join(".claude/settings.json"), bad).unwrap();
    let out = p.polisd(&["hooks", "install", "--all", "--as", ME, "--bin", BIN]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(".claude/settings.json is not valid JSON (line 3"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".claude/settings.json")).unwrap(),
        bad
    );
    assert!(!root.join(".codex").exists(), "nothing written");
    assert_eq!(
        std::fs::read_to_string(root.join("CLAUDE.md")).unwrap(),
        "# Mine\n"
    );
    assert!(
        claude_md.contains("polisd prime --as <your-citizen-id>"),
        "init wrote the pointer"
    );

    std::fs::write(root.join(".claude/settings.json"), USER_SETTINGS).unwrap();
    let mut perms = std::fs::metadata(root.join(".claude/settings.json"))
        .unwrap()
        .permissions();
    perms.set_readonly(true);
    std::fs::set_permissions(root.join(".claude/settings.json"), perms).unwrap();
    let out = p.polisd(&["hooks", "install", "--all", "--as", ME, "--bin", BIN]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is read-only"),
        "{out:?}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".claude/settings.json")).unwrap(),
        USER_SETTINGS
    );
    assert!(!root.join(".gemini").exists(), "nothing written");

    std::fs::create_dir_all(root.join(".codex")).unwrap();
    std::fs::write(root.join(".codex/config.toml"), "[features\nhooks = true\n").unwrap();
    let out = p.polisd(&["hooks", "install", "--codex", "--as", ME, "--bin", BIN]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not valid TOML"),
        "{out:?}"
    );
    assert!(!root.join(".codex/hooks.json").exists(), "nothing written");
    std::fs::write(
        root.join(".codex/config.toml"),
        "[features]\nhooks = false\n",
    )
    .unwrap();
    let status = p.polisd(&["hooks", "status"]);
    assert!(
        text(&status).contains("Codex runs no hooks"),
        "{}",
        text(&status)
    );

    let out = p.polisd(&[
        "hooks",
        "install",
        "--claude",
        "--as",
        "nobody-at-all",
        "--bin",
        BIN,
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a citizen"));
    // The id is kept in the state folder: one polisd cannot write refuses the install before
    // any settings file is written.
    let blocked = tempfile::tempdir().unwrap();
    std::fs::write(blocked.path().join("file"), "").unwrap();
    let out = Command::new(BIN)
        .args(["hooks", "install", "--gemini", "--as", ME, "--bin", BIN])
        .env("POLISD_STATE_DIR", blocked.path().join("file/state"))
        .current_dir(&root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", harness::describe(&out));
    assert!(!root.join(".gemini").exists(), "a refused install wrote");
    let out = p.polisd(&["hooks", "install"]);
    assert_eq!(out.status.code(), Some(2), "no CLI named is a usage error");
    let out = p.polisd(&["notices", "--as", "nobody-at-all", "--mark-read"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!p.exists("citizens/nobody-at-all"));
}
