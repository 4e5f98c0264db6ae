//! The flows of a scenario, by flow id: parts listed up front (`[[flows]]` entries and most
//! workloads) and parts drawn when they are needed (open-loop arrivals and sorted traces,
//! which can number tens of millions). A drawn part holds its workload's random stream as it
//! was before the first draw, or its trace file's handle, so its flows come out the same, in
//! the same order, every time they are drawn: the simulator draws each as it starts
//! ([`FlowList::feed`]) and nothing holds every flow of the run at once.

use crate::FlowSpec;
use fctlab_dist::SizeDist;
use fctlab_engine::{Nanos, Rng};
use std::borrow::Cow;
use std::sync::Arc;

/// The flows of a scenario.
#[derive(Clone, Debug, Default)]
pub struct FlowList {
    /// In flow-id order: part k holds ids `first[k]..first[k + 1]`.
    parts: Vec<FlowPart>,
    first: Vec<usize>,
    len: usize,
}

/// A run of consecutive flow ids.
#[derive(Clone, Debug)]
pub enum FlowPart {
    /// Every flow's specification, held.
    Listed(Vec<FlowSpec>),
    /// Flows drawn from a random stream when they are needed.
    Drawn(Draws),
}

impl FlowPart {
    pub fn len(&self) -> usize {
        match self {
            FlowPart::Listed(v) => v.len(),
            FlowPart::Drawn(d) => d.count as usize,
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Open-loop (Poisson) arrivals or a sorted trace of one workload entry: its flows, in start
/// order, come from [`Draws::iter`]. A drawn flow has no group and does not wait for one.
#[derive(Clone, Debug)]
pub struct Draws {
    plan: Arc<Plan>,
    /// How many flows the entry has (counted when the scenario was loaded).
    count: u64,
}

/// How a pair of hosts is picked for each arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pattern {
    AllToAll,
    Pairs,
    ManyToOne,
}

/// Where a drawn part's flows come from.
#[derive(Debug)]
pub(crate) enum Plan {
    Poisson(DrawPlan),
    Trace(crate::trace::TracePlan),
}

impl Plan {
    fn template(&self) -> &FlowSpec {
        match self {
            Plan::Poisson(p) => &p.template,
            Plan::Trace(t) => t.template(),
        }
    }
}

/// Everything one Poisson draw needs: the stream as it was before the first draw, the hosts,
/// the sizes, the gaps, and what every flow of the entry shares.
#[derive(Debug)]
pub(crate) struct DrawPlan {
    pub rng: Rng,
    pub senders: Vec<usize>,
    pub receivers: Vec<usize>,
    pub pattern: Pattern,
    pub sizes: SizeDist,
    pub mean_gap_ns: f64,
    /// At most this many flows, and none starting at or after `until` (relative to `start`).
    pub count: u64,
    pub until: Option<Nanos>,
    pub start: Nanos,
    /// A flow's deadline from its size.
    pub deadline: crate::deadline::Deadline,
    /// The spec every flow of the entry starts from (its hosts, size, start and deadline
    /// are drawn).
    pub template: FlowSpec,
}

impl Draws {
    /// Counts the plan's flows by drawing them once; `check` sees each flow as it is drawn
    /// (in start order) and may refuse the entry.
    pub(crate) fn counted<E>(
        plan: DrawPlan,
        mut check: impl FnMut(u64, &FlowSpec) -> Result<(), E>,
    ) -> Result<Draws, E> {
        let most = plan.count;
        let plan = Arc::new(Plan::Poisson(plan));
        let mut n = 0;
        for f in DrawIter::new(plan.clone(), most) {
            n += 1;
            check(n, &f)?;
        }
        Ok(Draws { plan, count: n })
    }

    /// A sorted trace of `count` flows (checked when it was read).
    pub(crate) fn trace(plan: crate::trace::TracePlan, count: u64) -> Draws {
        Draws { plan: Arc::new(Plan::Trace(plan)), count }
    }

    /// The flows, in flow-id order (which is start order).
    pub fn iter(&self) -> impl Iterator<Item = FlowSpec> {
        DrawIter::new(self.plan.clone(), self.count)
    }

    /// What every flow of the part shares (its protocol, ECN, default tag).
    pub fn template(&self) -> &FlowSpec {
        self.plan.template()
    }
}

struct DrawIter {
    plan: Arc<Plan>,
    source: Source,
    /// Flows drawn, and the most to draw.
    n: u64,
    count: u64,
    /// Why the flows stopped early (a trace file changed since it was loaded).
    failure: Option<String>,
}

enum Source {
    /// The stream, and the time of the last arrival in nanoseconds since the entry's start.
    Poisson {
        rng: Rng,
        t: f64,
    },
    Trace {
        rows: Option<crate::trace::Rows>,
        record: csv::StringRecord,
    },
}

impl DrawIter {
    fn new(plan: Arc<Plan>, count: u64) -> DrawIter {
        let (source, failure) = match &*plan {
            Plan::Poisson(p) => (Source::Poisson { rng: p.rng.clone(), t: 0.0 }, None),
            Plan::Trace(t) => match t.rows() {
                Ok(rows) => (Source::Trace { rows: Some(rows), record: csv::StringRecord::new() }, None),
                Err(m) => (Source::Trace { rows: None, record: csv::StringRecord::new() }, Some(m)),
            },
        };
        DrawIter { plan, source, n: 0, count, failure }
    }
}

impl Iterator for DrawIter {
    type Item = FlowSpec;

    fn next(&mut self) -> Option<FlowSpec> {
        if self.n >= self.count {
            return None;
        }
        let f = match (&*self.plan, &mut self.source) {
            (Plan::Poisson(p), Source::Poisson { rng, t }) => poisson_next(p, rng, t),
            (Plan::Trace(p), Source::Trace { rows: Some(rows), record }) => match p.next(rows, record) {
                Ok(f) => f,
                Err(m) => {
                    self.failure = Some(m);
                    None
                }
            },
            _ => None,
        };
        match f {
            Some(_) => self.n += 1,
            None => self.n = self.count,
        }
        f
    }
}

/// The next Poisson arrival of `p` from stream `rng`, the last one at `t` (None once the
/// entry's window is over).
fn poisson_next(p: &DrawPlan, rng: &mut Rng, t: &mut f64) -> Option<FlowSpec> {
    *t += -p.mean_gap_ns * (1.0 - rng.uniform()).ln();
    let at = Nanos::from_nanos(t.round() as u64);
    if p.until.is_some_and(|u| at >= u) {
        return None;
    }
    let pick = |rng: &mut Rng, hosts: &[usize]| hosts[rng.below(hosts.len() as u64) as usize];
    let (src, dst) = match p.pattern {
        Pattern::Pairs => {
            let i = rng.below(p.senders.len() as u64) as usize;
            (p.senders[i], p.receivers[i])
        }
        Pattern::ManyToOne => loop {
            let s = pick(rng, &p.senders);
            if s != p.receivers[0] {
                break (s, p.receivers[0]);
            }
        },
        Pattern::AllToAll => loop {
            let s = pick(rng, &p.senders);
            let d = pick(rng, &p.receivers);
            if s != d {
                break (s, d);
            }
        },
    };
    let size = p.sizes.sample(rng);
    Some(FlowSpec {
        src,
        dst,
        size_bytes: Some(size),
        start: p.start + at,
        deadline: p.deadline.for_size(Some(size)),
        ..p.template.clone()
    })
}

impl FlowList {
    /// Appends a part; its flows get the next ids.
    pub(crate) fn push(&mut self, part: FlowPart) {
        if part.is_empty() {
            return;
        }
        self.first.push(self.len);
        self.len += part.len();
        self.parts.push(part);
    }

    /// Flows of the run.
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The parts, each with its first flow id.
    pub fn parts(&self) -> impl Iterator<Item = (usize, &FlowPart)> {
        self.first.iter().copied().zip(&self.parts)
    }

    /// The part holding flow `id`, and its first id.
    fn part_of(&self, id: usize) -> Option<(usize, &FlowPart)> {
        let k = self.first.partition_point(|&f| f <= id).checked_sub(1)?;
        (id < self.len).then(|| (self.first[k], &self.parts[k]))
    }

    /// Flow `id`'s specification if it is listed (None for a drawn flow or an unknown id).
    pub fn listed(&self, id: usize) -> Option<&FlowSpec> {
        match self.part_of(id)? {
            (first, FlowPart::Listed(v)) => v.get(id - first),
            _ => None,
        }
    }

    /// Every flow in id order, drawn ones drawn as the walk reaches them.
    pub fn iter(&self) -> impl Iterator<Item = Cow<'_, FlowSpec>> {
        self.parts.iter().flat_map(|p| -> Box<dyn Iterator<Item = Cow<'_, FlowSpec>>> {
            match p {
                FlowPart::Listed(v) => Box::new(v.iter().map(Cow::Borrowed)),
                FlowPart::Drawn(d) => Box::new(d.iter().map(Cow::Owned)),
            }
        })
    }

