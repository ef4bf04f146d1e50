//! How often each citizen takes work the router recommended for someone else, and how that work
//! turned out (skill seed, "The Contract": an override leaves a trace). Read from settlements:
//! a settled contract whose owner is not `routing.recommended_by_router` was an override, as
//! `routing.override` records it when the claim went through polisd.

/// One citizen's overrides among the settled contracts.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Overrides {
    pub citizen: String,
    /// Settled contracts it owned that the router had recommended for another citizen.
    pub overrides: usize,
    /// Their mean quality.
    pub quality_when_overriding: f64,
    /// Settled contracts it owned as the router recommended.
    pub followed: usize,
    /// Their mean quality; `None` without any.
    pub quality_when_followed: Option<f64>,
}

/// Per citizen with at least one override, most overrides first (then by id), from
/// `(owner, recommended_by_router, quality)` of each settled contract.
pub fn by_citizen<'a>(
    settlements: impl IntoIterator<Item = (&'a str, Option<&'a str>, u8)>,
) -> Vec<Overrides> {
    // citizen -> (overrides, their quality sum, followed, their quality sum)
    let mut tally: std::collections::BTreeMap<&str, (usize, u64, usize, u64)> =
        std::collections::BTreeMap::new();
    for (owner, recommended, quality) in settlements {
        let Some(recommended) = recommended else {
            continue;
        };
        let t = tally.entry(owner).or_default();
        if recommended == owner {
            t.2 += 1;
            t.3 += u64::from(quality);
        } else {
            t.0 += 1;
            t.1 += u64::from(quality);
        }
    }
    let mean = |sum: u64, n: usize| sum as f64 / n as f64;
    let mut out: Vec<Overrides> = tally
        .into_iter()
        .filter(|(_, t)| t.0 > 0)
        .map(|(citizen, (o, oq, f, fq))| Overrides {
            citizen: citizen.to_string(),
            overrides: o,
            quality_when_overriding: mean(oq, o),
            followed: f,
            quality_when_followed: (f > 0).then(|| mean(fq, f)),
        })
        .collect();
    out.sort_by(|a, b| {
        b.overrides
            .cmp(&a.overrides)
            .then(a.citizen.cmp(&b.citizen))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_are_counted_per_owner_beside_the_work_it_took_as_recommended() {
        let rows = [
            ("alpha-agent", Some("bravo-agent"), 5),
            ("alpha-agent", Some("bravo-agent"), 3),
            ("alpha-agent", Some("alpha-agent"), 2),
            ("bravo-agent", Some("bravo-agent"), 4),
            ("carol-agent", None, 1),
            ("carol-agent", Some("alpha-agent"), 2),
        ];
        let got = by_citizen(rows);
        assert_eq!(
            got,
            vec![
                Overrides {
                    citizen: "alpha-agent".into(),
                    overrides: 2,
                    quality_when_overriding: 4.0,
                    followed: 1,
                    quality_when_followed: Some(2.0),
                },
                Overrides {
                    citizen: "carol-agent".into(),
                    overrides: 1,
                    quality_when_overriding: 2.0,
                    followed: 0,
                    quality_when_followed: None,
                },
            ]
        );
    }
}
