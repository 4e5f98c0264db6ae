//! An output port: buffer, transmitter and propagation pipe of one directional link, with its
//! queue discipline ([`crate::qdisc`]).
//!
//! Under a first-in-first-out discipline, because the port sends at a fixed rate, a packet's
//! transmission start and its arrival at the far end are known the moment it is accepted. The
//! port keeps accepted packets in one ring (`ring`), oldest first, each with those two times.
//! The simulation schedules a single event per port: the arrival of the ring's head. Queue
//! occupancy at time `t` counts the packets whose transmission has not started by `t` (the
//! packet being serialized is on the wire, not in the buffer); it is brought up to date lazily
//! by [`Port::advance`].
//!
//! Under an ordered discipline (strict priority, say) the discipline holds the waiting packets
//! and the ring only those whose transmission has started. [`Port::advance`] then asks the
//! discipline for the next packet each time the transmitter freed before `now`, in time order,
//! so each choice is made among the packets that had arrived by then; the single event per
//! port is still the ring head's arrival, which always comes after the next choice is due.
//!
//! A lossless port (priority flow control, [`Port::with_pfc`]) runs the ordered path with its
//! own queues, one per packet priority, served in arrival order among the priorities that are
//! not paused ([`PfcQueues`]); its buffer is unlimited, since the switch that feeds on it
//! pauses its senders instead. A paused priority keeps its packets until it is resumed
//! ([`Port::set_paused`]); the simulation wakes the port whenever its transmitter frees
//! ([`Port::pfc_wake`]), so that each packet leaves the buffer, and the switch's count of what
//! each input holds, at the time its transmission starts.

use crate::packet::{flags, NodeId, PacketId, PacketMeta};
use crate::qdisc::{AnyQdisc, BufferLimit, LinkInfo, QueueConfig, QueueView, Verdict, Waiting};
use fctlab_engine::{BitsPerSec, Nanos, Rng, TxClock};
use std::collections::VecDeque;

/// What a buffer of N packets (or B bytes) holds.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum BufferModel {
    /// N packets waiting plus the one being transmitted; a packet that finds the transmitter
    /// idle is never dropped.
    #[default]
    Waiting,
    /// ns-2's `queue-limit N`: the limit is tested on every arrival, idle transmitter or not.
    /// DropTail (drop-tail.cc 91-93) drops when waiting + 1 >= N (bytes: waiting bytes + the
    /// packet's >= B), so it holds N - 1 waiting plus one in transmission; RED (red.cc 686-716)
    /// drops when waiting >= N (in byte mode: waiting bytes >= N × mean_pktsize_).
    Ns2,
}

/// Counters of a port, reported in `links.parquet`.
#[derive(Clone, Debug, Default)]
pub struct PortStats {
    /// Packets (and their wire bytes) that crossed the link completely.
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub drops: u64,
    pub ecn_marks: u64,
    /// Data packets the port's discipline cut to their headers (trimming).
    pub trimmed: u64,
    pub max_queue_pkts: u32,
    pub max_queue_bytes: u64,
    /// Integral of the queue length in packets over time (packet-nanoseconds).
    pub queue_area_pkt_ns: u128,
}

/// The packet priorities priority flow control pauses separately (802.1Qbb's eight classes).
pub const PFC_PRIORITIES: usize = 8;

/// The queues of a lossless port: the waiting packets of each priority in arrival order, the
/// priorities paused now, and the packets whose transmission started since the simulation
/// last took them ([`Port::take_started`]).
#[derive(Clone, Debug, Default)]
pub struct PfcQueues {
    queues: [VecDeque<(u64, Waiting)>; PFC_PRIORITIES],
    next_seq: u64,
    paused: u8,
    /// Strict priority among the priorities not paused (0 first), rather than arrival order.
    strict: bool,
    started: Vec<Waiting>,
    /// Per priority: the pauses received and the time paused (nanoseconds, up to the last
    /// resume), and since when it is paused now.
    pub pauses: [u64; PFC_PRIORITIES],
    pub paused_ns: [u64; PFC_PRIORITIES],
    paused_since: [Nanos; PFC_PRIORITIES],
}

/// The PFC priority of a packet: its band, the last of the eight for any above.
pub fn pfc_priority(meta: &PacketMeta) -> usize {
    (meta.prio as usize).min(PFC_PRIORITIES - 1)
}

impl PfcQueues {
    fn push(&mut self, w: Waiting) {
        let q = pfc_priority(&w.meta);
        self.queues[q].push_back((self.next_seq, w));
        self.next_seq += 1;
    }

    /// The oldest packet of a priority that is not paused, or with `strict` the first packet of
    /// the highest priority (0 first) that is not paused.
    fn pop(&mut self) -> Option<Waiting> {
        let mut best: Option<(u64, usize)> = None;
        for (q, queue) in self.queues.iter().enumerate() {
            if self.paused & (1 << q) != 0 {
                continue;
            }
            if let Some(&(seq, _)) = queue.front() {
                if best.map_or(true, |(s, _)| seq < s) {
                    best = Some((seq, q));
                    if self.strict {
                        break;
                    }
                }
            }
        }
        let (_, q) = best?;
        let (_, w) = self.queues[q].pop_front()?;
        self.started.push(w);
        Some(w)
    }

    /// The packets of priority `prio` waiting, oldest first.
    pub fn waiting(&self, prio: usize) -> impl Iterator<Item = &Waiting> {
        self.queues[prio].iter().map(|(_, w)| w)
    }

    /// Whether priority `prio` is paused.
    pub fn is_paused(&self, prio: usize) -> bool {
        self.paused & (1 << prio) != 0
    }

    /// The time priority `prio` has been paused up to `now` (nanoseconds).
    pub fn paused_ns_at(&self, prio: usize, now: Nanos) -> u64 {
        let open = if self.is_paused(prio) { (now - self.paused_since[prio]).as_nanos() } else { 0 };
        self.paused_ns[prio] + open
    }
}

#[derive(Copy, Clone, Debug)]
struct InFlight {
    pkt: PacketId,
    meta: PacketMeta,
    tx_start: Nanos,
    arrive: Nanos,
}