    /// Every flow, held (for tests and small scenarios).
    pub fn to_vec(&self) -> Vec<FlowSpec> {
        self.iter().map(Cow::into_owned).collect()
    }

    /// The listed flows, with their ids.
    pub fn listed_flows(&self) -> impl Iterator<Item = (usize, &FlowSpec)> {
        self.parts()
            .filter_map(|(first, p)| match p {
                FlowPart::Listed(v) => Some((first, v)),
                FlowPart::Drawn(_) => None,
            })
            .flat_map(|(first, v)| v.iter().enumerate().map(move |(i, f)| (first + i, f)))
    }

    /// Listed flows' specifications, for the builder's checks across them.
    pub(crate) fn listed_mut(&mut self) -> impl Iterator<Item = &mut FlowSpec> {
        self.parts.iter_mut().flat_map(|p| match p {
            FlowPart::Listed(v) => v.iter_mut(),
            FlowPart::Drawn(_) => [].iter_mut(),
        })
    }

    /// The flows that start at a fixed time (every flow that does not wait for a group), in
    /// the order they start: by start time, then id.
    pub fn feed(&self) -> FlowFeed {
        let mut listed: Vec<(Nanos, u32)> =
            self.listed_flows().filter(|(_, f)| f.after.is_none()).map(|(i, f)| (f.start, i as u32)).collect();
        listed.sort_unstable();
        let drawn = self
            .parts()
            .filter_map(|(first, p)| match p {
                FlowPart::Drawn(d) => {
                    let mut it = DrawIter::new(d.plan.clone(), d.count);
                    let head = it.next();
                    Some(DrawnRun { next_id: first as u32, it, head })
                }
                FlowPart::Listed(_) => None,
            })
            .collect();
        let remaining = listed.len()
            + self.parts.iter().filter(|p| matches!(p, FlowPart::Drawn(_))).map(FlowPart::len).sum::<usize>();
        FlowFeed { listed, next_listed: 0, drawn, remaining }
    }
}

