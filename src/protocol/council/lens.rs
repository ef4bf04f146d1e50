//! Lenses: the point of view a citizen takes for one council seat. The council seed offers a
//! roster of roles grouped into triads (three roles per domain), profiles (larger panels) and
//! duo polarity pairs; polisd ships one short prompt per role, written for this project
//! (`lenses/*.md`), and a polis may add or override lenses in `_polis/council/lenses/`.
//!
//! Members are citizens, never personas: a lens only tells a seated citizen what to look for.

/// The built-in lenses, one per role the council seed names, in the seed's roster order.
pub const BUILT_IN: [(&str, &str); 18] = [
    ("aristotle", include_str!("lenses/aristotle.md")),
    ("socrates", include_str!("lenses/socrates.md")),
    ("sun-tzu", include_str!("lenses/sun-tzu.md")),
    ("ada", include_str!("lenses/ada.md")),
    ("aurelius", include_str!("lenses/aurelius.md")),
    ("machiavelli", include_str!("lenses/machiavelli.md")),
    ("lao-tzu", include_str!("lenses/lao-tzu.md")),
    ("feynman", include_str!("lenses/feynman.md")),
    ("torvalds", include_str!("lenses/torvalds.md")),
    ("musashi", include_str!("lenses/musashi.md")),
    ("watts", include_str!("lenses/watts.md")),
    ("karpathy", include_str!("lenses/karpathy.md")),
    ("sutskever", include_str!("lenses/sutskever.md")),
    ("kahneman", include_str!("lenses/kahneman.md")),
    ("meadows", include_str!("lenses/meadows.md")),
    ("munger", include_str!("lenses/munger.md")),
    ("taleb", include_str!("lenses/taleb.md")),
    ("rams", include_str!("lenses/rams.md")),
];

/// The seed's triads: a domain and its three roles, in seat order.
pub const TRIADS: [(&str, [&str; 3]); 20] = [
    ("architecture", ["aristotle", "ada", "feynman"]),
    ("strategy", ["sun-tzu", "machiavelli", "aurelius"]),
    ("ethics", ["aurelius", "socrates", "lao-tzu"]),
    ("debugging", ["feynman", "socrates", "ada"]),
    ("innovation", ["ada", "lao-tzu", "aristotle"]),
    ("conflict", ["socrates", "machiavelli", "aurelius"]),
    ("complexity", ["lao-tzu", "aristotle", "ada"]),
    ("risk", ["sun-tzu", "aurelius", "feynman"]),
    ("shipping", ["torvalds", "musashi", "feynman"]),
    ("product", ["torvalds", "machiavelli", "watts"]),
    ("founder", ["musashi", "sun-tzu", "torvalds"]),
    ("ai", ["karpathy", "sutskever", "ada"]),
    ("ai-product", ["karpathy", "torvalds", "machiavelli"]),
    ("ai-safety", ["sutskever", "aurelius", "socrates"]),
    ("decision", ["kahneman", "munger", "aurelius"]),
    ("systems", ["meadows", "lao-tzu", "aristotle"]),
    ("uncertainty", ["taleb", "sun-tzu", "sutskever"]),
    ("design", ["rams", "torvalds", "watts"]),
    ("economics", ["munger", "machiavelli", "sun-tzu"]),
    ("bias", ["kahneman", "socrates", "watts"]),
];

const EXPLORATION_ORTHOGONAL: [&str; 12] = [
    "socrates",
    "feynman",
    "sun-tzu",
    "machiavelli",
    "ada",
    "lao-tzu",
    "aurelius",
    "torvalds",
    "karpathy",
    "sutskever",
    "kahneman",
    "meadows",
];
const EXECUTION_LEAN: [&str; 5] = ["torvalds", "feynman", "sun-tzu", "aurelius", "ada"];

/// The seed's profiles by name (`classic` is the whole roster).
pub fn profile(name: &str) -> Option<Vec<&'static str>> {
    match name.trim().to_ascii_lowercase().as_str() {
        "classic" => Some(BUILT_IN.iter().map(|(n, _)| *n).collect()),
        "exploration-orthogonal" => Some(EXPLORATION_ORTHOGONAL.to_vec()),
        "execution-lean" => Some(EXECUTION_LEAN.to_vec()),
        _ => None,
    }
}

pub const PROFILE_NAMES: [&str; 3] = ["classic", "exploration-orthogonal", "execution-lean"];

pub fn triad(domain: &str) -> Option<[&'static str; 3]> {
    let domain = domain.trim().to_ascii_lowercase();
    TRIADS.iter().find(|(d, _)| *d == domain).map(|(_, m)| *m)
}

/// The seed's duo keyword rule, first match wins: keywords, then the polarity pair.
const DUO_RULES: [(&[&str], [&str; 2]); 5] = [
    (&["architecture", "structure"], ["aristotle", "lao-tzu"]),
    (&["shipping", "execution"], ["torvalds", "musashi"]),
    (&["strategy", "competition"], ["sun-tzu", "aurelius"]),
    (&["ai", "ml", "model"], ["karpathy", "sutskever"]),
    (&["decision", "bias"], ["kahneman", "feynman"]),
];
const DUO_DEFAULT: [&str; 2] = ["socrates", "feynman"];

/// The lower-case words of `text` (letters, digits and `-`), for keyword rules.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '-'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn mentions(words: &[String], keyword: &str) -> bool {
    words
        .iter()
        .any(|w| w == keyword || w.split('-').any(|part| part == keyword))
}