/// What happened to a packet offered to a port.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EnqueueOutcome {
    /// Accepted. `schedule_arrival` is the arrival time of the new ring head when the ring was
    /// empty before (the caller must schedule an arrival event at that time); `None` otherwise.
    Accepted { schedule_arrival: Option<Nanos> },
    /// Accepted in place of the waiting packet `dropped`, which the discipline dropped to make
    /// room (counted as a drop; the caller must free it). The buffer was full, so the
    /// transmitter is busy and no arrival needs scheduling.
    Replaced { dropped: PacketId },
    /// Dropped, for the reason given. The caller still owns and must free the packet.
    Dropped(DropCause),
}

/// Why a port dropped a packet (the drop trace's `cause`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DropCause {
    /// The buffer was full.
    BufferFull,
    /// The discipline dropped it with room in the buffer: RED's early drop, or a mark that a
    /// packet without ECN cannot take.
    Early,
    /// A waiting packet the discipline dropped to make room for a more urgent arrival.
    PushedOut,
    /// A switch had no route for it (a dead link): dropped by the simulation, not a port.
    NoRoute,
    /// A trimming port cut it to its header and found no room for the header either.
    TrimmedHeader,
}

impl DropCause {
    /// Why a full buffer drops `meta`'s packet: a trimmed header (cut here or upstream) is
    /// counted as such.
    #[inline]
    pub fn full_for(meta: &PacketMeta) -> DropCause {
        if meta.has(flags::TRIMMED) {
            DropCause::TrimmedHeader
        } else {
            DropCause::BufferFull
        }
    }

    /// The cause as the drop trace writes it.
    pub fn name(self) -> &'static str {
        match self {
            DropCause::BufferFull => "buffer_full",
            DropCause::Early => "early",
            DropCause::PushedOut => "pushed_out",
            DropCause::NoRoute => "no_route",
            DropCause::TrimmedHeader => "trimmed_header",
        }
    }
}

/// The output port of one directional link.
///
/// Laid out for the cache (`repr(C)`, fields in this order, aligned to a line): the first
/// 64-byte line holds what every packet reads and writes (ring, transmitter, queue length,
/// far end), the second the per-packet counters and the serialization clock, the rest what
/// only admission decisions or the results read.
#[repr(C, align(64))]
pub struct Port {
    ring: VecDeque<InFlight>,
    /// Time the transmitter becomes free.
    busy_until: Nanos,
    /// Bytes at the tail of the ring whose transmission has not started yet.
    waiting_bytes: u64,
    /// Time up to which the queue-length integral has been accumulated.
    area_time: Nanos,
    /// Packets at the tail of the ring whose transmission has not started yet.
    waiting_pkts: u32,
    pub to: NodeId,
    /// Integral of the queue length in packets over time (packet-nanoseconds).
    queue_area_pkt_ns: u128,
    clock: TxClock,
    pub delay: Nanos,
    tx_packets: u64,
    tx_bytes: u64,
    /// The discipline holds the waiting packets (read by every [`Port::advance`], so in the
    /// line it touches).
    ordered: bool,
    /// The discipline never marks nor drops (DropTail): the port need not ask it.
    passive: bool,
    pub limit: BufferLimit,
    /// What every arrival reads with `limit`, in its line.
    buffer_model: BufferModel,
    /// ns-2's admission (its buffer model or its RED) rather than the classic one: one test
    /// on every arrival, the rest out of the hot path.
    ns2_admission: bool,
    /// A mark the packet cannot take (not ECN-capable) drops it (RED in ECN mode).
    drop_unmarkable: bool,
    disc: AnyQdisc,
    max_queue_bytes: u64,
    drops: u64,
    ecn_marks: u64,
    max_queue_pkts: u32,
    pub from: NodeId,
    pub rate: BitsPerSec,
    /// The per-priority queues of a lossless port (priority flow control), or none.
    pfc: Option<Box<PfcQueues>>,
    /// The discipline trims (`Discipline::trim`), and the packets it trimmed (read by ordered
    /// disciplines only: last, out of the lines every packet reads).
    trimmed: u64,
    trims: bool,
}

impl Port {
    pub fn new(
        from: NodeId,
        to: NodeId,
        rate: BitsPerSec,
        delay: Nanos,
        limit: BufferLimit,
        queue: &QueueConfig,
        rng: Rng,
    ) -> Port {
        let disc = queue.build(&LinkInfo { rate, delay }, rng);
        let ns2_admission = disc.own_admission();
        Port {
            ring: VecDeque::with_capacity(4),
            busy_until: Nanos::ZERO,
            waiting_bytes: 0,
            area_time: Nanos::ZERO,
            waiting_pkts: 0,
            to,
            queue_area_pkt_ns: 0,
            clock: TxClock::new(rate),
            delay,
            tx_packets: 0,
            tx_bytes: 0,
            ordered: disc.ordered(),
            trims: disc.trims(),
            trimmed: 0,
            passive: disc.passive(),
            limit,
            drop_unmarkable: disc.drop_unmarkable(),
            disc,
            max_queue_bytes: 0,
            drops: 0,
            ecn_marks: 0,
            max_queue_pkts: 0,
            buffer_model: BufferModel::Waiting,
            ns2_admission,
            from,
            rate,
            pfc: None,
        }
    }

    /// The port made lossless (priority flow control): its own queue per priority, served in
    /// arrival order among those not paused, and an unlimited buffer. For first-in-first-out
    /// disciplines (their marking still applies), and for strict priority, whose bands become
    /// the eight priorities served highest first among those not paused (the scenario refuses
    /// its per-band buffers and push-out, and marks per port). pFabric's order is refused.
    pub fn with_pfc(mut self) -> Port {
        let strict = matches!(self.disc, AnyQdisc::StrictPriority(_));
        debug_assert!(strict || !self.disc.ordered(), "PFC over an ordered discipline");
        self.pfc = Some(Box::new(PfcQueues { strict, ..PfcQueues::default() }));
        self.ordered = true;
        self.limit = BufferLimit::Unlimited;
        self
    }

    /// Counts a packet the node at the far end dropped on arrival (a lossless switch whose
    /// input passed its headroom): the link's drops.
    pub fn count_drop(&mut self) {
        self.drops += 1;
    }

