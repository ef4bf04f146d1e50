//! The block of `index.md` that polisd keeps current, where the index keeper placed it (skill seed, "The first thing to do every
//! session", step 4: "Read _polis/index.md — where things stand"): the state, what is in
//! flight and what needs a person, between two markers, the rest of the file the index
//! keeper's.
//!
//! Pure: facts in, text out. The block holds no time, so its bytes change only when the
//! state does; the daemon writes it by compare-before-replace only when they differ.

/// The first and last lines of the block.
pub const BEGIN: &str = "<!-- polisd:state:begin -->";
pub const END: &str = "<!-- polisd:state:end -->";

/// At most this many contracts are listed in flight (the rest counted).
pub const MAX_IN_FLIGHT: usize = 20;

/// One open contract with an owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFlight {
    pub id: String,
    pub title: String,
    pub owner: String,
    pub status: String,
}

/// What the block states.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexState {
    pub citizens: usize,
    pub open: usize,
    /// Open contracts with an owner, in id order.
    pub in_flight: Vec<InFlight>,
    /// One line each: what needs a person (high-stakes work without a reviewer, reviews that
    /// asked for changes or rejected).
    pub needs_a_person: Vec<String>,
}

/// The block, markers included, ending with a newline.
pub fn render(s: &IndexState) -> String {
    let one = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = format!(
        "{BEGIN}\n## State (kept current by polisd)\n\n- Citizens: {}\n- Open contracts: {}, of which in flight: {}\n\n### In flight\n",
        s.citizens,
        s.open,
        s.in_flight.len()
    );
    if s.in_flight.is_empty() {
        out.push_str("- nothing claimed\n");
    }
    for c in s.in_flight.iter().take(MAX_IN_FLIGHT) {
        out.push_str(&format!(
            "- [[contracts/open/{}]] {} ({}, {})\n",
            c.id,
            one(&c.title),
            c.owner,
            c.status
        ));
    }
    if s.in_flight.len() > MAX_IN_FLIGHT {
        out.push_str(&format!(
            "- … and {} more (`polisd contract list`)\n",
            s.in_flight.len() - MAX_IN_FLIGHT
        ));
    }
    out.push_str("\n### Needs a person\n");
    for line in &s.needs_a_person {
        out.push_str(&format!("- {}\n", one(line)));
    }
    out.push_str(
        "- Decisions only a person makes (new citizens, deferred handoffs): `polisd queue`\n",
    );
    out.push_str(END);
    out.push('\n');
    out
}

/// `index` with its block replaced by `block`, every byte outside it kept. `index.md` is the
/// index keeper's: polisd fills only a block the keeper placed (the two marker lines), so a
/// polis opts in, and only where one machine's daemon writes it (two clones writing the same
/// block at different moments would conflict in git). `None` without the markers, or with
/// the end marker missing (the keeper is editing it).
pub fn splice(index: &str, block: &str) -> Option<String> {
    let start = index.find(BEGIN)?;
    let end = start + index[start..].find(END)? + END.len();
    let end = if index[end..].starts_with("\r\n") {
        end + 2
    } else if index[end..].starts_with('\n') {
        end + 1
    } else {
        end
    };
    Some(format!("{}{block}{}", &index[..start], &index[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_fills_the_keepers_markers_and_nothing_else() {
        let s = IndexState {
            citizens: 2,
            open: 1,
            in_flight: vec![InFlight {
                id: "a".into(),
                title: "Fix it".into(),
                owner: "x-agent-one".into(),
                status: "claimed".into(),
            }],
            needs_a_person: vec![],
        };
        let index = "---\nindex_keeper: k\n---\n\n# P\n";
        assert_eq!(splice(index, &render(&s)), None, "no markers, no block");
        let index = format!("{index}\n{BEGIN}\n{END}\n");
        let once = splice(&index, &render(&s)).unwrap();
        assert!(once.starts_with("---\nindex_keeper: k\n---\n\n# P\n\n"));
        assert_eq!(
            splice(&once, &render(&s)).unwrap(),
            once,
            "same state, same bytes"
        );
        let kept = format!("{once}\n## Notes by the keeper\n");
        let mut moved = s.clone();
        moved.in_flight.clear();
        let again = splice(&kept, &render(&moved)).unwrap();
        assert!(
            again.contains("- nothing claimed") && again.ends_with("\n## Notes by the keeper\n")
        );
        assert_eq!(splice(&format!("{BEGIN}\nhalf"), "x"), None);
    }
}