/// The duo's polarity pair for a problem, and the keyword that chose it (`None`: the default).
pub fn duo_pair(problem: &str) -> ([&'static str; 2], Option<&'static str>) {
    let words = words(problem);
    for (keys, pair) in DUO_RULES {
        if let Some(k) = keys.iter().find(|k| mentions(&words, k)) {
            return (pair, Some(k));
        }
    }
    (DUO_DEFAULT, None)
}

/// The triad for a problem when none is named: the first triad whose domain the problem
/// names, else the triad of the first duo keyword group it mentions, else `decision` (the
/// seed's general-purpose judgement panel).
pub fn auto_triad(problem: &str) -> (&'static str, String) {
    let words = words(problem);
    if let Some((d, _)) = TRIADS.iter().find(|(d, _)| words.iter().any(|w| w == d)) {
        return (d, format!("the problem names `{d}`"));
    }
    let groups: [(&[&str], &str); 5] = [
        (&["architecture", "structure", "arch"], "architecture"),
        (&["shipping", "execution", "release"], "shipping"),
        (&["strategy", "competition"], "strategy"),
        (&["ai", "ml", "model"], "ai"),
        (&["decision", "bias"], "decision"),
    ];
    for (keys, d) in groups {
        if let Some(k) = keys.iter().find(|k| mentions(&words, k)) {
            return (d, format!("the problem mentions `{k}`"));
        }
    }
    (
        "decision",
        "no domain keyword in the problem: the general judgement triad".into(),
    )
}

/// One lens: its name and its prompt (markdown; the first heading names it).
#[derive(Debug, Clone, PartialEq)]
pub struct Lens {
    pub name: String,
    pub text: String,
    /// Where it came from: `built-in` or the polis file's path.
    pub source: String,
}

impl Lens {
    /// The prompt without its heading lines, on one line (notices are one paragraph).
    pub fn instruction(&self) -> String {
        self.text
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .collect::<Vec<_>>()
            .join(" ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The lenses a polis can use: the built-in ones, then the polis's own files, which add
/// lenses or replace a built-in one of the same name.
#[derive(Debug, Clone, Default)]
pub struct Library {
    pub lenses: Vec<Lens>,
}

/// Whether `name` can name a lens file: lower-case letters, digits and `-`.
pub fn is_lens_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 40
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && name.as_bytes()[0].is_ascii_lowercase()
}

impl Library {
    /// The built-in lenses plus `own` (`(name, text, path)` from `_polis/council/lenses/`).
    pub fn with(own: Vec<(String, String, String)>) -> Library {
        let mut lenses: Vec<Lens> = BUILT_IN
            .iter()
            .map(|(n, t)| Lens {
                name: n.to_string(),
                text: t.to_string(),
                source: "built-in".into(),
            })
            .collect();
        for (name, text, path) in own {
            let lens = Lens {
                name: name.clone(),
                text,
                source: path,
            };
            match lenses.iter_mut().find(|l| l.name == name) {
                Some(l) => *l = lens,
                None => lenses.push(lens),
            }
        }
        Library { lenses }
    }

    pub fn get(&self, name: &str) -> Option<&Lens> {
        self.lenses.iter().find(|l| l.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_triad_and_profile_role_has_a_built_in_lens() {
        let lib = Library::with(vec![]);
        for (_, members) in TRIADS {
            assert!(members.iter().all(|m| lib.get(m).is_some()), "{members:?}");
        }
        for p in PROFILE_NAMES {
            assert!(profile(p).unwrap().iter().all(|m| lib.get(m).is_some()));
        }
        assert_eq!(profile("classic").unwrap().len(), 18);
        assert_eq!(profile("Execution-Lean").unwrap().len(), 5);
        assert_eq!(triad("risk"), Some(["sun-tzu", "aurelius", "feynman"]));
        assert_eq!(triad("nope"), None);
    }

    #[test]
    fn the_duo_pair_follows_the_first_matching_keyword() {
        assert_eq!(
            duo_pair("Split the module structure"),
            (["aristotle", "lao-tzu"], Some("structure"))
        );
        assert_eq!(
            duo_pair("Which model to fine-tune").0,
            ["karpathy", "sutskever"]
        );
        assert_eq!(
            duo_pair("Ship the execution plan").0,
            ["torvalds", "musashi"]
        );
        assert_eq!(duo_pair("Rename a folder"), (DUO_DEFAULT, None));
        // Whole words only: "maintain" holds "ai" but does not name it.
        assert_eq!(duo_pair("maintain it").1, None);
    }

    #[test]
    fn auto_triad_prefers_a_named_domain() {
        assert_eq!(auto_triad("the risk of a rollback").0, "risk");
        assert_eq!(auto_triad("Replace the cache layer arch").0, "architecture");
        assert_eq!(auto_triad("Rename a folder").0, "decision");
    }

    #[test]
    fn a_polis_lens_adds_or_replaces() {
        let lib = Library::with(vec![
            ("feynman".into(), "# mine\nOwn words.".into(), "p1".into()),
            (
                "security".into(),
                "# Lens: security\nThreats first.\n".into(),
                "p2".into(),
            ),
        ]);
        assert_eq!(lib.get("feynman").unwrap().source, "p1");
        assert_eq!(lib.get("security").unwrap().instruction(), "Threats first.");
        assert_eq!(lib.lenses.len(), 19);
        assert!(is_lens_name("sun-tzu") && !is_lens_name("../x") && !is_lens_name("A"));
    }
}