    /// The port's priority flow control state, if it is lossless.
    pub fn pfc(&self) -> Option<&PfcQueues> {
        self.pfc.as_deref()
    }

    /// A waiting packet into the discipline, or the lossless queues.
    #[inline]
    fn hold(&mut self, w: Waiting) {
        match self.pfc.as_deref_mut() {
            Some(q) => q.push(w),
            None => self.disc.push(w),
        }
    }

    /// The next packet to transmit: the discipline's choice, or the lossless queues'.
    #[inline]
    fn next_waiting(&mut self) -> Option<Waiting> {
        match self.pfc.as_deref_mut() {
            Some(q) => q.pop(),
            None => self.disc.pop(),
        }
    }

    /// Pauses (`on`) or resumes priority `prio` of a lossless port at `now`: a pause frame
    /// arrived. Returns the arrival to schedule when a resume put a packet on an empty wire.
    pub fn set_paused(&mut self, now: Nanos, prio: usize, on: bool) -> Option<Nanos> {
        self.advance(now);
        let q = self.pfc.as_deref_mut()?;
        let bit = 1u8 << prio.min(PFC_PRIORITIES - 1);
        let prio = prio.min(PFC_PRIORITIES - 1);
        if on && q.paused & bit == 0 {
            q.paused |= bit;
            q.pauses[prio] += 1;
            q.paused_since[prio] = now;
        } else if !on && q.paused & bit != 0 {
            q.paused &= !bit;
            q.paused_ns[prio] += (now - q.paused_since[prio]).as_nanos();
        }
        self.serve(now)
    }

    /// Starts what a lossless port can send at `now`: a transmitter that stood idle while its
    /// packets were paused is free from `now`. Returns the arrival to schedule when a packet
    /// went on an empty wire.
    pub fn serve(&mut self, now: Nanos) -> Option<Nanos> {
        if self.busy_until < now {
            self.busy_until = now;
        }
        let was_empty = self.ring.is_empty();
        self.advance(now);
        if was_empty {
            self.ring.front().map(|e| e.arrive)
        } else {
            None
        }
    }

    /// When the simulation must wake a lossless port to start its next packet: the end of the
    /// transmission under way, if packets wait.
    pub fn pfc_wake(&self, now: Nanos) -> Option<Nanos> {
        (self.pfc.is_some() && self.waiting_pkts > 0 && self.busy_until > now).then_some(self.busy_until)
    }

    /// The packets of a lossless port whose transmission started since the last call.
    pub fn take_started(&mut self, out: &mut Vec<Waiting>) {
        if let Some(q) = self.pfc.as_deref_mut() {
            out.append(&mut q.started);
        }
    }

    /// The port with the given buffer model (the default is [`BufferModel::Waiting`]).
    pub fn with_buffer_model(mut self, model: BufferModel) -> Port {
        self.buffer_model = model;
        self.ns2_admission = model == BufferModel::Ns2 || self.disc.own_admission();
        self
    }

    /// The port's discipline.
    pub fn discipline(&self) -> &AnyQdisc {
        &self.disc
    }

    /// Whether an arriving packet of `wire` bytes finds the buffer full under the port's
    /// buffer model (`must_wait`: the transmitter is busy).
    fn full_for(&self, must_wait: bool, wire: u64) -> bool {
        match self.buffer_model {
            BufferModel::Waiting => must_wait && self.limit.would_overflow(self.waiting_pkts, self.waiting_bytes, wire),
            BufferModel::Ns2 => self.disc.ns2_full(self.limit, self.waiting_pkts, self.waiting_bytes, wire),
        }
    }

    /// ns-2's admission of an arriving packet: its buffer model, and its RED, which sees every
    /// arrival, also one that the full buffer then drops.
    #[cold]
    #[inline(never)]
    fn ns2_verdict(&mut self, view: QueueView, must_wait: bool, meta: &PacketMeta) -> (Verdict, DropCause) {
        let full = self.full_for(must_wait, meta.wire_bytes as u64);
        let cause = if full { DropCause::BufferFull } else { DropCause::Early };
        let verdict = if self.disc.own_admission() {
            self.disc.on_arrival(&QueueView { full, ..view }, meta)
        } else if full {
            Verdict::Drop
        } else {
            self.disc.on_arrival(&view, meta)
        };
        (verdict, cause)
    }

    /// The transmitter took the discipline's next packets while it was free before `now`
    /// (ordered disciplines): each leaves the buffer for the ring when its transmission starts.
    /// (Inline: most calls find no packet to start, and only bring the occupancy integral up
    /// to date.)
    #[inline(always)]
    fn advance_ordered(&mut self, now: Nanos) {
        if self.waiting_pkts > 0 && self.busy_until <= now {
            self.start_waiting(now);
        }
        if now > self.area_time {
            if self.waiting_pkts > 0 {
                self.queue_area_pkt_ns += self.waiting_pkts as u128 * (now - self.area_time).as_nanos() as u128;
            }
            self.area_time = now;
        }
    }

    /// [`Port::advance_ordered`]'s packets that started while the transmitter was free.
    #[cold]
    #[inline(never)]
    fn start_waiting(&mut self, now: Nanos) {
        while self.waiting_pkts > 0 && self.busy_until <= now {
            // Not before the port was last brought up to date: a transmitter that stood idle
            // while its waiting packets were paused starts no packet in the time before.
            let t = self.busy_until.max(self.area_time);
            let Some(w) = self.next_waiting() else { break };
            self.queue_area_pkt_ns += self.waiting_pkts as u128 * (t - self.area_time).as_nanos() as u128;
            self.area_time = t;
            let wire = w.meta.wire_bytes as u64;
            self.waiting_pkts -= 1;
            self.waiting_bytes -= wire;
            self.busy_until = t + self.clock.tx_time(wire);
            self.ring.push_back(InFlight {
                pkt: w.pkt,
                meta: w.meta,
                tx_start: t,
                arrive: self.busy_until + self.delay,
            });
        }
    }

    /// The port's counters so far.
    pub fn stats(&self) -> PortStats {
        PortStats {
            tx_packets: self.tx_packets,
            tx_bytes: self.tx_bytes,
            drops: self.drops,
            ecn_marks: self.ecn_marks,
            trimmed: self.trimmed,
            max_queue_pkts: self.max_queue_pkts,
            max_queue_bytes: self.max_queue_bytes,
            queue_area_pkt_ns: self.queue_area_pkt_ns,
        }
    }

