//! Contract dependencies and the ready queue: `depends_on: [ids]` and
//! `touches: [path globs]` in a contract's frontmatter, unknown ids and cycles as findings,
//! readiness, and each citizen's ready queue.
//!
//! Pure: the caller says which ids exist and which have settled.

use crate::protocol::contracts::contract::Contract;
use crate::protocol::contracts::handoff::ids_of;
use crate::protocol::finding::{quoted, Code, Finding};
use std::collections::{BTreeMap, BTreeSet};

/// One open contract as the dependency rules see it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Node {
    pub id: String,
    pub path: String,
    pub title: String,
    pub owner: Option<String>,
    pub tags: Vec<String>,
    pub recommended: Option<String>,
    pub depends_on: Vec<String>,
    pub touches: Vec<String>,
}

impl Node {
    pub fn of(id: &str, path: &str, c: &Contract) -> Node {
        Node {
            id: id.to_string(),
            path: path.to_string(),
            title: c.title.clone().unwrap_or_else(|| id.to_string()),
            owner: c.owner.clone(),
            tags: c.required_tags.clone(),
            recommended: c.routing.recommended_by_router.clone(),
            depends_on: depends_on(c),
            touches: ids_of(c.fields.get("touches")),
        }
    }
}

/// The contract's `depends_on` ids.
pub fn depends_on(c: &Contract) -> Vec<String> {
    ids_of(c.fields.get("depends_on"))
}

/// Whether every dependency has settled (`settled(id)`).
pub fn dependencies_settled(deps: &[String], settled: &dyn Fn(&str) -> bool) -> bool {
    deps.iter().all(|d| settled(d))
}

/// Ready: unowned, and every dependency has settled.
pub fn is_ready(n: &Node, settled: &dyn Fn(&str) -> bool) -> bool {
    n.owner.is_none() && dependencies_settled(&n.depends_on, settled)
}

/// Findings about the open contracts' dependencies: ids that name no contract in any folder
/// (`exists`), and each cycle once, at the path of its smallest id.
pub fn findings(nodes: &[Node], exists: &dyn Fn(&str) -> bool) -> Vec<Finding> {
    let mut out = Vec::new();
    let by_id: BTreeMap<&str, &Node> = nodes.iter().map(|n| (n.id.as_str(), n)).collect();
    for n in nodes {
        for d in &n.depends_on {
            if !by_id.contains_key(d.as_str()) && !exists(d) {
                out.push(Finding::error(
                    Code::UnknownDependency,
                    &n.path,
                    None,
                    format!("`depends_on` names `{}`, which is no contract in contracts/open, settled or abandoned; fix the id or remove it", quoted(d)),
                ));
            }
        }
    }
    for cycle in cycles(nodes) {
        let first = by_id[cycle[0].as_str()];
        let mut shown = cycle.clone();
        shown.push(cycle[0].clone());
        out.push(Finding::error(
            Code::DependencyCycle,
            &first.path,
            None,
            format!(
                "the contracts depend on each other in a cycle ({}), so none of them can ever be ready; remove one `depends_on` entry",
                shown.join(" -> ")
            ),
        ));
    }
    out
}

