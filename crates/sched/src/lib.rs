//! Which flow's bytes go next: scheduling policies for the flows of one origin-destination
//! pair, as in SCHED_TCP (U. Ayesta, L. Bertaux, D. Carvin, "Non-intrusive scheduling of TCP
//! flows", IFIP Networking 2015; "the paper" below).
//!
//! The pair keeps the connections plain TCP would have (one per flow, opened and closed as
//! TCP would), so its bytes on the wire stay those of TCP; a policy only decides whose data
//! fills the room a connection has (a segment at transmission time in the paper's ideal
//! `gtcp`, a chunk of a socket's send buffer in SCHED_TCP). The policies:
//!
//! - `tcp`: every connection carries its own flow (the reference).
//! - `srpt`: the flow with the fewest bytes left to hand out (size-aware).
//! - `las`: the flow that has been handed the fewest bytes (size-unaware).
//! - `fair`: the flow that would finish first under tcp (size-aware), the Fair Sojourn
//!   Protocol idea of Friedman and Henderson (SIGMETRICS 2003) with tcp in the place of
//!   processor sharing: every flow's tcp progress is known exactly from the virtual queue of
//!   the connection that would carry it alone ([`VirtualQueue`]).
//! - `priority`: the smallest class first (a flow tag mapped to a number), then a secondary
//!   policy among the flows of that class.
//!
//! Ties go to the flow that arrived first (the smaller id), so every choice is deterministic.
//! Nothing here does I/O or reads a clock: time is passed in as integer nanoseconds.

use std::fmt;

/// The rule that ranks flows within one class (the part of a policy other than `tcp`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Rank {
    Srpt,
    Las,
    Fair,
}

/// A scheduling policy.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Policy {
    Tcp,
    Ranked(Rank),
    /// By class, then by the given rank.
    Priority(Rank),
}

/// The policies' names, as scenario files and the command line write them.
pub const NAMES: [&str; 5] = ["tcp", "srpt", "las", "fair", "priority"];
/// The names of the ranks `priority` can use among the flows of one class.
pub const RANK_NAMES: [&str; 3] = ["srpt", "las", "fair"];

impl Rank {
    pub fn from_name(name: &str) -> Result<Rank, String> {
        match name {
            "srpt" => Ok(Rank::Srpt),
            "las" => Ok(Rank::Las),
            "fair" => Ok(Rank::Fair),
            _ => Err(format!("unknown rank \"{name}\" (known: {})", RANK_NAMES.join(", "))),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Rank::Srpt => "srpt",
            Rank::Las => "las",
            Rank::Fair => "fair",
        }
    }
    /// Whether the rank needs each flow's size in advance.
    pub fn size_aware(self) -> bool {
        !matches!(self, Rank::Las)
    }
    /// The key a flow is ranked by (smaller first) at time `now_ns`.
    fn key(self, c: &Candidate, now_ns: u64) -> (u64, u64) {
        match self {
            Rank::Srpt => (c.remaining, 0),
            Rank::Las => (c.attained, 0),
            Rank::Fair => c.tcp.finish_key(now_ns),
        }
    }
}

impl Policy {
    /// `priority` ranks within a class by `then`.
    pub fn from_name(name: &str, then: Rank) -> Result<Policy, String> {
        match name {
            "tcp" => Ok(Policy::Tcp),
            "priority" => Ok(Policy::Priority(then)),
            _ => Rank::from_name(name)
                .map(Policy::Ranked)
                .map_err(|_| format!("unknown scheduler \"{name}\" (known: {})", NAMES.join(", "))),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Policy::Tcp => "tcp",
            Policy::Ranked(r) => r.name(),
            Policy::Priority(_) => "priority",
        }
    }
    /// Whether the policy needs each flow's size in advance.
    pub fn size_aware(self) -> bool {
        match self {
            Policy::Tcp => false,
            Policy::Ranked(r) | Policy::Priority(r) => r.size_aware(),
        }
    }