    /// Brings the queue occupancy up to time `now`: packets whose transmission has started
    /// leave the buffer, and the time-weighted occupancy integral is accumulated.
    #[inline]
    pub fn advance(&mut self, now: Nanos) {
        if self.ordered {
            return self.advance_ordered(now);
        }
        self.advance_fifo(now);
    }

    /// [`Port::advance`] under a first-in-first-out discipline: the packets whose transmission
    /// has started by `now` leave the buffer.
    #[inline(always)]
    fn advance_fifo(&mut self, now: Nanos) {
        while self.waiting_pkts > 0 {
            let idx = self.ring.len() - self.waiting_pkts as usize;
            let e = self.ring[idx];
            if e.tx_start > now {
                break;
            }
            self.queue_area_pkt_ns += self.waiting_pkts as u128 * (e.tx_start - self.area_time).as_nanos() as u128;
            self.area_time = e.tx_start;
            self.waiting_pkts -= 1;
            self.waiting_bytes -= e.meta.wire_bytes as u64;
        }
        if now > self.area_time {
            self.queue_area_pkt_ns += self.waiting_pkts as u128 * (now - self.area_time).as_nanos() as u128;
            self.area_time = now;
        }
    }

    /// Offers the packet `id` (described by `meta`) to the port at time `now`. Marking sets
    /// CE in the flags the port keeps for it.
    #[inline]
    pub fn enqueue(&mut self, now: Nanos, id: PacketId, mut meta: PacketMeta) -> EnqueueOutcome {
        if self.ordered {
            return self.enqueue_ordered(now, id, meta);
        }
        self.advance_fifo(now);
        let wire = meta.wire_bytes as u64;
        // Only a packet that has to wait occupies the buffer; an idle transmitter takes it at once.
        let must_wait = self.busy_until > now;
        let (verdict, cause) = if !self.ns2_admission {
            if must_wait && self.limit.would_overflow(self.waiting_pkts, self.waiting_bytes, wire) {
                self.drops += 1;
                return EnqueueOutcome::Dropped(DropCause::full_for(&meta));
            }
            if self.passive {
                (Verdict::Accept, DropCause::Early)
            } else {
                (self.disc.on_arrival(&self.view(now), &meta), DropCause::Early)
            }
        } else {
            self.ns2_verdict(self.view(now), must_wait, &meta)
        };
        if !self.admit(verdict, &mut meta, false) {
            return EnqueueOutcome::Dropped(cause);
        }
        let tx_start = if self.busy_until > now { self.busy_until } else { now };
        self.busy_until = tx_start + self.clock.tx_time(wire);
        let arrive = self.busy_until + self.delay;
        let was_empty = self.ring.is_empty();
        self.ring.push_back(InFlight { pkt: id, meta, tx_start, arrive });
        if tx_start > now {
            self.count_waiting(wire);
        }
        EnqueueOutcome::Accepted { schedule_arrival: if was_empty { Some(arrive) } else { None } }
    }

    /// Applies the discipline's verdict: marks the packet, or counts a drop (false). A packet
    /// that took another's place (`replaced`) is kept whatever the verdict.
    #[inline(always)]
    fn admit(&mut self, verdict: Verdict, meta: &mut PacketMeta, replaced: bool) -> bool {
        match verdict {
            // (A trim was applied before the buffer decided: `enqueue_ordered`.)
            Verdict::Accept => true,
            Verdict::Mark if meta.has(flags::ECT) => {
                if !meta.has(flags::CE) {
                    meta.flags |= flags::CE;
                    self.ecn_marks += 1;
                }
                true
            }
            // A packet admitted in another's place is kept (the discipline chose it).
            _ if replaced => true,
            Verdict::Mark if !self.drop_unmarkable => true,
            // A lossless port drops nothing early: RED marks what it can and lets the rest
            // through (switches turn WRED's drops off on lossless classes).
            Verdict::Mark | Verdict::Drop if self.pfc.is_some() => true,
            // A drop, or a mark that RED in ECN mode cannot make.
            Verdict::Mark | Verdict::Drop => {
                self.drops += 1;
                false
            }
        }
    }

    /// [`Port::enqueue`] under an ordered discipline: a packet that must wait goes to the
    /// discipline, which may make room for it by dropping another.
    #[inline(always)]
    fn enqueue_ordered(&mut self, now: Nanos, id: PacketId, mut meta: PacketMeta) -> EnqueueOutcome {
        self.advance_ordered(now);
        // A trimming discipline decides first: a packet it trims waits (or is dropped) as the
        // header it becomes.
        if self.trims {
            if let Some(header) = self.disc.trim(&self.view(now), &meta) {
                meta.wire_bytes = header;
                meta.flags |= flags::TRIMMED;
                self.trimmed += 1;
            }
        }
        let wire = meta.wire_bytes as u64;
        // A lossless port holds a packet of a paused priority even when its transmitter is free.
        let must_wait = self.busy_until > now || self.pfc.as_deref().is_some_and(|q| q.is_paused(pfc_priority(&meta)));
        let mut dropped = None;
        let (verdict, cause) = if !self.ns2_admission {
            if must_wait && self.limit.would_overflow(self.waiting_pkts, self.waiting_bytes, wire) {
                dropped = self.make_room(&meta, wire);
                if dropped.is_none() {
                    self.drops += 1;
                    return EnqueueOutcome::Dropped(DropCause::full_for(&meta));
                }
            }
            (self.disc.on_arrival(&self.view(now), &meta), DropCause::Early)
        } else {
            self.ns2_verdict(self.view(now), must_wait, &meta)
        };
        if !self.admit(verdict, &mut meta, dropped.is_some()) {
            return EnqueueOutcome::Dropped(cause);
        }
        if let Some(victim) = dropped {
            self.hold(Waiting { pkt: id, meta });
            self.count_waiting(wire);
            return EnqueueOutcome::Replaced { dropped: victim };
        }
        if must_wait {
            self.hold(Waiting { pkt: id, meta });
            self.count_waiting(wire);
            return EnqueueOutcome::Accepted { schedule_arrival: None };
        }
        // The transmitter is free: the packet goes on the wire at once.
        if let Some(q) = self.pfc.as_deref_mut() {
            q.started.push(Waiting { pkt: id, meta });
        }
        self.busy_until = now + self.clock.tx_time(wire);
        let arrive = self.busy_until + self.delay;
        let was_empty = self.ring.is_empty();
        self.ring.push_back(InFlight { pkt: id, meta, tx_start: now, arrive });
        EnqueueOutcome::Accepted { schedule_arrival: if was_empty { Some(arrive) } else { None } }
    }