/// The flows that start at fixed times, by (start, id): listed ones from a sorted list, drawn
/// ones from their parts' streams, each drawn when the one before it in its part has been
/// taken. It holds one drawn flow per drawn part.
pub struct FlowFeed {
    listed: Vec<(Nanos, u32)>,
    next_listed: usize,
    drawn: Vec<DrawnRun>,
    remaining: usize,
}

struct DrawnRun {
    next_id: u32,
    it: DrawIter,
    head: Option<FlowSpec>,
}

impl FlowFeed {
    /// The next flow to start: its start time and id.
    pub fn peek(&self) -> Option<(Nanos, u32)> {
        let listed = self.listed.get(self.next_listed).copied();
        let drawn = self.drawn.iter().filter_map(|r| r.head.as_ref().map(|f| (f.start, r.next_id))).min();
        match (listed, drawn) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Takes the next flow: its id, and its specification if it was drawn (a listed one's is
    /// in the [`FlowList`]).
    pub fn pop(&mut self) -> Option<(u32, Option<FlowSpec>)> {
        let (start, id) = self.peek()?;
        self.remaining -= 1;
        if self.listed.get(self.next_listed) == Some(&(start, id)) {
            self.next_listed += 1;
            return Some((id, None));
        }
        let run = self.drawn.iter_mut().find(|r| r.next_id == id && r.head.is_some())?;
        let spec = std::mem::replace(&mut run.head, run.it.next());
        run.next_id += 1;
        Some((id, spec))
    }

    /// Flows not taken yet.
    pub fn remaining(&self) -> usize {
        self.remaining
    }

    /// Why a drawn part stopped before its last flow, if one did: a trace file that changed
    /// since the scenario was loaded. The run cannot go on as the scenario said.
    pub fn failure(&self) -> Option<&str> {
        self.drawn.iter().find_map(|r| r.it.failure.as_deref())
    }
}