    /// Whether the policy reads each flow's tcp twin ([`Candidate::tcp`]): only `fair` ranks do,
    /// so callers fill the twins only then.
    pub fn uses_tcp_twins(self) -> bool {
        matches!(self, Policy::Ranked(Rank::Fair) | Policy::Priority(Rank::Fair))
    }

    /// The index in `flows` of the flow whose bytes go next into connection `owner` (the id
    /// of the flow the connection was opened for), among the flows with bytes left; None when
    /// no flow has any (under `tcp`: when the owner has none).
    pub fn choose(self, owner: u64, flows: &[Candidate], now_ns: u64) -> Option<usize> {
        let live = flows.iter().enumerate().filter(|(_, c)| c.remaining > 0);
        match self {
            Policy::Tcp => live.filter(|(_, c)| c.id == owner).map(|(i, _)| i).next(),
            Policy::Ranked(r) => live.min_by_key(|(_, c)| (r.key(c, now_ns), c.id)).map(|(i, _)| i),
            Policy::Priority(r) => live.min_by_key(|(_, c)| (c.class, r.key(c, now_ns), c.id)).map(|(i, _)| i),
        }
    }

    /// Hands out up to `len` bytes for connection `owner`: repeatedly the chosen flow's bytes,
    /// until `len` is used up or no flow has any left (a segment may carry the end of one flow
    /// and the start of the next). Updates `remaining` and `attained` and returns the pieces
    /// as (index in `flows`, bytes), in order.
    pub fn fill(self, owner: u64, flows: &mut [Candidate], len: u64, now_ns: u64, pieces: &mut Vec<(usize, u64)>) {
        let mut left = len;
        while left > 0 {
            let Some(i) = self.choose(owner, flows, now_ns) else { break };
            let c = &mut flows[i];
            let n = left.min(c.remaining);
            c.remaining -= n;
            c.attained += n;
            left -= n;
            match pieces.last_mut() {
                Some((j, b)) if *j == i => *b += n,
                _ => pieces.push((i, n)),
            }
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Policy::Priority(r) => write!(f, "priority then {}", r.name()),
            p => f.write_str(p.name()),
        }
    }
}

/// What tcp would be doing with a flow: the state of the connection opened for it, which under
/// tcp carries that flow alone.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct VirtualQueue {
    /// Bytes that connection has not yet sent for the first time (the paper's q_i^v).
    pub remaining: u64,
    /// When it sent its last new byte (tcp's flow was then entirely in flight).
    pub finished_at_ns: Option<u64>,
    /// Its current sending rate (congestion window over smoothed RTT), bytes per second; zero
    /// when not yet known.
    pub rate_bytes_per_s: f64,
}

impl VirtualQueue {
    /// FAIR's key: the time tcp would put the flow's last byte on the wire, estimated from the
    /// connection's current rate (exact once it has). Flows tcp has already finished come
    /// first, by that time; then flows with a rate, by estimate; then flows without one (a
    /// connection still opening), by bytes left.
    pub fn finish_key(&self, now_ns: u64) -> (u64, u64) {
        match self.finished_at_ns {
            Some(t) => (0, t),
            None if self.rate_bytes_per_s > 0.0 => {
                let eta = self.remaining as f64 / self.rate_bytes_per_s * 1e9;
                (1, now_ns.saturating_add(eta.min(u64::MAX as f64 / 2.0) as u64))
            }
            None => (2, self.remaining),
        }
    }
}

