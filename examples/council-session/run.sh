#!/bin/bash
# Replays this example session with a real daemon and a fake clock (POLISD_FAKE_NOW_FILE):
# four members and a chair, a risk triad, one seat silent in round 2. Needs polisd on PATH (or
# POLISD=path/to/polisd). The files it leaves match the ones beside this script, up to the
# notice ids and the founding stamps.
set -e
BIN=${POLISD:-polisd}
W=$(mktemp -d)
cd "$W"
echo "working in $W"
export POLISD_STATE_DIR=$W/state
mkdir -p project
$BIN init project --agent-id claude-founder-one --vendor anthropic >/dev/null
P=project/_polis
card(){ mkdir -p $P/citizens/$1; printf "agent_id: $1\nvendor: $2\nmodel: example\nregistered: 2026-01-01 00:00:00\ncapability_tags:\n  arch:\n    self_rating: $3\n    evidence: example\ncost_envelope:\n  relative: medium\n" > $P/citizens/$1/capability_card.yml; printf -- "---\nfile_type: inbox\nowner: $1\n---\n" > $P/citizens/$1/inbox.md; }
card claude-member-aaaa anthropic 5
card codex-member-bbbb openai 4
card gemini-member-cccc google 3
card claude-member-dddd anthropic 2
date -u +%Y-%m-%dT10:00:00+00:00 --date=2026-12-07 > $W/now
cat > $P/contracts/open/cache-layer.md <<'C'
---
contract_id: cache-layer
title: Replace the cache layer
opened_by: claude-founder-one
opened_at: '2026-12-07 09:00:00'
owner: null
status: proposed
stakes: high
required_tags: [arch]
council: {mode: full, triad: risk, round_hours: 4, retry_hours: 0.5}
routing:
  recommended_by_router: claude-founder-one
---

## Intent

Replace the in-process cache with a shared Redis cache so that the three API replicas stop
serving stale prices after a deploy.
C
printf '[watch]\ndebounce = "50ms"\n' > $W/polisd.toml
POLISD_FAKE_NOW_FILE=$W/now $BIN run $P --config $W/polisd.toml 2>$W/daemon.log &
echo $! > $W/daemon.pid
sleep 2
(cd $P && $BIN contract claim cache-layer --as claude-founder-one >/dev/null)
sleep 2
w(){ printf "%s\n" "$3" > $W/c.md; (cd $P && $BIN council write cache-layer --as $1 $W/c.md >/dev/null); }
A=claude-member-aaaa; B=codex-member-bbbb; C=gemini-member-cccc
w $A 0 "1) Stale prices after a deploy come from three caches that never agree. 2) Or: this is a deploy-ordering problem, not a cache problem."
w $B 0 "1) Replicas need one shared view of prices. 2) Or: prices should not be cached at all, only computed lookups."
w $C 0 "1) We want fresh prices across replicas after deploys. 2) Or: what would we measure to know the stale window is gone?"
sleep 2
w $A 1 "The real exposure is the deploy window: for up to ten minutes replicas disagree. A shared Redis removes the disagreement but adds a network hop and a new failure mode: if Redis is down, every replica is down. I would accept it only with a local fallback and a short TTL, and only after we measure how often stale prices are actually served today."
w $B 1 "Redis is the standard answer and fits the team's skills. The risk I see is invalidation: a price change must reach Redis before any replica reads it, so writes must go through one path. Keep the in-process cache as a read-through layer with a 5 second TTL, and make the price service the only writer. Cost is small."
w $C 1 "Before replacing anything, measure: log each served price with its age for one day. If stale serves are rare, flushing caches on deploy is a one-line fix. If they are common, Redis is justified. I would not sign off without the number, and the plan does not say how we roll back if Redis latency is worse than the local cache."
sleep 2
w $A 2 "Member C is right that the plan lacks a number; I accept measuring first, and I name the flaw in my round 1 position: I assumed stale serves are frequent without evidence. Member B's single-writer rule answers my invalidation worry, so I keep Redis as the target, behind a flag, after the measurement."
w $B 2 "I hold my position. Member A's outage concern is met by the read-through local layer with a short TTL; nobody has shown a flaw in that. Member C's measurement is cheap and I accept it as a gate, but it should not delay writing the single-writer path, which we need either way."
echo "$(date -u +%Y-%m-%dT14:01:00+00:00 --date=2026-12-07)" > $W/now; touch $P/contracts/open/cache-layer.md; sleep 2
echo "$(date -u +%Y-%m-%dT14:32:00+00:00 --date=2026-12-07)" > $W/now; touch $P/contracts/open/cache-layer.md; sleep 2
echo "$(date -u +%Y-%m-%dT15:48:00+00:00 --date=2026-12-07)" > $W/now; touch $P/contracts/open/cache-layer.md; sleep 2
w $A 3 "Final: measure stale serves for a day; if above 0.1% of requests, ship Redis behind a flag with the local read-through layer."
w $B 3 "Final: build the single-writer path now; Redis behind a flag; the measurement decides the default."
w $C 3 "Final: no sign-off before the stale-serve number exists; then Redis with a tested rollback."
sleep 2
cat > $P/reviews/cache-layer/verdict.md <<'V'
---
decision: requested_changes
---

## Selected panel
Full council, risk triad: Member A claude-member-aaaa (sun-tzu), Member B codex-member-bbbb (aurelius), Member C gemini-member-cccc (feynman).

## Chairman
claude-member-dddd (anthropic): the only citizen off the panel.

## Acceptable compromises
- A day's delay for the measurement before any Redis work is merged.
- A second cache layer (local read-through) to keep, in exchange for surviving a Redis outage.

## Kill criteria
- If stale prices are served on fewer than 0.1% of requests by 2026-12-14, invalidated → flush caches on deploy instead of adding Redis
- If p95 price lookup latency rises above 40 ms with Redis by 2027-01-15, invalidated → turn the flag off and keep the local cache

## Concrete next step
- Write the stale-serve logging change (price, age, replica) and merge it behind `PRICE_AGE_LOG`.

## Unresolved questions
- Who owns the Redis instance and its alerts?

## Key agreements
- Measure before replacing; one writer for prices; Redis only behind a flag.

## Key disagreements
- Member C (gemini-member-cccc) holds that nothing should be built before the number exists; Member B (codex-member-bbbb) would build the single-writer path at once.

## Decision options
- Measure, then Redis behind a flag: slower, evidence-led.
- Redis now with the local layer: faster, risks solving a rare problem.
- Flush on deploy only: cheapest, may leave a window.

## Recommended next steps
1. Run the logging for one full day including a deploy.
2. Draft the single-writer path while the numbers come in.

## Confidence
medium, because the three members agree on the gate but the frequency of stale serves is unknown.

## Execution reliability
3 seats; Member C was silent in round 2 and was retried twice, then degraded (a labelled stub stood in); no fallback for the chair.
V
sleep 3
kill $(cat $W/daemon.pid)