/// Every dependency cycle among the nodes, each once, rotated to start at its smallest id.
pub fn cycles(nodes: &[Node]) -> Vec<Vec<String>> {
    let edges: BTreeMap<&str, Vec<&str>> = nodes
        .iter()
        .map(|n| {
            (
                n.id.as_str(),
                n.depends_on.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    let mut found: BTreeSet<Vec<String>> = BTreeSet::new();
    let mut done: BTreeSet<&str> = BTreeSet::new();
    // Iterative DFS with an explicit path: a long chain cannot overflow the stack.
    for start in edges.keys() {
        if done.contains(start) {
            continue;
        }
        let mut path: Vec<&str> = vec![start];
        let mut next: Vec<usize> = vec![0];
        while let Some(&node) = path.last() {
            let i = *next.last().unwrap();
            let succ = edges.get(node).map(Vec::as_slice).unwrap_or(&[]);
            if i >= succ.len() {
                done.insert(node);
                path.pop();
                next.pop();
                continue;
            }
            *next.last_mut().unwrap() += 1;
            let s = succ[i];
            if let Some(pos) = path.iter().position(|p| *p == s) {
                let mut cycle: Vec<String> = path[pos..].iter().map(|x| x.to_string()).collect();
                let min = (0..cycle.len()).min_by_key(|&k| &cycle[k]).unwrap();
                cycle.rotate_left(min);
                found.insert(cycle);
            } else if edges.contains_key(s) && !done.contains(s) {
                path.push(s);
                next.push(0);
            }
        }
    }
    found.into_iter().collect()
}

/// How many open contracts settling `id` would help unblock: those depending on it directly or
/// through others.
pub fn unblocks(nodes: &[Node], id: &str) -> usize {
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut todo = vec![id];
    while let Some(cur) = todo.pop() {
        for n in nodes {
            if n.depends_on.iter().any(|d| d == cur) && seen.insert(n.id.as_str()) {
                todo.push(n.id.as_str());
            }
        }
    }
    seen.remove(id);
    seen.len()
}

/// Whether two path globs can name a common file: the reservations' rule
/// (`protocol::contracts::reservation::overlaps`), so `touches` and reservations agree.
pub fn globs_overlap(a: &str, b: &str) -> bool {
    let clean = |x: &str| x.trim().trim_start_matches("./").to_string();
    crate::protocol::contracts::reservation::overlaps(&clean(a), &clean(b))
}

/// Whether any glob of `a` overlaps any of `b`.
pub fn touches_overlap(a: &[String], b: &[String]) -> bool {
    a.iter().any(|x| b.iter().any(|y| globs_overlap(x, y)))
}

/// One line of a ready queue.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Ready {
    pub contract_id: String,
    pub title: String,
    pub path: String,
    pub required_tags: Vec<String>,
    /// The router recommends this citizen for it.
    pub recommended: bool,
    /// How many open contracts settling it would help unblock.
    pub unblocks: usize,
}

/// A contract left out of the queue because its `touches` overlap work in progress.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Held {
    pub contract_id: String,
    /// The in-progress contract it overlaps, or `reservation of <citizen>`.
    pub overlaps: String,
}

/// Another citizen's active reservation (`reservations.yml`), as the queue sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reserved {
    pub citizen: String,
    pub paths: Vec<String>,
}