/// A flow as a policy sees it.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct Candidate {
    /// The flow's id, in arrival order (ties go to the smaller).
    pub id: u64,
    /// Bytes not yet handed to any connection.
    pub remaining: u64,
    /// Bytes already handed to connections.
    pub attained: u64,
    /// Its class under `priority` (smaller first).
    pub class: u32,
    /// Its tcp twin, for `fair`.
    pub tcp: VirtualQueue,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(id: u64, remaining: u64, attained: u64) -> Candidate {
        Candidate { id, remaining, attained, ..Default::default() }
    }

    fn ids(p: Policy, owner: u64, flows: &[Candidate]) -> Option<u64> {
        p.choose(owner, flows, 0).map(|i| flows[i].id)
    }

    #[test]
    fn names_round_trip_and_unknown_names_are_refused() {
        for n in NAMES {
            assert_eq!(Policy::from_name(n, Rank::Las).unwrap().name(), n);
        }
        let e = Policy::from_name("sjf", Rank::Las).unwrap_err();
        assert!(e.contains("\"sjf\"") && e.contains("srpt"), "{e}");
        assert!(Rank::from_name("tcp").is_err());
        assert!(Policy::from_name("srpt", Rank::Las).unwrap().size_aware());
        assert!(!Policy::from_name("las", Rank::Las).unwrap().size_aware());
        assert_eq!(Policy::Priority(Rank::Srpt).to_string(), "priority then srpt");
    }

    #[test]
    fn each_rank_picks_its_flow() {
        // id, bytes left, bytes handed out
        let q = [flow(0, 9000, 1000), flow(1, 3000, 7000), flow(2, 5000, 0), flow(3, 0, 4000)];
        assert_eq!(ids(Policy::Ranked(Rank::Srpt), 0, &q), Some(1));
        assert_eq!(ids(Policy::Ranked(Rank::Las), 0, &q), Some(2));
        // tcp: the connection's own flow, whatever the others hold.
        assert_eq!(ids(Policy::Tcp, 2, &q), Some(2));
        assert_eq!(ids(Policy::Tcp, 0, &q), Some(0));
        // ...and nothing when its own flow has nothing left (flow 3) or is not there.
        assert_eq!(ids(Policy::Tcp, 3, &q), None);
        assert_eq!(ids(Policy::Tcp, 7, &q), None);
        // A flow with nothing left is never chosen, however small its key.
        assert_eq!(ids(Policy::Ranked(Rank::Srpt), 0, &[flow(0, 0, 0)]), None);
        assert_eq!(ids(Policy::Ranked(Rank::Las), 0, &[]), None);
    }

    #[test]
    fn ties_go_to_the_first_arrival() {
        let q = [flow(5, 100, 0), flow(2, 100, 0), flow(9, 100, 0)];
        for r in [Rank::Srpt, Rank::Las, Rank::Fair] {
            assert_eq!(ids(Policy::Ranked(r), 0, &q), Some(2), "{r:?}");
        }
    }

    #[test]
    fn priority_serves_the_smallest_class_first_then_ranks() {
        let mut q = [flow(0, 100, 0), flow(1, 5000, 0), flow(2, 50, 0), flow(3, 20, 900)];
        q[0].class = 1;
        q[1].class = 0;
        q[2].class = 1;
        q[3].class = 0;
        assert_eq!(ids(Policy::Priority(Rank::Srpt), 0, &q), Some(3));
        assert_eq!(ids(Policy::Priority(Rank::Las), 0, &q), Some(1));
        q[3].remaining = 0;
        q[1].remaining = 0;
        assert_eq!(ids(Policy::Priority(Rank::Srpt), 0, &q), Some(2));
    }

    #[test]
    fn fair_follows_tcps_finish_order() {
        let now = 1_000_000;
        let vq = |remaining, rate, done| VirtualQueue { remaining, rate_bytes_per_s: rate, finished_at_ns: done };
        let mut q = [flow(0, 10_000, 0), flow(1, 10_000, 0), flow(2, 10_000, 0), flow(3, 10_000, 0)];
        // tcp would finish flow 0 in 100 ms (1 MB at 10 MB/s), flow 1 in 20 ms (20 KB at 1 MB/s:
        // fewer bytes left but a slower connection), flow 2 in 50 ms.
        q[0].tcp = vq(1_000_000, 10e6, None);
        q[1].tcp = vq(20_000, 1e6, None);
        q[2].tcp = vq(500_000, 10e6, None);
        // Flow 3's connection is still opening: it comes after every estimate.
        q[3].tcp = vq(1, 0.0, None);
        assert_eq!(q[1].tcp.finish_key(now), (1, now + 20_000_000));
        assert_eq!(ids(Policy::Ranked(Rank::Fair), 0, &q), Some(1));
        q[1].remaining = 0;
        assert_eq!(ids(Policy::Ranked(Rank::Fair), 0, &q), Some(2));
        // A flow tcp has already put entirely on the wire goes first, whatever it still holds.
        q[0].tcp = vq(0, 10e6, Some(now - 5));
        assert_eq!(ids(Policy::Ranked(Rank::Fair), 0, &q), Some(0));
        // Among those, the earliest tcp finish first.
        q[2].tcp = vq(0, 10e6, Some(now - 50));
        assert_eq!(ids(Policy::Ranked(Rank::Fair), 0, &q), Some(2));
        // Without any rate, the bytes left order the opening connections.
        let mut r = [flow(0, 1, 0), flow(1, 1, 0)];
        r[0].tcp = vq(900, 0.0, None);
        r[1].tcp = vq(300, 0.0, None);
        assert_eq!(ids(Policy::Ranked(Rank::Fair), 0, &r), Some(1));
    }

    #[test]
    fn fair_emulation_on_a_hand_made_queue() {
        // Three flows arriving together on three equal connections at 1000 B per tick each
        // (tcp's processor sharing, a segment per tick): sizes 5000, 2000 and 3000 B. tcp
        // finishes them at ticks 5, 2 and 3; FAIR, giving each tick's 3000 B to the flows tcp
        // finishes first, finishes flow 1 at tick 1, flow 2 at tick 2 and flow 0 at tick 5 (the
        // same bytes on the wire): every flow no later than under tcp.
        let sizes = [5000u64, 2000, 3000];
        let mut q: Vec<Candidate> = sizes.iter().enumerate().map(|(i, &s)| flow(i as u64, s, 0)).collect();
        let mut virt = sizes;
        let mut done_fair = [0u64; 3];
        let mut pieces = Vec::new();
        for tick in 1..=5u64 {
            // The virtual queues at the start of the tick, as tcp would have them.
            for (i, c) in q.iter_mut().enumerate() {
                c.tcp = VirtualQueue { remaining: virt[i], rate_bytes_per_s: 1000.0, finished_at_ns: None };
                if virt[i] == 0 {
                    c.tcp.finished_at_ns = Some(tick - 1);
                }
            }
            for owner in 0..3u64 {
                if virt[owner as usize] == 0 {
                    continue;
                }
                pieces.clear();
                Policy::Ranked(Rank::Fair).fill(owner, &mut q, 1000, tick, &mut pieces);
                virt[owner as usize] -= 1000;
            }
            for (i, c) in q.iter().enumerate() {
                if c.remaining == 0 && done_fair[i] == 0 {
                    done_fair[i] = tick;
                }
            }
        }
        assert_eq!(done_fair, [5, 1, 2]);
        let done_tcp = [5, 2, 3];
        assert!(done_fair.iter().zip(done_tcp).all(|(f, t)| *f <= t));
    }

    #[test]
    fn fill_splits_a_segment_between_flows_and_keeps_the_books() {
        let mut q = [flow(0, 2500, 0), flow(1, 600, 0), flow(2, 800, 0)];
        let mut pieces = Vec::new();
        Policy::Ranked(Rank::Srpt).fill(0, &mut q, 1448, 0, &mut pieces);
        assert_eq!(pieces, vec![(1, 600), (2, 800), (0, 48)]);
        assert_eq!((q[0].remaining, q[0].attained, q[1].remaining, q[2].attained), (2452, 48, 0, 800));
        // tcp hands out only the owner's bytes, and less than asked when it runs out.
        pieces.clear();
        Policy::Tcp.fill(0, &mut q, 3000, 0, &mut pieces);
        assert_eq!(pieces, vec![(0, 2452)]);
        pieces.clear();
        Policy::Ranked(Rank::Las).fill(1, &mut q, 1448, 0, &mut pieces);
        assert!(pieces.is_empty());
    }
}