    /// The queue as a packet arriving at `now` finds it.
    #[inline(always)]
    fn view(&self, now: Nanos) -> QueueView {
        QueueView {
            now,
            waiting_pkts: self.waiting_pkts,
            waiting_bytes: self.waiting_bytes,
            busy_until: self.busy_until,
            full: false,
        }
    }

    #[inline]
    fn count_waiting(&mut self, wire: u64) {
        self.waiting_pkts += 1;
        self.waiting_bytes += wire;
        if self.waiting_pkts > self.max_queue_pkts {
            self.max_queue_pkts = self.waiting_pkts;
        }
        if self.waiting_bytes > self.max_queue_bytes {
            self.max_queue_bytes = self.waiting_bytes;
        }
    }

    /// A full buffer: the ordered discipline may drop a waiting packet (counted) in place of
    /// the arriving one of `wire` bytes, if that makes room.
    #[cold]
    #[inline(never)]
    fn make_room(&mut self, meta: &PacketMeta, wire: u64) -> Option<PacketId> {
        // With a byte buffer the victim must free enough for the packet.
        let need = match self.limit {
            BufferLimit::Bytes(b) => (self.waiting_bytes + wire).saturating_sub(b),
            _ => 0,
        };
        let victim = self.disc.make_room(meta, need)?;
        self.drops += 1;
        self.waiting_pkts -= 1;
        self.waiting_bytes -= victim.meta.wire_bytes as u64;
        Some(victim.pkt)
    }

    /// Removes the ring head, which arrives at the far end now. Returns it and the arrival
    /// time of the next head, if any (the caller schedules the next arrival event then).
    #[inline(always)]
    pub fn pop_arrival(&mut self, now: Nanos) -> (PacketId, PacketMeta, Option<Nanos>) {
        self.advance(now);
        let head = self.ring.pop_front().expect("arrival event on an empty port");
        self.tx_packets += 1;
        self.tx_bytes += head.meta.wire_bytes as u64;
        (head.pkt, head.meta, self.ring.front().map(|e| e.arrive))
    }

    /// Asks the CPU for the ring head's cache line (a hint, see [`fctlab_engine::prefetch`]).
    #[inline(always)]
    pub fn prefetch_head(&self) {
        if let Some(e) = self.ring.front() {
            fctlab_engine::prefetch(e);
        }
    }

    /// The ring head (the next packet to arrive), if any.
    #[inline(always)]
    pub fn head(&self) -> Option<(PacketId, PacketMeta)> {
        self.ring.front().map(|e| (e.pkt, e.meta))
    }

    /// When the ring head's transmission started, and when it arrives at the far end.
    pub fn head_times(&self) -> Option<(Nanos, Nanos)> {
        self.ring.front().map(|e| (e.tx_start, e.arrive))
    }

    /// Queue occupancy (packets, bytes) at `now`.
    #[inline]
    pub fn queue_at(&mut self, now: Nanos) -> (u32, u64) {
        self.advance(now);
        (self.waiting_pkts, self.waiting_bytes)
    }

    /// When the port can take a packet that would not wait (None: now): a sender that paces
    /// itself into it (a NIC's queue pairs) sends its next packet then. While packets wait,
    /// the end of the transmission under way; while a lossless port's waiting packets are
    /// paused, a packet time of `bytes` from now (asked again then).
    pub fn ready_at(&mut self, now: Nanos, bytes: u64) -> Option<Nanos> {
        self.advance(now);
        if self.waiting_pkts == 0 {
            return None;
        }
        Some(if self.busy_until > now { self.busy_until } else { now + self.clock.tx_time(bytes) })
    }

    /// Wire bytes delivered across the link so far (packets that reached the far end).
    #[inline]
    pub fn tx_bytes(&self) -> u64 {
        self.tx_bytes
    }

    /// Packets accepted but not yet arrived at the far end (queued or on the wire).
    pub fn in_ring(&self) -> usize {
        self.ring.len()
    }

    /// Ids of all packets still held, on the wire or waiting (for accounting at the end of a
    /// run).
    pub fn held_packets(&self) -> Vec<PacketId> {
        let mut out: Vec<PacketId> = self.ring.iter().map(|e| e.pkt).collect();
        self.disc.held(&mut out);
        if let Some(q) = self.pfc.as_deref() {
            out.extend(q.queues.iter().flatten().map(|(_, w)| w.pkt));
        }
        out
    }

