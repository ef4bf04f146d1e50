//! `polisd --help` as a map: the commands grouped under headings by use, one line each.
//!
//! clap lists subcommands in one flat block; it has no headings for them. The root command's
//! help template is given the grouped list instead, rendered from the commands' own `about`
//! text, so a description lives in one place (the doc comment on the command).

/// The headings and the commands under each, in the order they are shown. A visible command
/// missing here is a test failure (`every_visible_command_sits_under_one_heading`).
pub const GROUPS: &[(&str, &[&str])] = &[
    (
        "The daemon and the rules it applies (each also runs once)",
        &[
            "run",
            "serve",
            "mcp",
            "reconcile",
            "tally",
            "route",
            "reflect",
            "verify",
        ],
    ),
    (
        "Agents' actions",
        &[
            "prime",
            "notices",
            "inbox",
            "ready",
            "context",
            "contract",
            "council",
            "review",
            "amendment",
            "log",
            "lesson",
            "guardrail",
            "reserve",
            "release",
        ],
    ),
    (
        "Inspection",
        &[
            "check",
            "status",
            "queue",
            "activity",
            "reservations",
            "report",
            "demo",
            "bench",
        ],
    ),
    (
        "Set-up and service",
        &[
            "init",
            "register",
            "migrate",
            "hooks",
            "git-setup",
            "service",
            "config",
            "completions",
            "man",
        ],
    ),
];

/// `cmd` (the root) with its help showing the commands under [`GROUPS`]' headings.
pub fn grouped(cmd: clap::Command) -> clap::Command {
    // The width clap wraps the rest of the help at, so that the map and the options around it
    // wrap alike on a narrow terminal.
    let width = super::terminal::columns();
    let listing = render(&cmd, width);
    let template = format!(
        "{{before-help}}{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{listing}\
         Options:\n{{options}}{{after-help}}"
    );
    cmd.help_template(template)
        .max_term_width(super::terminal::MAX_WIDTH)
}

/// The grouped command list: a heading, then `  name  description` lines.
fn render(cmd: &clap::Command, width: usize) -> String {
    let shown: Vec<&clap::Command> = cmd.get_subcommands().filter(|c| !c.is_hide_set()).collect();
    // A command's visible aliases stand beside its name (`check, doctor`).
    let label = |c: &clap::Command| {
        std::iter::once(c.get_name())
            .chain(c.get_visible_aliases())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let name_width = shown.iter().map(|c| label(c).len()).max().unwrap_or(0);
    let mut out = String::new();
    for (heading, names) in GROUPS {
        let members: Vec<_> = names
            .iter()
            .filter_map(|n| shown.iter().find(|c| c.get_name() == *n))
            .collect();
        if members.is_empty() {
            continue;
        }
        out.push_str(heading);
        out.push_str(":\n");
        for sub in members {
            let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
            let about = about.trim_end_matches('.');
            let indent = 2 + name_width + 2;
            out.push_str(&format!("  {:name_width$}  ", label(sub)));
            out.push_str(&super::terminal::fill(about, indent, indent, width));
            out.push('\n');
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> clap::Command {
        crate::commands::cli::whole_command()
    }

    #[test]
    fn every_visible_command_sits_under_one_heading() {
        let mut cmd = root();
        cmd.build();
        // clap's own `help` is added as the tree is built, after the list is rendered.
        for sub in cmd
            .get_subcommands()
            .filter(|c| !c.is_hide_set() && c.get_name() != "help")
        {
            let homes = GROUPS
                .iter()
                .filter(|(_, names)| names.contains(&sub.get_name()))
                .count();
            assert_eq!(homes, 1, "`{}` is under {homes} headings", sub.get_name());
        }
        for (heading, names) in GROUPS {
            for name in *names {
                let found = cmd.find_subcommand(name);
                assert!(
                    found.is_some_and(|c| !c.is_hide_set()),
                    "{heading}: `{name}` is not a visible command"
                );
            }
        }
    }

    #[test]
    fn root_help_shows_the_headings_and_no_flat_list() {
        let help = root().render_long_help().to_string();
        for (heading, _) in GROUPS {
            assert!(help.contains(&format!("{heading}:\n")), "{help}");
        }
        assert!(!help.contains("Commands:"), "{help}");
        assert!(help.contains("  contract "), "{help}");
        assert!(help.contains("-V, --version"), "{help}");
        assert!(
            help.lines()
                .all(|l| l.len() <= crate::commands::terminal::MAX_WIDTH),
            "{help}"
        );
    }
}