/// `citizen`'s ready queue: the ready contracts recommended for it first, then the other ready
/// contracts on its tags, each group ordered by how much settling it would unblock (then id).
/// Ready contracts whose `touches` overlap an in-progress contract (open, with an owner) or
/// another citizen's reservation are left out and returned as held.
pub fn ready_queue(
    citizen: &str,
    citizen_tags: &BTreeSet<String>,
    nodes: &[Node],
    settled: &dyn Fn(&str) -> bool,
    reserved: &[Reserved],
) -> (Vec<Ready>, Vec<Held>) {
    let in_progress: Vec<&Node> = nodes.iter().filter(|n| n.owner.is_some()).collect();
    let mut ready = Vec::new();
    let mut held = Vec::new();
    for n in nodes.iter().filter(|n| is_ready(n, settled)) {
        let recommended = n.recommended.as_deref() == Some(citizen);
        let on_tags = n.tags.iter().any(|t| citizen_tags.contains(t));
        if !recommended && !on_tags {
            continue;
        }
        if let Some(busy) = in_progress
            .iter()
            .find(|p| touches_overlap(&n.touches, &p.touches))
        {
            held.push(Held {
                contract_id: n.id.clone(),
                overlaps: busy.id.clone(),
            });
            continue;
        }
        if let Some(r) = reserved
            .iter()
            .find(|r| r.citizen != citizen && touches_overlap(&n.touches, &r.paths))
        {
            held.push(Held {
                contract_id: n.id.clone(),
                overlaps: format!("reservation of {}", r.citizen),
            });
            continue;
        }
        ready.push(Ready {
            contract_id: n.id.clone(),
            title: n.title.clone(),
            path: n.path.clone(),
            required_tags: n.tags.clone(),
            recommended,
            unblocks: unblocks(nodes, &n.id),
        });
    }
    ready.sort_by(|a, b| {
        b.recommended
            .cmp(&a.recommended)
            .then(b.unblocks.cmp(&a.unblocks))
            .then(a.contract_id.cmp(&b.contract_id))
    });
    (ready, held)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: &str, deps: &[&str]) -> Node {
        Node {
            id: id.into(),
            path: format!("contracts/open/{id}.md"),
            title: id.into(),
            owner: None,
            tags: vec!["api".into()],
            recommended: None,
            depends_on: deps.iter().map(|d| d.to_string()).collect(),
            touches: vec![],
        }
    }

    #[test]
    fn dependency_cycle_is_one_finding_per_cycle() {
        let nodes = vec![
            node("a", &["b"]),
            node("b", &["c"]),
            node("c", &["a"]),
            node("d", &["a"]),
        ];
        assert_eq!(
            cycles(&nodes),
            vec![vec!["a".to_string(), "b".into(), "c".into()]]
        );
        let f = findings(&nodes, &|_| true);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].code, Code::DependencyCycle);
        assert!(f[0].message.contains("a -> b -> c -> a"));
    }

    #[test]
    fn unknown_dependency_is_a_finding() {
        let f = findings(&[node("a", &["ghost"])], &|_| false);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].code, Code::UnknownDependency);
    }

    #[test]
    fn self_dependency_is_a_cycle() {
        assert_eq!(cycles(&[node("a", &["a"])]).len(), 1);
    }

    #[test]
    fn globs_overlap_conservatively() {
        assert!(globs_overlap("src/**", "src/api/login.rs"));
        assert!(globs_overlap("src/api/*.rs", "src/api/login.rs"));
        assert!(globs_overlap("src", "src/api/login.rs"));
        assert!(!globs_overlap("src/api/*.rs", "docs/*.md"));
        assert!(!globs_overlap("src/a.rs", "src/b.rs"));
        assert!(globs_overlap("./src/a.rs", "src/a.rs"));
    }

    #[test]
    fn ready_queue_orders_and_leaves_out_overlapping_work() {
        let tags: BTreeSet<String> = ["api".to_string()].into();
        let mut busy = node("busy", &[]);
        busy.owner = Some("someone-else".into());
        busy.touches = vec!["src/api/**".into()];
        let mut clash = node("clash", &[]);
        clash.touches = vec!["src/api/login.rs".into()];
        let mut mine = node("mine", &[]);
        mine.recommended = Some("codex-agent-two".into());
        let blocked = node("blocked", &["base"]);
        let base = node("base", &[]);
        let later = node("later", &["blocked"]);
        let nodes = vec![busy, clash, mine, blocked, base, later];
        let settled = |_: &str| false;
        let (ready, held) = ready_queue("codex-agent-two", &tags, &nodes, &settled, &[]);
        let ids: Vec<&str> = ready.iter().map(|r| r.contract_id.as_str()).collect();
        assert_eq!(ids, vec!["mine", "base"]);
        let reserved = [Reserved {
            citizen: "other-agent-x".into(),
            paths: vec!["src/**".into()],
        }];
        let mut nodes2 = nodes.clone();
        nodes2[2].touches = vec!["src/ui.rs".into()];
        let (ready2, held2) = ready_queue("codex-agent-two", &tags, &nodes2, &settled, &reserved);
        assert!(!ready2.iter().any(|r| r.contract_id == "mine"));
        assert_eq!(held2[1].overlaps, "reservation of other-agent-x");
        assert_eq!(ready[1].unblocks, 2);
        assert_eq!(
            held,
            vec![Held {
                contract_id: "clash".into(),
                overlaps: "busy".into()
            }]
        );
    }
}