    /// Time-weighted mean queue length in packets over [0, until].
    pub fn mean_queue_pkts(&mut self, until: Nanos) -> f64 {
        self.advance(until);
        if until == Nanos::ZERO {
            0.0
        } else {
            self.queue_area_pkt_ns as f64 / until.as_nanos() as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::PacketPool;

    /// A 1 Gbps port with a 10 us link running `queue`.
    fn port_with(limit: BufferLimit, queue: &QueueConfig) -> Port {
        Port::new(
            NodeId(0),
            NodeId(1),
            BitsPerSec(1_000_000_000),
            Nanos::from_micros(10),
            limit,
            queue,
            Rng::stream(0, 0),
        )
    }

    fn port(limit: BufferLimit) -> Port {
        port_with(limit, &QueueConfig::DropTail(()))
    }

    fn pkt(pool: &mut PacketPool) -> (PacketId, PacketMeta) {
        let p = crate::packet::Packet { wire_bytes: 1500, ..Default::default() };
        (pool.alloc(p.clone()), p.meta())
    }

    #[test]
    fn serializes_back_to_back_and_counts_waiting() {
        let mut pool = PacketPool::new();
        let mut p = port(BufferLimit::Packets(2));
        let (a, pa) = pkt(&mut pool);
        let (b, pb) = pkt(&mut pool);
        let (c, pc) = pkt(&mut pool);
        let (d, pd) = pkt(&mut pool);
        // First packet starts at once: 12 us serialization + 10 us delay.
        assert_eq!(
            p.enqueue(Nanos::from_nanos(0), a, pa),
            EnqueueOutcome::Accepted { schedule_arrival: Some(Nanos::from_nanos(22_000)) }
        );
        assert_eq!(p.enqueue(Nanos::from_nanos(0), b, pb), EnqueueOutcome::Accepted { schedule_arrival: None });
        assert_eq!(p.enqueue(Nanos::from_nanos(0), c, pc), EnqueueOutcome::Accepted { schedule_arrival: None });
        assert_eq!(p.queue_at(Nanos::from_nanos(0)), (2, 3000));
        // Buffer of 2 is full: the fourth is dropped and counted.
        assert_eq!(p.enqueue(Nanos::from_nanos(0), d, pd), EnqueueOutcome::Dropped(DropCause::BufferFull));
        assert_eq!(p.stats().drops, 1);
        // At 12 us the second packet starts transmitting.
        assert_eq!(p.queue_at(Nanos::from_nanos(12_000)), (1, 1500));
        assert_eq!(p.pop_arrival(Nanos::from_nanos(22_000)), (a, pa, Some(Nanos::from_nanos(34_000))));
        assert_eq!(p.pop_arrival(Nanos::from_nanos(34_000)), (b, pb, Some(Nanos::from_nanos(46_000))));
        assert_eq!(p.stats().max_queue_pkts, 2);
        // Integral: 2 pkts for 12us, 1 pkt for 12us = 36 pkt-us; mean over 48us = 0.75
        assert!((p.mean_queue_pkts(Nanos::from_nanos(48_000)) - 0.75).abs() < 1e-9);
    }

    #[test]
    fn zero_buffer_still_passes_packets_to_an_idle_link() {
        let mut pool = PacketPool::new();
        let mut p = port(BufferLimit::Packets(0));
        let (a, pa) = pkt(&mut pool);
        let (b, pb) = pkt(&mut pool);
        assert!(matches!(p.enqueue(Nanos::from_nanos(0), a, pa), EnqueueOutcome::Accepted { .. }));
        assert_eq!(p.enqueue(Nanos::from_nanos(0), b, pb), EnqueueOutcome::Dropped(DropCause::BufferFull));
        let (c, pc) = pkt(&mut pool);
        assert!(matches!(p.enqueue(Nanos::from_nanos(12_000), c, pc), EnqueueOutcome::Accepted { .. }));
    }

    #[test]
    fn byte_limit() {
        let mut pool = PacketPool::new();
        let mut p = port(BufferLimit::Bytes(3000));
        for i in 0..4 {
            let (id, pk) = pkt(&mut pool);
            let r = p.enqueue(Nanos::from_nanos(0), id, pk);
            // first goes on the wire, two wait (3000 bytes), the fourth overflows
            assert_eq!(matches!(r, EnqueueOutcome::Dropped(DropCause::BufferFull)), i == 3);
        }
    }

    fn prio_pkt(pool: &mut PacketPool, prio: u8) -> (PacketId, PacketMeta) {
        let (id, meta) = pkt(pool);
        (id, PacketMeta { prio, ..meta })
    }

    #[test]
    fn a_pause_stops_one_priority_only_and_a_resume_sends_from_then() {
        let mut pool = PacketPool::new();
        let mut p = port(BufferLimit::Packets(1)).with_pfc();
        let us = Nanos::from_micros;
        let (a, ma) = prio_pkt(&mut pool, 3);
        // A goes on the wire at once (12 us of 1500 B at 1 Gbps).
        assert!(matches!(p.enqueue(us(0), a, ma), EnqueueOutcome::Accepted { schedule_arrival: Some(_) }));
        assert_eq!(p.set_paused(us(1), 3, true), None);
        let (b, mb) = prio_pkt(&mut pool, 3);
        let (c, mc) = prio_pkt(&mut pool, 0);
        let (d, md) = prio_pkt(&mut pool, 3);
        for (id, m) in [(b, mb), (c, mc), (d, md)] {
            // The buffer of one packet does not bound a lossless port.
            assert!(matches!(p.enqueue(us(2), id, m), EnqueueOutcome::Accepted { schedule_arrival: None }));
        }
        assert_eq!(p.pfc_wake(us(2)), Some(us(12)));
        // At A's end, C (priority 0) goes; B and D (paused) wait.
        assert_eq!(p.serve(us(12)), None);
        let mut started = Vec::new();
        p.take_started(&mut started);
        assert_eq!(started.iter().map(|w| w.pkt).collect::<Vec<_>>(), vec![a, c]);
        assert_eq!(p.queue_at(us(30)), (2, 3000));
        // Both arrive; the wire is empty; the resume at 50 us sends B then D, from 50 us.
        p.pop_arrival(us(22));
        p.pop_arrival(us(34));
        let arrival = p.set_paused(us(50), 3, false);
        assert_eq!(arrival, Some(us(50 + 12 + 10)));
        assert_eq!(p.head_times(), Some((us(50), us(72))));
        assert_eq!(p.pfc_wake(us(50)), Some(us(62)));
        p.advance(us(62));
        p.take_started(&mut started);
        assert_eq!(started.iter().map(|w| w.pkt).collect::<Vec<_>>(), vec![a, c, b, d]);
        let q = p.pfc().unwrap();
        assert_eq!((q.pauses[3], q.paused_ns_at(3, us(60)), q.pauses[0]), (1, 49_000, 0));
    }

    #[test]
    fn a_packet_of_a_paused_priority_waits_at_an_idle_transmitter() {
        let mut pool = PacketPool::new();
        let mut p = port(BufferLimit::Unlimited).with_pfc();
        let us = Nanos::from_micros;
        p.set_paused(us(0), 2, true);
        let (a, ma) = prio_pkt(&mut pool, 2);
        assert!(matches!(p.enqueue(us(1), a, ma), EnqueueOutcome::Accepted { schedule_arrival: None }));
        assert_eq!((p.in_ring(), p.queue_at(us(1))), (0, (1, 1500)));
        assert_eq!(p.pfc_wake(us(1)), None, "nothing to wake for: only a resume sends it");
        assert_eq!(p.set_paused(us(5), 2, false), Some(us(5 + 12 + 10)));
        assert_eq!(p.held_packets(), vec![a]);
    }

    #[test]
    fn the_mean_queue_counts_a_pause_once_however_often_the_port_is_looked_at() {
        // A packet in transmission until 12 us, another waiting behind it; the priority is
        // paused at 1 us and resumed at 40 us. The second packet waits from 0 to 40 us, and
        // the port is looked at four times meanwhile (a NIC asking when it can take a packet).
        let mut pool = PacketPool::new();
        let mut p = port(BufferLimit::Unlimited).with_pfc();
        let us = Nanos::from_micros;
        let (a, ma) = prio_pkt(&mut pool, 2);
        let (b, mb) = prio_pkt(&mut pool, 2);
        p.enqueue(us(0), a, ma);
        p.enqueue(us(0), b, mb);
        p.set_paused(us(1), 2, true);
        for t in [5, 15, 25, 35] {
            assert_eq!(p.queue_at(us(t)), (1, 1500));
        }
        p.set_paused(us(40), 2, false);
        assert_eq!(p.queue_at(us(41)), (0, 0));
        assert!((p.mean_queue_pkts(us(80)) - 40.0 / 80.0).abs() < 1e-9, "{}", p.mean_queue_pkts(us(80)));
    }

    #[test]
    fn layout_keeps_the_hot_line_and_the_size() {
        let p = port(BufferLimit::Packets(1));
        let base = &p as *const Port as usize;
        let off = |f: usize| f - base;
        // The per-packet line is unchanged; what every arrival reads (the buffer limit and
        // model, the admission flags, the discipline) shares one line, and `ordered` sits in
        // the line that every advance touches.
        assert_eq!(off(&p.to as *const _ as usize), 60);
        let line = |f: usize| off(f) / 64;
        let limit = line(&p.limit as *const _ as usize);
        assert_eq!(limit, line(&p.buffer_model as *const _ as usize));
        assert_eq!(limit, line(&p.ns2_admission as *const _ as usize));
        assert_eq!(limit, line(&p.disc as *const _ as usize + std::mem::size_of::<AnyQdisc>() - 1));
        assert_eq!(line(&p.queue_area_pkt_ns as *const _ as usize), line(&p.ordered as *const _ as usize));
        assert_eq!(std::mem::size_of::<Port>(), 256);
    }

    fn ns2_port(limit: BufferLimit, queue: &QueueConfig) -> Port {
        port_with(limit, queue).with_buffer_model(BufferModel::Ns2)
    }

    /// How many of `n` packets offered at once a port accepts.
    fn accepted(p: &mut Port, n: usize, wire_bytes: u32) -> usize {
        let mut pool = PacketPool::new();
        (0..n)
            .filter(|_| {
                let pk = crate::packet::Packet { wire_bytes, ..Default::default() };
                let id = pool.alloc(pk.clone());
                matches!(p.enqueue(Nanos::from_nanos(0), id, pk.meta()), EnqueueOutcome::Accepted { .. })
            })
            .count()
    }

    #[test]
    fn ns2_buffer_model_holds_n_minus_one_waiting() {
        // queue-limit 5 (drop-tail.cc 92): one on the wire and 4 waiting.
        let mut p = ns2_port(BufferLimit::Packets(5), &QueueConfig::DropTail(()));
        assert_eq!(accepted(&mut p, 10, 1500), 5);
        assert_eq!(p.queue_at(Nanos::from_nanos(0)), (4, 6000));
        // The default model holds 5 waiting.
        assert_eq!(accepted(&mut port(BufferLimit::Packets(5)), 10, 1500), 6);
        // Bytes (drop-tail.cc 93): waiting bytes + the packet's must stay below the limit.
        assert_eq!(accepted(&mut ns2_port(BufferLimit::Bytes(4500), &QueueConfig::DropTail(())), 10, 1500), 3);
        assert_eq!(accepted(&mut ns2_port(BufferLimit::Bytes(4501), &QueueConfig::DropTail(())), 10, 1500), 4);
        // The test applies to an idle transmitter too: queue-limit 1 passes nothing.
        assert_eq!(accepted(&mut ns2_port(BufferLimit::Packets(1), &QueueConfig::DropTail(())), 3, 1500), 0);
    }

    #[test]
    fn ns2_buffer_model_red_limit() {
        // RED's own test (red.cc 714): drop when N or more wait, so N wait plus one on the wire.
        let classic = QueueConfig::Red(crate::RedConfig {
            min_threshold_pkts: 1000.0,
            max_threshold_pkts: 2000.0,
            ..Default::default()
        });
        assert_eq!(accepted(&mut ns2_port(BufferLimit::Packets(5), &classic), 10, 1500), 6);
        // ns-2's RED in byte mode: N × mean_pktsize_ bytes (100 × 500 = 50,000: 34 waiting
        // packets of 1500 bytes reach 51,000).
        let red =
            QueueConfig::Red(crate::RedConfig { ns2: Some(crate::Ns2RedConfig::default()), ..Default::default() });
        assert_eq!(accepted(&mut ns2_port(BufferLimit::Packets(100), &red), 200, 1500), 35);
        let pkts = QueueConfig::Red(crate::RedConfig {
            ns2: Some(crate::Ns2RedConfig { bytes: false, ..Default::default() }),
            ..Default::default()
        });
        assert_eq!(accepted(&mut ns2_port(BufferLimit::Packets(100), &pkts), 200, 1500), 101);
        // Under the default model ns-2's RED holds N waiting packets like any port.
        let mut p = port_with(BufferLimit::Packets(100), &red);
        assert_eq!(accepted(&mut p, 200, 1500), 101);
        assert!(p.discipline().get::<crate::qdisc::Red>().and_then(|r| r.ns2()).is_some());
    }

    #[test]
    fn ns2_red_marks_at_the_port() {
        // setbit_ with mark_p_ above 1 (stock ns-2.35 compares p < mark_p_): an ECN-capable
        // packet is marked at any probability, one that is not is dropped.
        let cfg = crate::Ns2RedConfig {
            min_threshold: Some(1.0),
            max_threshold: Some(2.0),
            weight: Some(1.0),
            bytes: false,
            ecn: true,
            mark_p: 2.0,
            ..Default::default()
        };
        let red = QueueConfig::Red(crate::RedConfig { ns2: Some(cfg), ..Default::default() });
        let mut p = port_with(BufferLimit::Unlimited, &red);
        let mut pool = PacketPool::new();
        let mut offer = |p: &mut Port, ect: bool| {
            let pk = crate::packet::Packet {
                wire_bytes: 1500,
                flags: if ect { flags::ECT } else { 0 },
                ..Default::default()
            };
            let id = pool.alloc(pk.clone());
            p.enqueue(Nanos::from_nanos(0), id, pk.meta())
        };
        for _ in 0..4 {
            assert!(matches!(offer(&mut p, true), EnqueueOutcome::Accepted { .. }));
        }
        // Queue 3 > 2 × max_th: p = 1 from the first hit on.
        let outcomes: Vec<bool> =
            (0..10).map(|_| matches!(offer(&mut p, true), EnqueueOutcome::Accepted { .. })).collect();
        assert!(outcomes.iter().all(|&a| a));
        assert!(p.stats().ecn_marks >= 5, "{:?}", p.stats());
        // (Not ECN-capable: RED in ECN mode drops what it would mark, with room in the buffer.)
        assert_eq!(offer(&mut p, false), EnqueueOutcome::Dropped(DropCause::Early));
    }

    fn priority_port(limit: BufferLimit, pushout: bool) -> Port {
        let cfg = crate::qdisc::priority::PriorityConfig {
            tags: vec!["hi".into()],
            bands: 2,
            band_buffer: None,
            ecn_threshold: None,
            ecn_per_port: false,
            pushout,
        };
        port_with(limit, &QueueConfig::StrictPriority(cfg))
    }

    fn offer(p: &mut Port, pool: &mut PacketPool, at: Nanos, prio: u8) -> (PacketId, EnqueueOutcome) {
        let pk = crate::packet::Packet { wire_bytes: 1500, ..Default::default() };
        let id = pool.alloc(pk.clone());
        (id, p.enqueue(at, id, PacketMeta { prio, ..pk.meta() }))
    }

    /// Pops every arrival, returning (packet, arrival time) in order.
    fn drain(p: &mut Port, first: Nanos) -> Vec<(PacketId, Nanos)> {
        let mut out = Vec::new();
        let mut next = Some(first);
        while let Some(t) = next {
            let (id, _, n) = p.pop_arrival(t);
            out.push((id, t));
            next = n;
        }
        out
    }

    #[test]
    fn an_ordered_port_sends_the_highest_band_first_choosing_when_the_transmitter_frees() {
        let mut pool = PacketPool::new();
        let mut p = priority_port(BufferLimit::Packets(10), false);
        let us = Nanos::from_micros;
        // A finds the transmitter free; B and C (band 1) and D (band 0) wait.
        let (a, first) = offer(&mut p, &mut pool, Nanos::from_nanos(0), 1);
        assert_eq!(first, EnqueueOutcome::Accepted { schedule_arrival: Some(us(22)) });
        let (b, _) = offer(&mut p, &mut pool, Nanos::from_nanos(0), 1);
        let (c, _) = offer(&mut p, &mut pool, Nanos::from_nanos(0), 1);
        let (d, _) = offer(&mut p, &mut pool, Nanos::from_nanos(0), 0);
        assert_eq!(p.queue_at(Nanos::from_nanos(0)), (3, 4500));
        assert_eq!(p.held_packets().len(), 4);
        // E (band 0) arrives at 13 us, after the choice at 12 us (D): it goes next, before B.
        let (e, _) = offer(&mut p, &mut pool, us(13), 0);
        assert_eq!(p.queue_at(us(13)), (3, 4500));
        let order = drain(&mut p, us(22));
        assert_eq!(order, vec![(a, us(22)), (d, us(34)), (e, us(46)), (b, us(58)), (c, us(70))]);
        assert_eq!(p.stats().max_queue_pkts, 3);
        // Waiting: 3 until 12 us, 2 until E at 13, 3 until 24, 2 until 36, 1 until 48:
        // 36 + 2 + 33 + 24 + 12 = 107 packet-microseconds over 60 us.
        assert!((p.mean_queue_pkts(us(60)) - 107.0 / 60.0).abs() < 1e-9);
    }

    #[test]
    fn an_ordered_port_may_push_a_waiting_packet_out() {
        let mut pool = PacketPool::new();
        let mut p = priority_port(BufferLimit::Packets(2), true);
        let (a, _) = offer(&mut p, &mut pool, Nanos::from_nanos(0), 1);
        let (b, _) = offer(&mut p, &mut pool, Nanos::from_nanos(0), 1);
        let (c, _) = offer(&mut p, &mut pool, Nanos::from_nanos(0), 1);
        // Full: a band-1 packet is dropped, a band-0 one pushes out the newest band-1 packet.
        assert_eq!(offer(&mut p, &mut pool, Nanos::from_nanos(0), 1).1, EnqueueOutcome::Dropped(DropCause::BufferFull));
        let (d, out) = offer(&mut p, &mut pool, Nanos::from_nanos(0), 0);
        assert_eq!(out, EnqueueOutcome::Replaced { dropped: c });
        assert_eq!(p.stats().drops, 2);
        let order: Vec<PacketId> = drain(&mut p, Nanos::from_micros(22)).into_iter().map(|x| x.0).collect();
        assert_eq!(order, vec![a, d, b]);
        // Without push-out the band-0 packet is dropped like any other.
        let mut q = priority_port(BufferLimit::Packets(1), false);
        offer(&mut q, &mut pool, Nanos::from_nanos(0), 1);
        offer(&mut q, &mut pool, Nanos::from_nanos(0), 1);
        assert_eq!(offer(&mut q, &mut pool, Nanos::from_nanos(0), 0).1, EnqueueOutcome::Dropped(DropCause::BufferFull));
    }
}
