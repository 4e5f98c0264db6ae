//! The TCP sender: NewReno with SACK-based loss recovery (RFC 5681, RFC 6582, RFC 6675),
//! RTO with exponential backoff (RFC 6298), ECN reaction (RFC 3168), optional handshake.
//!
//! Sequence numbers are byte offsets from zero (the handshake consumes none). The sender is
//! a pure state machine: calls take `now` and append packets to `out`.
//!
//! Loss recovery. Recovery starts on `dupthresh` duplicate ACKs or when that many segments are
//! SACKed above the cumulative ACK, and only for losses above `recover` (RFC 6582). The window
//! becomes ssthresh and sending is governed by the pipe estimate of RFC 6675: bytes sent and
//! not yet acknowledged, minus bytes SACKed, minus holes judged lost and not yet retransmitted.
//! A hole is judged lost when it lies below the highest SACKed byte, or when it is the first
//! unacknowledged segment at the start of recovery or after a partial ACK (NewReno's rule,
//! which is all there is when SACK is off). Holes are retransmitted in order, each once per
//! recovery; a retransmission is judged lost again when data sent after it is SACKed
//! `dupthresh` segments beyond (as Linux does), and the timeout repairs the rest.
//!
//! ECN reductions (`cwr`, the linux profile). As Linux's CWR state: the echo sets ssthresh
//! through the algorithm, then the window falls towards it by proportional rate reduction
//! (RFC 6937, `tcp_cwnd_reduction`: about ssthresh/prior_cwnd segments sent per segment
//! delivered) and does not grow until the data outstanding at the echo is acknowledged; then
//! it is ssthresh. A loss during CWR continues the same reduction (no second cut).
//!
//! One halving per congestion episode (ATCP's `halving = "per-episode"`, as the kernel's
//! `atcp.bpf.c`). When a reduction that halved ends (CWR or recovery left), snd_nxt is
//! remembered; an ECN echo or a loss while snd_una is below it (a signal about data sent
//! before that reduction ended) starts CWR or recovery as usual but keeps the window:
//! ssthresh becomes cwnd. Under CWR this is Linux's state machine with the kernel ATCP's
//! `ssthresh`: marks on the packets sent during the reduction's round cost a further round
//! without growth, not a second halving. A timeout always halves and forgets the mark.
//!
//! Tail loss probe (`tail_loss_probe`, the linux profile; RFC 8985 section 7 as Linux's
//! `tcp_schedule_loss_probe` schedules it). With SACK and outside recovery, a probe is due
//! 2 SRTT after the last transmission or progress (plus 2 ms, `TCP_TIMEOUT_MIN_US`, or plus
//! min RTO when one segment is in flight), unless the RTO comes first. The probe is a new
//! segment if one may be sent, else the last segment again; one probe at a time. When an ACK
//! after the probe SACKs data, RACK's time rule (RFC 8985 section 6.2) judges every hole below
//! it lost, since each was sent at least a probe timeout earlier: recovery starts at once.
//! RACK's reordering window and its timer are not modelled otherwise; duplicate ACKs and
//! SACK counts (above) detect losses within a window.
//!
//! ns-2.35 modes (the ns2 profile). `sack_recovery = "ns2"` replaces the RFC 6675 rules by
//! `Agent/TCP/Sack1`'s (tcp-sack1.cc with ScoreBoardRQ): fast retransmit on the `dupthresh`th
//! duplicate ACK that brings new SACK information, a pipe counted in packets (outstanding
//! minus dupthresh at the start, one less per ACK, one more per packet sent), each hole
//! below the highest SACK retransmitted once in order, new data within the receiver's window
//! past the holes, no lost-retransmission detection, recovery ending at the recovery point
//! with the halved window, and duplicate ACKs ignored after a timeout until new data is
//! acknowledged. `singledup`, `whole_packets`, `ecn_reaction = "ns2"`, `window_model = "ns2"`
//! (`ns2_opencwnd`, `ns2_slowdown`, `cwnd_segments`), `rto_model = "ns2"` (`timed`,
//! `ns2_rtt_on_new_ack`, `back_off`) and `newreno_recovery = "ns2"`
//! (`ns2_partial_window_deflation` and the fast retransmit in `on_ack`) are described at
//! their functions and fields.
//!
//! Router-assisted algorithms. The connection always opens with a SYN, every packet the
//! algorithm stamps carries its router header (its bytes added to the packet), a header-only
//! FIN follows the last new data, and ACKs that echo a header hand it to the algorithm.
//! Rate-based algorithms (`pacing_rate()` is Some) are paced: a segment (new or repaired)
//! leaves only when the previous one's transmission at the granted rate is over, within a
//! window of two rate x SRTT products (at least two segments), so that a wrong rate cannot
//! flood the network; the window does not react to loss (the routers set the rate), and tail
//! loss probes are off. When the algorithm asks for a round and no segment is due within it,
//! a header-only packet goes out at the end of the round instead.

use crate::cc::{AckSample, AnyCc, CcState, CongestionEvent, SendContext};
use crate::config::{EcnReaction, NewRenoRecovery, SackRecovery, TcpConfig, WindowModel};
use crate::rtt::RttEstimator;
use crate::scoreboard::RangeSet;
use fctlab_engine::{BitsPerSec, Nanos};
use fctlab_net::packet::flags;
use fctlab_net::{FlowId, NodeId, Packet, PacketKind};

/// An ECN reduction in progress (Linux's CWR state with PRR's counters, in bytes).
#[derive(Copy, Clone, Debug)]
struct Cwr {
    /// snd_nxt at the echo: CWR ends once snd_una is beyond it.
    high_seq: u64,
    prior_cwnd: u64,
    delivered: u64,
    out: u64,
}

/// Extra delay of a loss probe with more than one segment in flight (Linux's
/// `TCP_TIMEOUT_MIN_US`, include/net/tcp.h).
const PROBE_SLACK: Nanos = Nanos::from_millis(2);

/// ns-2's `last_cwnd_action_`: the last reason the window was reduced (tcp.h).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum CwndAction {
    None,
    Dupack,
    Timeout,
    Ecn,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum State {
    SynSent,
    Established,
    Done,
}

/// The `size` of a long-lived flow: more bytes than it can send, so every test against the
/// size (`snd_una >= size`) fails for it.
const LONG_LIVED: u64 = u64::MAX;

pub struct TcpSender {
    pub flow: FlowId,
    src: NodeId,
    dst: NodeId,
    cfg: TcpConfig,
    /// Bytes to send; [`LONG_LIVED`] for a long-lived flow.
    size: u64,
    state: State,
    snd_una: u64,
    snd_nxt: u64,
    snd_max: u64,
    pub cc: AnyCc,
    pub st: CcState,
    dupacks: u32,
    in_recovery: bool,
    recover: u64,
    /// Bytes retransmitted in this recovery, not yet SACKed or acknowledged.
    retx: RangeSet,
    /// Bytes below this count as lost in recovery even without SACK evidence.
    lost_hint: u64,
    sacked: RangeSet,
    /// Retransmissions of this recovery in sending order: (seq, end, snd_nxt when sent).
    rexmits: std::collections::VecDeque<(u64, u64, u64)>,
    rtt: RttEstimator,
    rto_deadline: Option<Nanos>,
    backoff: u32,
    ecn_recover: u64,
    cwr: Option<Cwr>,
    /// One halving per episode: snd_nxt when the last halving reduction ended; signals for
    /// data below it keep the window (see the module documentation).
    quiet_until: Option<u64>,
    /// The CWR or recovery in progress halved the window (the kernel ATCP's `reduced`).
    episode_halved: bool,
    /// The sender's other timer (it runs to the earlier of this and the RTO): when a tail loss
    /// probe is due or, for a paced flow, when it must act next (next segment or header-only
    /// packet; paced flows send no tail loss probes).
    probe_deadline: Option<Nanos>,
    /// snd_nxt when the outstanding probe went out.
    tlp_high_seq: Option<u64>,
    ect: bool,
    /// The algorithm is router-assisted (see the module documentation).
    router: bool,
    /// Which of the run's router-assisted protocols this flow's headers belong to.
    router_owner: u8,
    fin_sent: bool,
    /// Paced flows: when the last segment left and its wire bytes; the next may leave once
    /// those bytes have been sent at the current rate.
    paced_at: Nanos,
    paced_bytes: u64,
    /// The algorithm is rate-based: the sender paces (see the module documentation).
    paced: bool,
    /// When the last packet of the flow left.
    last_sent: Nanos,
    /// When the last data segment (new or repaired) left.
    last_data_sent: Nanos,
    /// Header-only packets sent to keep a paced flow's rate requests going.
    pub header_only: u64,
    /// Segments sent again (fast retransmit, recovery, or after a timeout).
    pub retransmits: u64,
    pub timeouts: u64,
    /// Of `timeouts`, those of a SYN or before any of the flow's data was acknowledged (the
    /// SYN or the first window lost).
    pub first_timeouts: u32,
    /// Of `timeouts`, those whose window was last reduced by an ECN echo (no loss detected
    /// since): the flow waited with marks, not losses, as its last congestion signal.
    pub ecn_timeouts: u32,
    /// Tail loss probes sent.
    pub probes: u64,
    /// The last window reduction's cause (ns-2's `last_cwnd_action_`): it steers the ns-2
    /// modes, and classifies timeouts in all.
    last_action: CwndAction,
    /// `sack_recovery = "ns2"`: duplicate ACKs are ignored from a timeout until new data is
    /// acknowledged (Sack1's `timeout_`).
    after_timeout: bool,
    /// `sack_recovery = "ns2"`: Sack1's `pipe_` in fast recovery, in packets.
    sack1_pipe: i64,
    /// `sack_recovery = "ns2"`: holes below this were retransmitted in this recovery
    /// (`ScoreBoardRQ`'s `h_seqno_`).
    next_retx: u64,
    /// `ecn_reaction = "ns2"`: ACKs up to this byte still carry ECN-Echo (ns-2's receiver
    /// repeats it until the first packet sent after the reduction, which carries CWR).
    ece_until: u64,
    /// `window_model = "ns2"` (`tcp` and `atcp`): ns-2's `cwnd_`, a double in segments;
    /// `st.cwnd_bytes` follows it (rounded down to whole bytes).
    ns2_cwnd: f64,
    /// `rto_model = "ns2"`: the timed segment (ns-2's `rtt_active_`, `rtt_seq_`, `rtt_ts_`):
    /// its end and when it was sent. A SYN is timed with end 0.
    timed: Option<(u64, Nanos)>,
    /// `rto_model = "ns2"` without SACK: the timer was restarted on a partial ACK of this
    /// recovery (`firstpartial_`, `newreno_changes1_ 1`).
    first_partial: bool,
    /// Whether the window has left slow start: it reached ssthresh, or a loss, an ECN echo
    /// or a timeout set ssthresh below it.
    pub left_slow_start: bool,
    /// Data packets sent, first transmissions and retransmissions.
    pub packets_sent: u64,
    pub completed_at: Option<Nanos>,
}

impl TcpSender {
    /// A sender of `size` bytes (None: long-lived) from `src` to `dst`.
    pub fn new(
        flow: FlowId,
        src: NodeId,
        dst: NodeId,
        size: Option<u64>,
        cfg: &TcpConfig,
        cc: AnyCc,
        ecn: bool,
    ) -> Self {
        let mss = cfg.mss_bytes as u64;
        let router = cc.router_assisted();
        let paced = cc.pacing_rate().is_some();
        let cfg = &Self::own_config(cfg, &cc);
        TcpSender {
            flow,
            src,
            dst,
            cfg: *cfg,
            // ns-2's TcpAgent::sendmsg (tcp.cc:818) counts a flow in whole packets:
            // curseq_ += ceil(nbytes / size_), each packet size_ bytes.
            size: match size {
                Some(s) if cfg.whole_packets => s.div_ceil(mss) * mss,
                Some(s) => s,
                None => LONG_LIVED,
            },
            state: State::SynSent,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            cc,
            st: CcState {
                cwnd_bytes: cfg.initial_cwnd_segments.max(1) as u64 * mss,
                ssthresh_bytes: cfg.initial_ssthresh_bytes.unwrap_or(CcState::SSTHRESH_UNLIMITED),
                mss_bytes: mss,
            },
            dupacks: 0,
            in_recovery: false,
            recover: 0,
            retx: RangeSet::new(),
            lost_hint: 0,
            sacked: RangeSet::new(),
            rexmits: std::collections::VecDeque::new(),
            rtt: RttEstimator::new(cfg),
            rto_deadline: None,
            backoff: 0,
            ecn_recover: 0,
            cwr: None,
            quiet_until: None,
            episode_halved: false,
            probe_deadline: None,
            tlp_high_seq: None,
            ect: ecn,
            router,
            router_owner: 0,
            fin_sent: false,
            paced_at: Nanos::ZERO,
            paced_bytes: 0,
            paced,
            last_sent: Nanos::ZERO,
            last_data_sent: Nanos::ZERO,
            header_only: 0,
            retransmits: 0,
            timeouts: 0,
            first_timeouts: 0,
            ecn_timeouts: 0,
            probes: 0,
            last_action: CwndAction::None,
            after_timeout: false,
            sack1_pipe: 0,
            next_retx: 0,
            ece_until: 0,
            ns2_cwnd: cfg.initial_cwnd_segments.max(1) as f64,
            timed: None,
            first_partial: false,
            left_slow_start: false,
            packets_sent: 0,
            completed_at: None,
        }
    }

    pub fn is_complete(&self) -> bool {
        self.state == State::Done
    }
    /// Bytes acknowledged so far.
    pub fn bytes_acked(&self) -> u64 {
        self.snd_una
    }
    /// Bytes sent at least once so far (the highest sequence number sent).
    pub fn bytes_sent(&self) -> u64 {
        self.snd_max
    }
    /// When the sender's timer expires (retransmission timeout or tail loss probe), if it runs.
    pub fn timer_deadline(&self) -> Option<Nanos> {
        match (self.rto_deadline, self.probe_deadline) {
            (Some(r), Some(p)) => Some(r.min(p)),
            (r, p) => r.or(p),
        }
    }
    /// The rate the sender paces at, if its algorithm is rate-based.
    pub fn pacing_rate(&self) -> Option<BitsPerSec> {
        self.cc.pacing_rate()
    }
    /// Whether the sender is in CWR, reducing its window after an ECN echo.
    pub fn in_cwr(&self) -> bool {
        self.cwr.is_some()
    }
    pub fn srtt(&self) -> Option<Nanos> {
        self.rtt.srtt()
    }
    /// The smallest and the mean of the RTTs measured so far (None before the first).
    pub fn rtt_measured(&self) -> Option<(Nanos, Nanos)> {
        self.rtt.measured()
    }
    pub fn in_recovery(&self) -> bool {
        self.in_recovery
    }

    /// A one-line description of the sender's state, for diagnostics.
    pub fn describe(&self) -> String {
        format!(
            "rate={:?} paced_at={:?} round={:?} header_only={} probes={} cwr={:?} state={:?} una={} nxt={} max={} cwnd={} ssthresh={} pipe={} recovery={} recover={} retx={:?} lost_hint={} sacked={:?} dupacks={} rto_at={:?} backoff={} rto={:?}",
            self.cc.pacing_rate(), self.paced_at, self.cc.round(), self.header_only, self.probes, self.cwr.map(|c| c.high_seq), self.state, self.snd_una, self.snd_nxt, self.snd_max, self.st.cwnd_bytes, self.st.ssthresh_bytes, self.pipe(),
            self.in_recovery, self.recover, self.retx.ranges(), self.lost_hint, self.sacked.ranges(), self.dupacks, self.rto_deadline, self.backoff, self.rtt.rto()
        )
    }

    /// The settings this flow runs: ns-2's TCP modes (its recovery, `singledup_`, window, RTO and
    /// ECN reaction) belong to `Agent/TCP`, so they apply to `tcp` and `atcp` (ns-2's `Agent/TCP`
    /// with `increase_num_`) only; the other protocols keep fctlab's own (RCP and RACS, for one,
    /// read the RTT estimate, which ns-2's counts in 10 ms ticks).
    fn own_config(cfg: &TcpConfig, cc: &AnyCc) -> TcpConfig {
        if matches!(cc, AnyCc::NewReno(_) | AnyCc::Atcp(_)) {
            return *cfg;
        }
        let linux = TcpConfig::default();
        TcpConfig {
            sack_recovery: linux.sack_recovery,
            singledup: linux.singledup,
            ecn_reaction: linux.ecn_reaction,
            window_model: linux.window_model,
            rto_model: linux.rto_model,
            newreno_recovery: linux.newreno_recovery,
            ..*cfg
        }
    }

    /// The settings this flow runs with (the scenario's, with ns-2's modes for tcp and atcp only).
    pub fn config(&self) -> &TcpConfig {
        &self.cfg
    }

    /// Opens the connection (SYN) or, without handshake, starts sending.
    pub fn start(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        if self.cfg.handshake || self.router {
            self.send_syn(now, out);
            if self.rtt.is_ns2() {
                self.timed = Some((0, now)); // output() of seqno 0 starts the timing
            }
        } else {
            self.state = State::Established;
            self.send_what_fits(now, out);
            self.arm_if_outstanding(now, false);
            self.schedule_probe(now, true);
        }
        if self.size == 0 && self.state == State::Established {
            self.state = State::Done;
            self.completed_at = Some(now);
            self.rto_deadline = None;
        }
    }

    fn send_syn(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        let p = Packet { kind: PacketKind::Syn, ..self.header_only_packet(now) };
        self.push(now, p, out);
        self.rto_deadline = Some(now + self.rtt.backed_off(self.backoff));
    }

    /// A packet of this flow without payload, as `send_syn` and header-only packets use.
    fn header_only_packet(&self, now: Nanos) -> Packet {
        Packet {
            flow: self.flow,
            src: self.src,
            dst: self.dst,
            wire_bytes: self.cfg.header_bytes,
            seq: self.snd_nxt,
            ts_sent_ns: now.0,
            ..Default::default()
        }
    }

    /// Hands a packet to the network, with the algorithm's router header if it adds one.
    fn push(&mut self, now: Nanos, p: Packet, out: &mut Vec<Packet>) {
        out.push(p);
        self.pushed(now, out);
    }

    /// The packet just appended to `out` leaves now: the algorithm's router header goes on it
    /// if it adds one. (Packets are built in place in `out`: no copy on the hot path.)
    #[inline(always)]
    fn pushed(&mut self, now: Nanos, out: &mut [Packet]) {
        self.last_sent = now;
        if self.router {
            let Some(p) = out.last_mut() else { return };
            let ctx = SendContext {
                now,
                kind: p.kind,
                size: (self.size != LONG_LIVED).then_some(self.size),
                bytes_sent: self.snd_max.max(p.seq + p.payload_bytes as u64),
                snd_una: self.snd_una,
                srtt: self.rtt.srtt(),
                mss_bytes: self.st.mss_bytes,
            };
            if self.cc.stamp(&ctx, &mut p.router) {
                p.router.owner = self.router_owner;
                p.flags |= flags::ROUTER;
                p.wire_bytes += p.router.wire_bytes as u32;
            }
        }
    }

    /// Router-assisted flows: the header-only FIN once every byte has been sent.
    fn send_fin_if_done(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        if self.router && !self.fin_sent && self.snd_max >= self.size {
            self.fin_sent = true;
            let p = Packet { kind: PacketKind::Fin, ..self.header_only_packet(now) };
            self.push(now, p, out);
        }
    }

    /// Marks this flow's router headers as belonging to the run's router-assisted protocol
    /// `owner` (the simulation numbers the protocols its flows use; 0 by default).
    pub fn set_router_owner(&mut self, owner: u8) {
        self.router_owner = owner;
    }

    /// Handles a packet from the receiver (ACK or SYN-ACK).
    pub fn on_packet(&mut self, now: Nanos, p: &Packet, out: &mut Vec<Packet>) {
        match (self.state, p.kind) {
            (State::SynSent, PacketKind::SynAck) => {
                if self.rtt.is_ns2() {
                    // newack(): a sample and the end of the backoff only if the SYN was timed,
                    // i.e. not retransmitted (tcp.cc:1407-1419).
                    if let Some((_, sent)) = self.timed.take() {
                        self.rtt.sample_ns2(sent, now);
                        self.backoff = 0;
                    }
                } else {
                    self.rtt.sample(Nanos(now.0.saturating_sub(p.ts_echo_ns)));
                    self.backoff = 0;
                }
                self.state = State::Established;
                self.rto_deadline = None;
                if p.has(flags::ROUTER) {
                    self.cc.on_feedback(&mut self.st, &p.router);
                }
                if self.size == 0 {
                    self.send_fin_if_done(now, out);
                    self.finish(now);
                    return;
                }
                self.send_what_fits(now, out);
                self.arm_if_outstanding(now, true);
                self.schedule_probe(now, true);
            }
            (State::Established, PacketKind::Ack) => self.on_ack(now, p, out),
            _ => {} // stale or duplicate control packets
        }
    }

    fn finish(&mut self, now: Nanos) {
        self.state = State::Done;
        self.completed_at = Some(now);
        self.rto_deadline = None;
        self.probe_deadline = None;
    }

    fn on_ack(&mut self, now: Nanos, p: &Packet, out: &mut Vec<Packet>) {
        // The steps of Linux's tcp_ack, in its order: the SACK scoreboard, the router
        // feedback, the new cumulative ACK (RTT, recovery or CWR exit, the window's growth) or
        // a duplicate ACK, then ECN, the window's reduction, loss detection, and what to send.
        let ack = p.ack.min(self.snd_max);
        let ack_advanced = ack > self.snd_una;
        let delivered_before = self.snd_una + self.sacked.total();
        let sent_before = self.packets_sent;
        let sack1 = self.sack1();
        if sack1 && self.in_recovery {
            // Sack1TcpAgent::recv (tcp-sack1.cc:191): in fast recovery every ACK takes one
            // packet out of pipe_.
            self.sack1_pipe -= 1;
        }
        let sacked_total_before = self.sacked.total();
        self.sack_tag(p, ack);
        let ece = self.ect && p.has(flags::ECE);
        if p.has(flags::ROUTER) {
            self.cc.on_feedback(&mut self.st, &p.router);
        }
        let mut counted_dupack = false;
        if ack > self.snd_una {
            if self.on_new_ack(now, p, ack, ece, out) {
                return; // every byte acknowledged: the flow is complete
            }
        } else if ack == self.snd_una && self.snd_una < self.snd_max {
            counted_dupack = self.count_dupack(sack1, sacked_total_before);
        }
        if self.paced && ack == self.snd_una && self.snd_una < self.snd_max && p.ts_echo_ns > self.last_data_sent.0 {
            self.probe_found_losses();
        }
        self.react_to_ecn(ece, ack);
        let delivered = (self.snd_una + self.sacked.total()).saturating_sub(delivered_before);
        if !self.in_recovery && self.cwr.is_some() {
            self.reduce_cwnd(delivered, ack_advanced);
        }
        if self.in_recovery && !sack1 {
            self.detect_lost_retransmissions();
        }
        if !self.in_recovery && self.snd_una < self.snd_max {
            self.fastretrans_alert(now, counted_dupack, out);
        }
        self.transmit_after_ack(now, counted_dupack, out);
        if self.rto_deadline.is_none() {
            self.arm_if_outstanding(now, false);
        }
        if ack_advanced || delivered > 0 || self.packets_sent > sent_before {
            self.schedule_probe(now, ack_advanced);
        }
    }

    /// The ACK's SACK blocks (above the cumulative ACK `ack`) into the scoreboard
    /// (tcp_sacktag_write_queue).
    #[inline]
    fn sack_tag(&mut self, p: &Packet, ack: u64) {
        if self.cfg.sack {
            for b in &p.sack[..p.sack_len as usize] {
                let (s, e) = (b.start.max(ack), b.end.min(self.snd_max));
                if s < e {
                    self.sacked.insert(s, e);
                    self.retx.remove(s, e);
                }
            }
        }
    }

    /// A cumulative ACK of new data up to `ack`: the RTT sample, the acknowledged data off
    /// the scoreboard, duplicate-ACK deflation, the end of a recovery or CWR round, and the
    /// window's growth (tcp_clean_rtx_queue, tcp_ack_update_rtt, tcp_cong_control). True when
    /// it acknowledged the flow's last byte.
    #[inline]
    fn on_new_ack(&mut self, now: Nanos, p: &Packet, ack: u64, ece: bool, out: &mut Vec<Packet>) -> bool {
        let mss = self.st.mss_bytes;
        let sack1 = self.sack1();
        let acked = ack - self.snd_una;
        // Timestamp echo gives a sample even for retransmitted data (RFC 7323).
        let r = Nanos(now.0.saturating_sub(p.ts_echo_ns));
        let partial = self.in_recovery && ack < self.recover;
        if self.rtt.is_ns2() {
            self.ns2_rtt_on_new_ack(now, ack, partial);
        } else {
            self.rtt.sample(r);
            self.backoff = 0;
        }
        self.snd_una = ack;
        if self.snd_nxt < ack {
            self.snd_nxt = ack;
        }
        self.sacked.remove_below(ack);
        self.retx.remove_below(ack);
        self.dupacks = if partial && !self.cfg.sack && self.ns2_newreno() {
            self.ns2_partial_window_deflation(acked);
            self.dupacks
        } else if partial && !self.cfg.sack {
            // The segments that sent duplicate ACKs and are now acknowledged have left the
            // window's accounting; the retransmitted one did not send any (RFC 6582's
            // deflation by the data acknowledged, plus one segment).
            self.dupacks.saturating_sub(((acked / mss) as u32).saturating_sub(1))
        } else {
            0
        };
        // ns-2 restarts the timer on the first partial ACK of a recovery only
        // (NewRenoTcpAgent::partialnewack_helper, tcp-newreno.cc:88, newreno_changes1_ 1).
        let restart_timer = if partial && !self.cfg.sack && self.rtt.is_ns2() {
            !std::mem::replace(&mut self.first_partial, true)
        } else {
            self.first_partial = false;
            true
        };
        let open_on_exit = if self.in_recovery {
            self.recovery_on_new_ack(now, ack, sack1, out)
        } else {
            if self.cwr.is_some_and(|c| self.snd_una > c.high_seq) {
                self.set_cwnd_bytes(self.st.ssthresh_bytes.max(mss));
                self.cwr = None;
                self.reduction_ended();
            }
            if sack1 {
                // A new ACK outside recovery clears the scoreboard and the timeout state
                // (tcp-sack1.cc:138).
                self.sacked.clear();
                self.next_retx = 0;
                self.after_timeout = false;
            }
            true
        };
        if open_on_exit {
            self.cong_control(now, p, acked, ece, ack, r);
        }
        if self.snd_una >= self.size {
            self.finish(now);
            return true;
        }
        if self.tlp_high_seq.is_some_and(|h| self.snd_una >= h) {
            self.tlp_high_seq = None;
        }
        self.arm_if_outstanding(now, restart_timer);
        false
    }

    /// A new ACK during loss recovery: its end at the recovery point, or a partial ACK.
    /// Returns whether this ACK then opens the window (ns-2's NewReno on exit).
    #[inline]
    fn recovery_on_new_ack(&mut self, now: Nanos, ack: u64, sack1: bool, out: &mut Vec<Packet>) -> bool {
        let mss = self.st.mss_bytes;
        if ack >= self.recover {
            self.in_recovery = false;
            self.retx.clear();
            self.rexmits.clear();
            let mut open_on_exit = false;
            if sack1 {
                // tcp-sack1.cc:193-204: recover_ = 0, the scoreboard is cleared, and
                // newack() leaves cwnd_ as the halving set it.
                self.recover = 0;
                self.sacked.clear();
                self.next_retx = 0;
                self.after_timeout = false;
            } else if self.ns2_newreno() {
                // NewRenoTcpAgent::recv (tcp-newreno.cc:229-246): dupwnd_ = 0, cwnd_
                // stays as the halving (and deflation) left it, and this ACK opens it
                // (recv_newack_helper).
                open_on_exit = true;
            } else {
                self.set_cwnd_bytes(self.st.ssthresh_bytes.max(mss));
            }
            self.reduction_ended();
            return open_on_exit;
        }
        if sack1 {
            // Partial ACK with partial_ack_ false (tcp-sack1.cc:223): pipe_ loses one
            // more packet; nothing is sent at once.
            self.sack1_pipe -= 1;
        } else {
            // Partial ACK: the next unacknowledged segment is lost too. Without SACK it
            // goes out at once, whatever the window (RFC 6582, section 3.2 step 3).
            self.lost_hint = self.lost_hint.max(ack + mss);
            if !self.cfg.sack {
                if let Some((seq, len)) = self.next_hole() {
                    self.retransmit(now, seq, len, out);
                }
            }
        }
        false
    }

    /// The congestion control sees an ACK of `acked` new bytes with RTT sample `r` and
    /// grows the window (tcp_cong_control), within what the receiver accepts.
    #[inline]
    fn cong_control(&mut self, now: Nanos, p: &Packet, acked: u64, ece: bool, ack: u64, r: Nanos) {
        let mss = self.st.mss_bytes;
        // ns-2 opens the window only on ACKs without ECN-Echo (recv_newack_helper,
        // tcp.cc:1478), and its receiver repeats the echo until the packet carrying
        // CWR, the first one sent after the reduction, arrives (tcp-sink.cc:319-328).
        let ns2_ece = self.ns2_ecn() && (ece || ack <= self.ece_until);
        // In CWR the algorithm still sees the ACK (DCTCP's alpha), but the window is
        // PRR's: `reduce_cwnd` sets it on every ACK that delivers data.
        let sample = AckSample {
            now,
            acked_bytes: if ns2_ece { 0 } else { acked },
            ce_bytes: if ece { (p.ce_bytes_echo as u64).min(acked).max(1) } else { 0 },
            ece,
            rtt: Some(r),
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt,
            bytes_sent: self.snd_max,
        };
        if !ns2_ece {
            if self.ns2_window() {
                // The algorithm sees the ACK (ATCP's weight), the window is ns-2's.
                let mut scratch = self.st;
                self.cc.on_ack(&mut scratch, &sample);
                self.ns2_opencwnd();
            } else {
                self.cc.on_ack(&mut self.st, &sample);
            }
        }
        self.left_slow_start |= self.st.cwnd_bytes >= self.st.ssthresh_bytes;
        if !self.ns2_window() {
            // The window never grows past what the receiver accepts (ns-2's window_
            // caps cwnd_ in effect; Linux grows cwnd only while it limits the sender).
            self.st.cwnd_bytes = self.st.cwnd_bytes.min(self.cfg.rwnd_bytes.max(mss));
        }
    }

    /// A duplicate ACK with data outstanding: counted, as the recovery in use counts it.
    /// Returns whether it was counted.
    #[inline]
    fn count_dupack(&mut self, sack1: bool, sacked_total_before: u64) -> bool {
        if !sack1 {
            self.dupacks += 1;
            return true;
        }
        if !self.after_timeout && self.sacked.total() != sacked_total_before && (!self.in_recovery || self.dupacks > 0)
        {
            // Sack1 counts a duplicate ACK only if its SACK blocks tell something new
            // (CheckUpdate), and none until new data is acknowledged after a timeout
            // (timeout_, tcp-sack1.cc:144, 232).
            self.dupacks += 1;
            return !self.in_recovery;
        }
        false
    }

    /// Outside recovery with data outstanding: enter fast recovery when the duplicate ACKs,
    /// the SACKed bytes or RACK say a segment is lost (tcp_fastretrans_alert), as the
    /// recovery in use decides it.
    #[inline]
    fn fastretrans_alert(&mut self, now: Nanos, counted_dupack: bool, out: &mut Vec<Packet>) {
        let mss = self.st.mss_bytes;
        if self.sack1() {
            if counted_dupack && self.dupacks == self.cfg.dupthresh {
                self.sack1_dupack_action(now, out);
            }
        } else if self.ns2_newreno() {
            // NewRenoTcpAgent::dupack_action (tcp-newreno.cc:118-177), on the dupthresh-th
            // duplicate ACK only: a fast retransmit needs highest_ack_ > recover_ (or
            // highest_ack_ == 0, bugfix_ss_); otherwise nothing but the ECN case below.
            let first = if self.cfg.handshake || self.router { 0 } else { mss };
            let recovered = self.snd_una > self.recover || self.snd_una == first;
            if counted_dupack && self.dupacks == self.cfg.dupthresh {
                if recovered {
                    self.enter_recovery();
                    if let Some((seq, len)) = self.next_hole() {
                        self.retransmit(now, seq, len, out);
                    }
                    self.ns2_reset_rtx_timer(now);
                } else if self.ns2_ecn() && self.last_action == CwndAction::Ecn {
                    self.ns2_repair_ecn_window(now, out);
                }
            }
        } else if self.snd_una >= self.recover {
            let dupthresh = self.cfg.dupthresh as u64;
            let sack_says = self.cfg.sack && self.sacked.total() >= dupthresh * mss;
            // After a probe, a SACK means the holes below it are older than the probe
            // timeout: RACK marks them lost.
            let rack_says = self.tlp_high_seq.is_some() && self.sacked.total() > 0;
            if self.dupacks as u64 >= dupthresh || sack_says || rack_says {
                self.enter_recovery();
                // Fast retransmit: the first hole goes out at once, whatever the pipe.
                if let Some((seq, len)) = self.next_hole() {
                    self.retransmit(now, seq, len, out);
                }
                self.ns2_reset_rtx_timer(now);
            }
        } else if self.ns2_ecn()
            && counted_dupack
            && self.dupacks == self.cfg.dupthresh
            && self.last_action == CwndAction::Ecn
        {
            self.ns2_repair_ecn_window(now, out);
        }
    }

    /// What an ACK lets the sender send (tcp_data_snd_check), as the recovery in use sends.
    #[inline]
    fn transmit_after_ack(&mut self, now: Nanos, counted_dupack: bool, out: &mut Vec<Packet>) {
        let sack1 = self.sack1();
        if self.cfg.singledup && !self.in_recovery && counted_dupack && self.dupacks < self.cfg.dupthresh {
            // ns-2 sends nothing else on these duplicate ACKs (send_much only when dupacks_
            // is 0: tcp-newreno.cc:292, tcp-sack1.cc:187).
            self.send_one_singledup(now, out);
        } else if sack1 && self.in_recovery {
            self.sack1_send_much(now, out);
        } else if !(sack1 && self.dupacks > 0 && !self.in_recovery) {
            self.send_what_fits(now, out);
        }
    }

    /// A paced flow: this ACK answers a packet sent after every outstanding data segment (the
    /// round's header-only packet), and that data is neither acknowledged nor SACKed. A flow's
    /// packets keep their order on its path, so all of it is lost, retransmissions included:
    /// it becomes eligible for repair at once. Without this a paced flow whose whole window was
    /// dropped hears nothing but these answers, and its window (which counts the lost data as
    /// in flight) keeps it silent until the retransmission timeout.
    fn probe_found_losses(&mut self) {
        if !self.in_recovery {
            self.enter_recovery();
        }
        self.retx.clear();
        self.rexmits.clear();
        self.lost_hint = self.snd_max;
    }

    /// NewRenoTcpAgent::dupack_action (tcp-newreno.cc:136): a loss in the window an ECN echo
    /// already halved is repaired without a second reduction.
    fn ns2_repair_ecn_window(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        self.last_action = CwndAction::Dupack;
        self.in_recovery = true;
        self.retx.clear();
        self.rexmits.clear();
        self.lost_hint = self.snd_una + self.st.mss_bytes;
        if let Some((seq, len)) = self.next_hole() {
            self.retransmit(now, seq, len, out);
        }
        self.arm_if_outstanding(now, true);
        if self.rtt.is_ns2() {
            self.timed = None; // reset_rtx_timer(1, 0)
        }
    }

    /// `reset_rtx_timer(1, 0)` at a fast retransmit (`rto_model = "ns2"`; tcp.cc:976): the
    /// timer restarts and the timed segment is forgotten (`rtt_active_ = 0`).
    fn ns2_reset_rtx_timer(&mut self, now: Nanos) {
        if self.rtt.is_ns2() {
            self.timed = None;
            self.rto_deadline = Some(now + self.rtt.backed_off(self.backoff));
        }
    }

    /// ns-2's RTT sample and end of backoff on an ACK of new data up to `ack`
    /// (`rto_model = "ns2"`, before `snd_una` moves). `TcpAgent::newack` (tcp.cc:1407-1420):
    /// the timed segment acknowledged gives a sample and ends the backoff (`t_backoff_ = 1`);
    /// a NewReno partial ACK (`partialnewack`, tcp-newreno.cc:83) ends both without a
    /// sample; a Sack1 partial ACK ends the backoff whatever was timed (tcp-sack1.cc:224).
    fn ns2_rtt_on_new_ack(&mut self, now: Nanos, ack: u64, partial: bool) {
        let timed_acked = self.timed.is_some_and(|(end, _)| ack >= end);
        if partial && !self.cfg.sack {
            if timed_acked {
                self.timed = None;
                self.backoff = 0;
            }
        } else if partial && self.sack1() {
            self.backoff = 0;
        } else if timed_acked {
            if let Some((_, sent)) = self.timed.take() {
                self.rtt.sample_ns2(sent, now);
            }
            self.backoff = 0;
        }
    }

    /// ns-2's window (`window_model = "ns2"`) for this flow: `tcp` and `atcp`.
    #[inline]
    fn ns2_window(&self) -> bool {
        self.cfg.window_model == WindowModel::Ns2 && matches!(self.cc, AnyCc::NewReno(_) | AnyCc::Atcp(_))
    }

    /// ns-2's NewReno recovery (`newreno_recovery = "ns2"`), used without SACK.
    #[inline]
    fn ns2_newreno(&self) -> bool {
        self.cfg.newreno_recovery == NewRenoRecovery::Ns2 && !self.cfg.sack
    }

    /// Sets ns-2's `cwnd_` (segments) and the byte window that follows it.
    fn set_cwnd_segments(&mut self, c: f64) {
        self.ns2_cwnd = c;
        self.st.cwnd_bytes = ((c * self.st.mss_bytes as f64) as u64).max(1);
    }

    /// Sets the window in bytes (ns-2's `cwnd_` follows with `window_model = "ns2"`).
    fn set_cwnd_bytes(&mut self, b: u64) {
        self.st.cwnd_bytes = b;
        if self.ns2_window() {
            self.ns2_cwnd = b as f64 / self.st.mss_bytes as f64;
        }
    }

    /// The window in whole segments: ns-2's `int(cwnd_)` with `window_model = "ns2"`.
    #[inline]
    fn cwnd_segments(&self) -> u64 {
        if self.ns2_window() {
            self.ns2_cwnd as u64
        } else {
            self.st.cwnd_bytes / self.st.mss_bytes
        }
    }

    /// `TcpAgent::opencwnd` (tcp.cc:1130-1150, `wnd_option_ 1`, `max_ssthresh_ 0`): +1 in
    /// slow start (cwnd_ < ssthresh_), else `increase_num_ / cwnd_`, ATCP's weight being
    /// `increase_num_`. cwnd_ is not capped (`window()` applies `window_`).
    fn ns2_opencwnd(&mut self) {
        let ssthresh = (self.st.ssthresh_bytes / self.st.mss_bytes) as f64;
        let c = self.ns2_cwnd;
        let c = if c < ssthresh { c + 1.0 } else { c + self.cc.weight().unwrap_or(1.0) / c };
        self.set_cwnd_segments(c);
    }

    /// `TcpAgent::slowdown(CLOSE_SSTHRESH_HALF | CLOSE_CWND_HALF)` (loss, ECN) or
    /// `(CLOSE_SSTHRESH_HALF | CLOSE_CWND_RESTART)` (timeout, `wnd_restart_ 1`) with
    /// `precisionReduce_` (tcp.cc:1252-1350): halfwin = `windowd()` / 2 = min(cwnd_,
    /// window_) / 2 as a double, ssthresh_ = int(halfwin) (at least 2), cwnd_ = halfwin or 1
    /// (at least 1).
    fn ns2_slowdown(&mut self, cwnd_half: bool) {
        let mss = self.st.mss_bytes;
        let wnd = (self.cfg.rwnd_bytes / mss).max(1) as f64;
        let halfwin = self.ns2_cwnd.min(wnd) / 2.0;
        self.st.ssthresh_bytes = (halfwin as u64).max(2) * mss;
        self.set_cwnd_segments(if cwnd_half { halfwin.max(1.0) } else { 1.0 });
    }

    /// `NewRenoTcpAgent::partialnewack` with `partial_window_deflation_ 1`
    /// (tcp-newreno.cc:62-81): `deflate` packets acknowledged; if dupwnd_ (the duplicate
    /// ACK count here) exceeds it, dupwnd_ -= deflate - 1, else cwnd_ -= deflate - dupwnd_
    /// (at least one segment) and dupwnd_ = 1.
    fn ns2_partial_window_deflation(&mut self, acked: u64) {
        let mss = self.st.mss_bytes;
        let deflate = acked.div_ceil(mss) as u32;
        if self.dupacks > deflate {
            self.dupacks -= deflate - 1;
        } else {
            let by = (deflate - self.dupacks) as u64;
            if self.ns2_window() {
                self.set_cwnd_segments((self.ns2_cwnd - by as f64).max(1.0));
            } else {
                self.st.cwnd_bytes = self.st.cwnd_bytes.saturating_sub(by * mss).max(mss);
            }
            self.dupacks = 1;
        }
    }

    /// Sack1 (`sack_recovery = "ns2"`) with SACK on.
    #[inline]
    fn sack1(&self) -> bool {
        self.cfg.sack && self.cfg.sack_recovery == SackRecovery::Ns2
    }

    /// ns-2's ECN reaction (`ecn_reaction = "ns2"`) for this flow: its algorithm keeps Reno's
    /// decrease, as TCP and ATCP (ns-2's `Agent/TCP` with `increase_num_`) do; DCTCP and the
    /// others keep their own reaction.
    #[inline]
    fn ns2_ecn(&self) -> bool {
        self.cfg.ecn_reaction == EcnReaction::Ns2 && matches!(self.cc, AnyCc::NewReno(_) | AnyCc::Atcp(_))
    }

    /// The reaction to an ECN echo on the ACK of `ack`.
    fn react_to_ecn(&mut self, ece: bool, ack: u64) {
        if !ece {
            return;
        }
        let mss = self.st.mss_bytes;
        if self.ns2_ecn() {
            // TcpAgent::ecn (tcp.cc:1438): once per window of data, the ACK beyond recover_
            // (shared with loss recovery), or the first echo after a timeout.
            if !(ack > self.recover || self.last_action == CwndAction::Timeout) || self.in_recovery {
                return;
            }
            self.recover = self.snd_max;
            self.ecn_recover = self.snd_max;
            self.last_action = CwndAction::Ecn;
            self.ns2_halve();
            self.left_slow_start = true;
            self.ece_until = self.snd_nxt;
            return;
        }
        // Once per window (RFC 3168): an echo counts only on an ACK for data sent after the
        // last reduction, i.e. beyond `ecn_recover`. The ACK that reaches `ecn_recover`
        // exactly still acknowledges data sent before it, whose marks were already answered.
        if !self.in_recovery && self.snd_una > self.ecn_recover {
            let flight = self.snd_max - self.snd_una;
            let prior_cwnd = self.st.cwnd_bytes.max(mss);
            if !self.keep_window() {
                self.cc.on_congestion(&mut self.st, CongestionEvent::Ecn { flight_bytes: flight });
                self.episode_halved = true;
            }
            self.left_slow_start = true;
            self.ecn_recover = self.snd_nxt;
            self.last_action = CwndAction::Ecn;
            if self.cfg.cwr {
                self.cwr = Some(Cwr { high_seq: self.snd_nxt, prior_cwnd, delivered: 0, out: 0 });
            } else {
                self.reduction_ended(); // the window fell at once
            }
        }
    }

    /// ns-2's `slowdown(CLOSE_SSTHRESH_HALF | CLOSE_CWND_HALF)` with `precisionReduce_`
    /// (tcp.cc:1252): half of min(cwnd, rwnd), cwnd exact (at least one segment), ssthresh in
    /// whole segments (at least two).
    fn ns2_halve(&mut self) {
        if self.ns2_window() {
            self.ns2_slowdown(true);
            return;
        }
        let mss = self.st.mss_bytes;
        let half = self.st.cwnd_bytes.min(self.cfg.rwnd_bytes) / 2;
        self.st.ssthresh_bytes = (half / mss).max(2) * mss;
        self.st.cwnd_bytes = half.max(mss);
    }

    /// `TcpAgent::send_one` (tcp.cc:1596), ns-2's `singledup_`: on each of the first
    /// `dupthresh - 1` duplicate ACKs one new segment, if the receiver's window allows it and
    /// it fits in cwnd plus one segment per duplicate ACK.
    fn send_one_singledup(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        let mss = self.st.mss_bytes;
        let len = (self.size - self.snd_nxt).min(mss);
        let outstanding = self.snd_nxt - self.snd_una;
        if len == 0 || self.state != State::Established || self.paced {
            return;
        }
        // t_seqno_ <= highest_ack_ + wnd_ and t_seqno_ <= highest_ack_ + cwnd_ + dupacks_,
        // counted in whole packets.
        let cwnd = if self.ns2_window() { self.cwnd_segments() * mss } else { self.st.cwnd_bytes };
        if outstanding + mss > self.cfg.rwnd_bytes.max(mss) || outstanding + mss > cwnd + self.dupacks as u64 * mss {
            return;
        }
        let seq = self.snd_nxt;
        self.emit(now, seq, len, out);
        self.snd_nxt += len;
        self.snd_max = self.snd_max.max(self.snd_nxt);
    }

    /// `Sack1TcpAgent::dupack_action` (tcp-sack1.cc:274) on the `dupthresh`th duplicate ACK.
    fn sack1_dupack_action(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        let mss = self.st.mss_bytes;
        // highest_ack_ > recover_, or highest_ack_ == 0 (bugfix_ss_: the first data packet;
        // with syn_ packet 0 is the SYN, without it the first data packet, whose loss then
        // waits for the timer).
        let first = if self.cfg.handshake || self.router { 0 } else { mss };
        let recovered = self.snd_una > self.recover || self.snd_una == first;
        let cut = if recovered {
            true
        } else if self.ns2_ecn() && self.last_action == CwndAction::Ecn {
            false // tcp-sack1.cc:285: the ECN reaction already halved this window
        } else {
            return; // bug_fix_: no second fast retransmit in one window
        };
        self.tlp_high_seq = None;
        self.probe_deadline = None;
        self.left_slow_start = true;
        if cut {
            self.recover = self.snd_max;
        }
        // pipe_ = maxseq_ - highest_ack_ - numdupacks_ (LimTransmitFix_ false)
        let outstanding = (self.snd_max - self.snd_una).div_ceil(mss) as i64;
        self.sack1_pipe = outstanding - self.cfg.dupthresh as i64;
        self.in_recovery = true;
        self.ecn_recover = self.ecn_recover.max(self.recover);
        self.retx.clear();
        self.rexmits.clear();
        self.last_action = CwndAction::Dupack;
        if cut {
            if matches!(self.cc, AnyCc::NewReno(_)) || self.ns2_window() {
                self.ns2_halve();
            } else {
                let flight = self.st.cwnd_bytes.min(self.cfg.rwnd_bytes);
                self.cc.on_congestion(&mut self.st, CongestionEvent::Loss { flight_bytes: flight });
            }
        }
        // reset_rtx_timer(1, 0), MarkRetran(highest_ack_ + 1), output(last_ack_ + 1): the
        // first retransmission is not counted in pipe_.
        self.rto_deadline = Some(now + self.rtt.backed_off(self.backoff));
        if self.rtt.is_ns2() {
            self.timed = None;
        }
        let len = (self.snd_max - self.snd_una).min(mss);
        self.next_retx = self.snd_una + len;
        let seq = self.snd_una;
        self.emit(now, seq, len, out);
    }

    /// `Sack1TcpAgent::send_much` in fast recovery (tcp-sack1.cc:422-434): while pipe_ < cwnd_
    /// (whole packets), the next hole below the highest SACK at or after the retransmission
    /// pointer (`ScoreBoardRQ::GetNextRetran`: each hole once, a lost retransmission waits
    /// for the timer), else new data within the receiver's window of the cumulative ACK.
    fn sack1_send_much(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        let mss = self.st.mss_bytes;
        let rwnd = self.cfg.rwnd_bytes.max(mss);
        while self.sack1_pipe < self.cwnd_segments() as i64 && self.snd_una < self.size {
            let from = self.next_retx.max(self.snd_una);
            let highest = self.sacked.highest().unwrap_or(0);
            let (g, gap_end) = self.sacked.next_gap(from);
            if g < highest {
                if g + mss > self.snd_una + rwnd {
                    break;
                }
                let len = (gap_end - g).min(mss);
                self.next_retx = g + len;
                self.emit(now, g, len, out);
                self.retx.insert(g, g + len);
            } else {
                let len = (self.size - self.snd_nxt).min(mss);
                if len == 0 || self.snd_nxt + mss > self.snd_una + rwnd {
                    break;
                }
                let seq = self.snd_nxt;
                self.emit(now, seq, len, out);
                self.snd_nxt += len;
                self.snd_max = self.snd_max.max(self.snd_nxt);
            }
            self.sack1_pipe += 1;
        }
    }

    /// One halving per episode (ATCP's `halving = "per-episode"`): a signal now, with snd_una
    /// below where the last halving reduction ended, keeps the window (ssthresh = cwnd, as the
    /// kernel ATCP's `ssthresh` returns it). Returns whether it did.
    fn keep_window(&mut self) -> bool {
        let per_episode = matches!(&self.cc, AnyCc::Atcp(a) if a.halves_once_per_episode());
        if !(per_episode && self.quiet_until.is_some_and(|q| self.snd_una < q)) {
            return false;
        }
        self.st.ssthresh_bytes = self.st.cwnd_bytes.max(2 * self.st.mss_bytes);
        self.episode_halved = false;
        true
    }

    /// CWR or recovery is over (or an ECN reduction without CWR is done): after a halving,
    /// signals for data sent until now belong to its episode.
    fn reduction_ended(&mut self) {
        if std::mem::take(&mut self.episode_halved) {
            self.quiet_until = Some(self.snd_nxt);
        }
    }

    /// One ACK's step of proportional rate reduction in CWR (RFC 6937 with Linux's
    /// `tcp_cwnd_reduction`): the window becomes pipe + what may be sent now.
    fn reduce_cwnd(&mut self, delivered: u64, ack_advanced: bool) {
        let mss = self.st.mss_bytes as i128;
        let pipe = self.pipe() as i128;
        let ssthresh = self.st.ssthresh_bytes as i128;
        let Some(c) = self.cwr.as_mut() else { return };
        if delivered == 0 {
            return;
        }
        c.delivered += delivered;
        let (done, out) = (c.delivered as i128, c.out as i128);
        let mut sndcnt = if pipe > ssthresh {
            (ssthresh * done + c.prior_cwnd as i128 - 1) / c.prior_cwnd as i128 - out
        } else {
            let s = (done - out).max(delivered as i128) + if ack_advanced { mss } else { 0 };
            s.min(ssthresh - pipe)
        };
        if out == 0 {
            sndcnt = sndcnt.max(mss);
        }
        self.st.cwnd_bytes = (pipe + sndcnt).max(mss) as u64;
    }

    /// Arms the tail loss probe if the sender may use one now, or disarms it.
    /// `advancing_rto`: the RTO was just restarted (Linux's argument of the same name).
    fn schedule_probe(&mut self, now: Nanos, advancing_rto: bool) {
        if self.paced {
            return; // the timer is the pacing timer
        }
        self.probe_deadline = None;
        let eligible = self.cfg.tail_loss_probe
            && self.cfg.sack
            && self.state == State::Established
            && !self.in_recovery
            && self.snd_una >= self.recover // not after a timeout until its data is acknowledged
            && self.tlp_high_seq.is_none()
            && self.snd_una < self.snd_max;
        let Some(srtt) = self.rtt.srtt() else { return };
        if !eligible {
            return;
        }
        let one_segment = self.snd_max - self.snd_una <= self.st.mss_bytes;
        let mut timeout = Nanos(2 * srtt.0) + if one_segment { self.cfg.min_rto } else { PROBE_SLACK };
        let rto_left = if advancing_rto {
            Some(self.rtt.backed_off(self.backoff))
        } else {
            self.rto_deadline.filter(|&d| d > now).map(|d| d - now)
        };
        if let Some(r) = rto_left {
            timeout = timeout.min(r);
        }
        self.probe_deadline = Some(now + timeout);
    }

    /// Sends the tail loss probe: a new segment if one may go, else the last one again.
    fn send_probe(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        self.probe_deadline = None;
        if self.state != State::Established || self.snd_una >= self.snd_max || self.tlp_high_seq.is_some() {
            return;
        }
        let mss = self.st.mss_bytes;
        let len = (self.size - self.snd_nxt).min(mss);
        let head =
            if len > 0 && self.snd_nxt == self.snd_max && self.snd_nxt + len <= self.snd_una + self.cfg.rwnd_bytes {
                let seq = self.snd_nxt;
                self.emit(now, seq, len, out);
                self.snd_nxt += len;
                self.snd_max = self.snd_nxt;
                false
            } else {
                let seq = ((self.snd_max - 1) / mss * mss).max(self.snd_una);
                self.emit(now, seq, self.snd_max - seq, out);
                seq == self.snd_una
            };
        self.probes += 1;
        self.tlp_high_seq = Some(self.snd_nxt);
        // The RTO still counts from the oldest outstanding segment, unless the probe resent it.
        let rto = now + self.rtt.backed_off(self.backoff);
        self.rto_deadline = Some(match self.rto_deadline {
            Some(d) if !head => d.max(now + Nanos(1)),
            _ => rto,
        });
    }

    /// A retransmission is lost when data first sent after it has been SACKed `dupthresh`
    /// segments beyond while it is still missing (the rule Linux applies to retransmissions);
    /// its hole becomes eligible again instead of waiting for the timeout.
    fn detect_lost_retransmissions(&mut self) {
        let beyond = self.cfg.dupthresh as u64 * self.st.mss_bytes;
        let highest = self.sacked.highest().unwrap_or(0);
        while let Some(&(seq, end, mark)) = self.rexmits.front() {
            if self.retx.covered_in(seq, end) == 0 {
                self.rexmits.pop_front(); // acknowledged or SACKed meanwhile
            } else if highest >= mark + beyond {
                self.rexmits.pop_front();
                self.retx.remove(seq, end);
            } else {
                break;
            }
        }
    }

    fn enter_recovery(&mut self) {
        if self.cwr.take().is_some() {
            // Already reducing for an ECN echo: the loss continues that reduction.
            self.set_cwnd_bytes(self.st.ssthresh_bytes.max(self.st.mss_bytes));
        } else if self.ns2_window() {
            self.ns2_slowdown(true);
        } else if !self.keep_window() {
            // FlightSize, but not above the window: with many holes, snd_max - snd_una
            // overstates what is really in the network.
            let flight = (self.snd_max - self.snd_una).min(self.st.cwnd_bytes);
            self.cc.on_congestion(&mut self.st, CongestionEvent::Loss { flight_bytes: flight });
            self.episode_halved = true;
        }
        self.tlp_high_seq = None;
        self.probe_deadline = None;
        self.left_slow_start = true;
        self.last_action = CwndAction::Dupack;
        self.in_recovery = true;
        self.recover = self.snd_max;
        self.ecn_recover = self.snd_max;
        self.retx.clear();
        self.lost_hint = self.snd_una + self.st.mss_bytes;
        self.rexmits.clear();
    }

    /// Upper end of the region whose unSACKed bytes count as lost.
    fn lost_limit(&self) -> u64 {
        self.sacked.highest().unwrap_or(0).max(self.lost_hint).min(self.snd_max)
    }

    /// RFC 6675 pipe: outstanding bytes minus SACKed bytes minus lost holes not retransmitted.
    /// Without SACK, in recovery, each duplicate ACK stands for one segment that has left the
    /// network (the window inflation of RFC 6582).
    #[inline]
    fn pipe(&self) -> u64 {
        let left = match (self.cfg.sack, self.in_recovery) {
            // Sack1 outside recovery: the window counts from the cumulative ACK (tcp-sack1.cc:434).
            (true, false) if self.cfg.sack_recovery == SackRecovery::Ns2 => 0,
            (true, _) => self.sacked.covered_in(self.snd_una, self.snd_nxt),
            (false, true) => self.dupacks as u64 * self.st.mss_bytes,
            (false, false) => 0,
        };
        let outstanding = (self.snd_nxt - self.snd_una).saturating_sub(left);
        if !self.in_recovery {
            return outstanding;
        }
        let (from, to) = (self.snd_una, self.lost_limit());
        let lost =
            if to > from { (to - from) - self.sacked.covered_in(from, to) - self.retx.covered_in(from, to) } else { 0 };
        outstanding.saturating_sub(lost)
    }

    /// The next lost hole to retransmit: (seq, len), neither SACKed nor retransmitted yet.
    fn next_hole(&self) -> Option<(u64, u64)> {
        let limit = self.lost_limit();
        let mut s = self.snd_una;
        while s < limit {
            let (g, gap_end) = self.sacked.next_gap(s);
            if g >= limit {
                return None;
            }
            let (r, r_end) = self.retx.next_gap(g);
            if r != g {
                s = r; // g lies in a retransmitted range; continue after it
                continue;
            }
            let end = gap_end.min(r_end).min(limit).min(g + self.st.mss_bytes);
            return Some((g, end - g));
        }
        None
    }

    /// The window: cwnd, or for a paced flow two rate x SRTT products (at least two segments).
    #[inline]
    fn window(&self, rate: Option<BitsPerSec>) -> u64 {
        let mss = self.st.mss_bytes;
        match rate {
            None => self.st.cwnd_bytes.max(mss),
            Some(r) => {
                let rtt = self.rtt.srtt().unwrap_or(Nanos::ZERO);
                let bdp = (r.0 as u128 * rtt.0 as u128 / 4_000_000_000) as u64; // 2 x rate x RTT, bytes
                bdp.max(2 * mss)
            }
        }
    }

    fn send_what_fits(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        if self.paced {
            self.send_paced(now, out);
            return;
        }
        if self.state != State::Established {
            return;
        }
        let wnd = if self.ns2_window() {
            // TcpAgent::window() (tcp.cc:899): int(cwnd_) whole segments (window_ applies in
            // send_one as rwnd).
            self.cwnd_segments().max(1) * self.st.mss_bytes
        } else {
            self.st.cwnd_bytes.max(self.st.mss_bytes)
        };
        while self.send_one(now, wnd, out) {}
        if self.router {
            self.send_fin_if_done(now, out);
        }
    }

    /// `send_what_fits` of a paced flow: what is due at the granted rate, then the timer to
    /// the next segment or the end of the round.
    fn send_paced(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        self.probe_deadline = None;
        if self.state != State::Established {
            return;
        }
        let rate = self.cc.pacing_rate().unwrap_or(BitsPerSec(0));
        let wnd = self.window(Some(rate));
        // (A rate of 0: nothing granted yet, only the round's header-only packet below.)
        if rate.0 > 0 {
            loop {
                let next = self.paced_at + rate.tx_time(self.paced_bytes);
                if now < next {
                    self.probe_deadline = Some(next);
                    break;
                }
                let before = out.len();
                if !self.send_one(now, wnd, out) {
                    break;
                }
                // The next segment waits for its time above (in this call when it has come).
                self.paced_at = now;
                self.paced_bytes = out[before..].iter().map(|p| p.wire_bytes as u64).sum();
            }
        }
        self.send_fin_if_done(now, out);
        if !self.fin_sent {
            if let Some(round) = self.cc.round() {
                let due = (self.last_sent + round).max(now);
                self.probe_deadline = Some(self.probe_deadline.map_or(due, |d| d.min(due)));
            }
        }
    }

    /// Sends one segment (a hole in recovery, else new data) if the window allows it.
    #[inline(always)]
    fn send_one(&mut self, now: Nanos, wnd: u64, out: &mut Vec<Packet>) -> bool {
        let mss = self.st.mss_bytes;
        {
            let pipe = self.pipe();
            if self.in_recovery {
                if pipe + mss > wnd {
                    return false;
                }
                if let Some((seq, len)) = self.next_hole() {
                    self.retransmit(now, seq, len, out);
                    return true;
                }
            }
            // New data (or, after a timeout, data again from snd_nxt).
            let remaining = self.size - self.snd_nxt;
            if remaining == 0 {
                return false;
            }
            let len = remaining.min(mss);
            if pipe + len > wnd {
                return false;
            }
            if self.snd_nxt + len > self.snd_una + self.cfg.rwnd_bytes {
                return false;
            }
            let seq = self.snd_nxt;
            self.emit(now, seq, len, out);
            self.snd_nxt += len;
            if self.snd_nxt > self.snd_max {
                self.snd_max = self.snd_nxt;
            }
            true
        }
    }

    fn retransmit(&mut self, now: Nanos, seq: u64, len: u64, out: &mut Vec<Packet>) {
        self.emit(now, seq, len, out);
        self.retx.insert(seq, seq + len);
        if self.cfg.sack && self.rexmits.len() < 4096 {
            self.rexmits.push_back((seq, seq + len, self.snd_nxt));
        }
    }

    fn emit(&mut self, now: Nanos, seq: u64, len: u64, out: &mut Vec<Packet>) {
        let retx = seq < self.snd_max;
        if retx {
            self.retransmits += 1;
        } else if self.rtt.is_ns2() && self.timed.is_none() {
            // output() (tcp.cc:789-797): the first packet beyond maxseq_ sent while none is
            // timed starts the timing.
            self.timed = Some((seq + len, now));
        }
        if let Some(c) = self.cwr.as_mut() {
            c.out += len;
        }
        self.last_data_sent = now;
        self.packets_sent += 1;
        let mut f = if self.ect && !(seq == 0 && self.first_not_ect()) { flags::ECT } else { 0 };
        if retx {
            f |= flags::RETX;
        }
        out.push(Packet {
            flow: self.flow,
            src: self.src,
            dst: self.dst,
            kind: PacketKind::Data,
            flags: f,
            wire_bytes: len as u32 + self.cfg.header_bytes,
            payload_bytes: len as u32,
            seq,
            ts_sent_ns: now.0,
            ..Default::default()
        });
        self.pushed(now, out);
    }

    /// ns-2's output() (tcp.cc:710-732) sends seqno 0 not ECN-capable: the SYN with syn_, else
    /// the first data packet (every transmission of it).
    #[cold]
    fn first_not_ect(&self) -> bool {
        self.cfg.ecn_reaction == EcnReaction::Ns2 && !(self.cfg.handshake || self.router)
    }

    fn arm_if_outstanding(&mut self, now: Nanos, restart: bool) {
        if self.snd_una < self.snd_max {
            if restart || self.rto_deadline.is_none() {
                self.rto_deadline = Some(now + self.rtt.backed_off(self.backoff));
            }
        } else {
            self.rto_deadline = None;
        }
    }

    /// The sender's timer fired at `now` (the caller checked the deadline): a tail loss probe
    /// if one is due first, else the retransmission timeout.
    pub fn on_timer(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        if self.paced && self.probe_deadline.is_some_and(|d| d <= now) && self.rto_deadline.map_or(true, |r| r > now) {
            let sent = self.last_sent;
            self.send_what_fits(now, out);
            // Nothing was due within the round: a header-only packet keeps the requests going.
            if self.last_sent == sent && self.cc.round().is_some_and(|r| sent + r <= now) {
                let p = self.header_only_packet(now);
                self.header_only += 1;
                self.push(now, p, out);
                self.send_what_fits(now, out);
            }
            if self.rto_deadline.is_none() {
                self.arm_if_outstanding(now, false);
            }
            return;
        }
        if let Some(p) = self.probe_deadline.filter(|_| !self.paced) {
            if p <= now && self.rto_deadline.map_or(true, |r| p <= r) {
                self.send_probe(now, out);
                return;
            }
        }
        if self.rto_deadline.is_some_and(|r| r <= now) {
            self.on_rto(now, out);
        }
    }

    /// One more doubling of the timeout. With `rto_model = "ns2"`, `TcpAgent::rtt_backoff`
    /// (tcp.cc:622): `t_backoff_` doubles while below 64 or while the timeout is below
    /// `maxrto_`, and beyond 8 the SRTT is cleared.
    fn back_off(&mut self) {
        if !self.rtt.is_ns2() {
            self.backoff += 1;
            return;
        }
        if self.backoff < 6 || self.rtt.backed_off(self.backoff) < self.cfg.max_rto {
            self.backoff += 1;
        }
        self.rtt.backed_off_ns2(self.backoff);
    }

    fn on_rto(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        self.probe_deadline = None;
        match self.state {
            State::Done => {
                self.rto_deadline = None;
            }
            State::SynSent => {
                self.timeouts += 1;
                self.first_timeouts += 1;
                self.back_off();
                self.timed = None;
                self.send_syn(now, out);
            }
            State::Established => {
                if self.snd_una >= self.snd_max {
                    self.rto_deadline = None;
                    return;
                }
                self.timeouts += 1;
                if self.snd_una == 0 {
                    self.first_timeouts += 1;
                } else if self.last_action == CwndAction::Ecn {
                    self.ecn_timeouts += 1;
                }
                self.left_slow_start = true;
                if self.ns2_ecn() && self.last_action == CwndAction::Ecn && self.snd_una < self.recover {
                    // TcpAgent::timeout (tcp.cc:1920): in the window an ECN echo already
                    // halved, ssthresh stays; the window restarts at one segment.
                    self.set_cwnd_bytes(self.st.mss_bytes);
                } else if self.ns2_window() {
                    // TcpAgent::timeout (tcp.cc:1927): slowdown(CLOSE_SSTHRESH_HALF |
                    // CLOSE_CWND_RESTART).
                    self.ns2_slowdown(false);
                } else {
                    let flight = (self.snd_max - self.snd_una).min(self.st.cwnd_bytes);
                    self.cc.on_congestion(&mut self.st, CongestionEvent::Timeout { flight_bytes: flight });
                }
                self.last_action = CwndAction::Timeout;
                // Sack1TcpAgent::timeout (tcp-sack1.cc:390-413): dupacks ignored until new data
                // is acknowledged, scoreboard cleared.
                self.after_timeout = self.sack1();
                self.next_retx = 0;
                self.in_recovery = false;
                self.recover = self.snd_max;
                self.ecn_recover = self.snd_max;
                self.cwr = None;
                self.quiet_until = None;
                self.episode_halved = false;
                self.tlp_high_seq = None;
                self.sacked.clear();
                self.retx.clear();
                self.rexmits.clear();
                self.dupacks = 0;
                self.snd_nxt = self.snd_una;
                self.back_off();
                self.timed = None; // reset_rtx_timer(0, 1): rtt_active_ = 0
                self.send_what_fits(now, out);
                self.rto_deadline = Some(now + self.rtt.backed_off(self.backoff));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::newreno::NewRenoConfig;
    use crate::cc::CcConfig;
    use fctlab_net::SackBlock;

    const MSS: u64 = 1000;

    fn sender(cwnd_segments: u32) -> TcpSender {
        let cfg = TcpConfig {
            mss_bytes: MSS as u32,
            initial_cwnd_segments: cwnd_segments,
            min_rto: Nanos::from_millis(10),
            ..Default::default()
        };
        TcpSender::new(
            FlowId(0),
            NodeId(0),
            NodeId(1),
            None,
            &cfg,
            CcConfig::NewReno(NewRenoConfig {}).build(&Default::default()),
            false,
        )
    }

    /// An ACK for `ack` carrying SACK blocks given in segments.
    fn ack(s: &mut TcpSender, t_us: u64, ack_seg: u64, blocks: &[(u64, u64)], out: &mut Vec<Packet>) {
        let mut p = Packet { kind: PacketKind::Ack, ack: ack_seg * MSS, ts_echo_ns: 0, ..Default::default() };
        for (i, &(a, b)) in blocks.iter().take(3).enumerate() {
            p.sack[i] = SackBlock { start: a * MSS, end: b * MSS };
        }
        p.sack_len = blocks.len().min(3) as u8;
        s.on_packet(Nanos::from_micros(t_us), &p, out);
    }

    fn seqs(out: &[Packet]) -> Vec<u64> {
        out.iter().map(|p| p.seq / MSS).collect()
    }

    #[test]
    fn initial_window_then_one_segment_per_ack_in_avoidance() {
        let mut s = sender(10);
        let mut out = Vec::new();
        s.start(Nanos::ZERO, &mut out);
        assert_eq!(seqs(&out), (0..10).collect::<Vec<_>>(), "the initial window, back to back");
        assert!(s.timer_deadline().is_some());
        // Lose segment 0: three SACKed duplicates start recovery (cwnd and ssthresh 5), the
        // ACK of everything sent so far ends it in congestion avoidance.
        out.clear();
        ack(&mut s, 100, 0, &[(1, 2)], &mut out);
        ack(&mut s, 101, 0, &[(1, 3)], &mut out);
        ack(&mut s, 102, 0, &[(1, 4)], &mut out);
        let sent_max = seqs(&out).into_iter().max().unwrap_or(0).max(9);
        out.clear();
        ack(&mut s, 200, sent_max + 1, &[], &mut out);
        assert!(!s.in_recovery(), "{}", s.describe());
        assert_eq!((s.st.cwnd_bytes, s.st.ssthresh_bytes), (5 * MSS, 5 * MSS), "{}", s.describe());
        assert_eq!(out.len(), 5, "a window of new segments after recovery: {:?}", seqs(&out));
        // In avoidance each ACK of one segment releases one new segment, and once per window
        // of acknowledged data (5, then 6 segments) the window grows by one: two go out.
        let mut next_ack = sent_max + 1;
        let mut per_ack = Vec::new();
        for i in 0..22 {
            out.clear();
            next_ack += 1;
            ack(&mut s, 300 + i, next_ack, &[], &mut out);
            per_ack.push(out.len());
        }
        let growth: Vec<usize> = per_ack.iter().enumerate().filter(|(_, &n)| n == 2).map(|(i, _)| i).collect();
        assert!(per_ack.iter().all(|&n| n == 1 || n == 2), "{per_ack:?}");
        assert_eq!(growth.len(), 3, "one extra segment per window: {per_ack:?}");
        assert_eq!((growth[1] - growth[0], growth[2] - growth[1]), (6, 7), "windows of 6 and 7 segments: {per_ack:?}");
        assert_eq!(s.st.cwnd_bytes, 8 * MSS);
    }

    /// ns-2's `Agent/TCP` defaults (the `ns2` profile): two segments to start, and a loss that
    /// leaves fewer than three duplicate ACKs waits for the retransmission timer, which is at
    /// least 200 ms and counts whole 10 ms ticks.
    #[test]
    fn ns2_profile_starts_with_two_segments_and_times_out_without_three_dupacks() {
        let cfg = TcpConfig { handshake: false, ..crate::Profile::Ns2.config() };
        let mss = cfg.mss_bytes as u64;
        let cc = CcConfig::NewReno(NewRenoConfig {}).build(&Default::default());
        let mut s = TcpSender::new(FlowId(0), NodeId(0), NodeId(1), Some(5 * mss), &cfg, cc, false);
        let mut out = Vec::new();
        s.start(Nanos::ZERO, &mut out);
        assert_eq!(out.iter().map(|p| p.seq / mss).collect::<Vec<_>>(), vec![0, 1], "initial window of 2 segments");
        assert_eq!(s.st.ssthresh_bytes, 20 * mss, "ssthresh starts at window_ (20 packets)");
        // Segment 0 is acked after 1 ms (slow start: 2 more), then segment 1 is lost: the two
        // segments after it bring only two duplicate ACKs.
        let ack_at = |s: &mut TcpSender, t_us: u64, seg: u64, out: &mut Vec<Packet>| {
            let p = Packet { kind: PacketKind::Ack, ack: seg * mss, ts_echo_ns: 0, ..Default::default() };
            s.on_packet(Nanos::from_micros(t_us), &p, out);
        };
        out.clear();
        ack_at(&mut s, 1000, 1, &mut out);
        assert_eq!(out.iter().map(|p| p.seq / mss).collect::<Vec<_>>(), vec![2, 3]);
        out.clear();
        ack_at(&mut s, 2000, 1, &mut out);
        ack_at(&mut s, 2001, 1, &mut out);
        assert!(!out.iter().any(|p| p.has(flags::RETX)), "no fast retransmit on two duplicate ACKs");
        let deadline = s.timer_deadline().expect("the timer runs");
        assert!(
            deadline - Nanos::from_micros(1000) >= Nanos::from_millis(200),
            "RTO {deadline} is at least min RTO after the last new ACK"
        );
        assert_eq!(deadline.0 % 10_000_000, (1_000_000), "RTO of whole 10 ms ticks after the ACK that armed it");
        s.on_timer(deadline, &mut out);
        assert!(out.iter().any(|p| p.has(flags::RETX) && p.seq == mss), "segment 1 is sent again after the timeout");
        assert_eq!(
            (s.timeouts, s.first_timeouts, s.ecn_timeouts),
            (1, 0, 0),
            "a data timeout: segment 0 was acknowledged"
        );
    }

    /// NewReno without SACK (the ns2 profile): with two losses in a window, the partial ACK
    /// after the first repair sends the second hole at once, and the duplicate ACKs keep new
    /// data flowing (window inflation), so recovery ends without a timeout.
    #[test]
    fn newreno_without_sack_repairs_two_losses_by_partial_ack() {
        let cfg = TcpConfig {
            mss_bytes: MSS as u32,
            initial_cwnd_segments: 20,
            sack: false,
            tail_loss_probe: false,
            ..Default::default()
        };
        let cc = CcConfig::NewReno(NewRenoConfig {}).build(&Default::default());
        let mut s = TcpSender::new(FlowId(0), NodeId(0), NodeId(1), None, &cfg, cc, false);
        let mut out = Vec::new();
        s.start(Nanos::ZERO, &mut out);
        // Segments 0 and 5 are lost: 18 duplicate ACKs for 0 (from 1-4 and 6-19).
        let mut sent_new = 0;
        for i in 0..18 {
            out.clear();
            ack(&mut s, 100 + i, 0, &[], &mut out);
            sent_new += out.iter().filter(|p| !p.has(flags::RETX)).count();
        }
        assert!(s.in_recovery());
        // cwnd 10 segments, 20 outstanding: new data once more than 10 duplicate ACKs arrived
        assert!((6..=9).contains(&sent_new), "new segments sent on duplicate ACKs: {sent_new} {}", s.describe());
        // The retransmitted 0 arrives: the ACK covers 0..5 (partial), 5 goes out at once.
        out.clear();
        ack(&mut s, 200, 5, &[], &mut out);
        assert_eq!(seqs(&out).first(), Some(&5), "{:?} {}", seqs(&out), s.describe());
        assert!(out[0].has(flags::RETX));
        out.clear();
        let top = s.snd_max / MSS;
        ack(&mut s, 300, top, &[], &mut out);
        assert!(!s.in_recovery());
        assert_eq!((s.timeouts, s.retransmits), (0, 2), "{}", s.describe());
    }

    #[test]
    fn sack_recovery_retransmits_each_hole_once_and_detects_lost_retransmissions() {
        let mut s = sender(20);
        let mut out = Vec::new();
        s.start(Nanos::ZERO, &mut out);
        assert_eq!(out.len(), 20);
        out.clear();
        // Segments 0 and 5 are lost; 1..5 and 6..9 arrive, each producing a dup ACK for 0.
        ack(&mut s, 100, 0, &[(1, 2)], &mut out);
        ack(&mut s, 101, 0, &[(1, 3)], &mut out);
        ack(&mut s, 102, 0, &[(1, 4)], &mut out);
        assert!(s.in_recovery(), "{}", s.describe());
        // cwnd halves to 10 segments; the first hole (segment 0) is retransmitted at once
        let rx: Vec<&Packet> = out.iter().filter(|p| p.has(flags::RETX)).collect();
        assert_eq!(rx.len(), 1);
        assert_eq!(rx[0].seq, 0);
        out.clear();
        ack(&mut s, 103, 0, &[(6, 10), (1, 5)], &mut out);
        // pipe (13 segments) is above cwnd (10): nothing may be sent yet
        assert!(out.is_empty(), "{:?}", seqs(&out));
        ack(&mut s, 103, 0, &[(6, 18), (1, 5)], &mut out);
        // segment 5 is now below the highest SACK: retransmitted once, segment 0 not again
        assert_eq!(seqs(&out).iter().filter(|&&q| q == 5).count(), 1, "{:?}", seqs(&out));
        assert!(!seqs(&out).contains(&0));
        out.clear();
        // More SACKs for data sent after the retransmissions, but not beyond 3 segments past
        // the new-data mark: no retransmission is judged lost yet.
        ack(&mut s, 104, 0, &[(6, 21), (1, 5)], &mut out);
        assert!(!seqs(&out).contains(&0) && !seqs(&out).contains(&5), "{:?}", seqs(&out));
        // SACKs far beyond everything sent after the retransmission of 0: it was lost.
        let hi = s.snd_max / MSS;
        out.clear();
        ack(&mut s, 105, 0, &[(6, hi), (1, 5)], &mut out);
        assert!(hi >= 25);
        assert!(seqs(&out).contains(&0), "segment 0 should be sent again: {:?} {}", seqs(&out), s.describe());
        assert!(seqs(&out).contains(&5), "segment 5 should be sent again: {:?} {}", seqs(&out), s.describe());
        // The cumulative ACK ends recovery at the recovery point.
        out.clear();
        ack(&mut s, 106, hi, &[], &mut out);
        assert!(!s.in_recovery());
        assert_eq!(s.retransmits, 4);
    }

    #[test]
    fn ecn_echo_halves_once_per_window() {
        // Without the CWR hold (ns-2): the window drops at once.
        let cfg = TcpConfig { mss_bytes: MSS as u32, initial_cwnd_segments: 20, cwr: false, ..Default::default() };
        let mut s = TcpSender::new(
            FlowId(0),
            NodeId(0),
            NodeId(1),
            None,
            &cfg,
            CcConfig::NewReno(NewRenoConfig {}).build(&Default::default()),
            true,
        );
        let mut out = Vec::new();
        s.start(Nanos::ZERO, &mut out);
        assert_eq!(out.len(), 20);
        let ece = |s: &mut TcpSender, t_us: u64, ack_seg: u64, out: &mut Vec<Packet>| {
            let mut p = Packet { kind: PacketKind::Ack, ack: ack_seg * MSS, ..Default::default() };
            p.flags |= flags::ECE;
            s.on_packet(Nanos::from_micros(t_us), &p, out);
        };
        ece(&mut s, 100, 2, &mut out);
        // halved to half the flight (18 segments)
        assert_eq!(s.st.cwnd_bytes, 9 * MSS, "{}", s.describe());
        // echoes on ACKs of data sent before the reduction, up to and including the last
        // segment then outstanding (20), are the same congestion: no second halving
        for (i, a) in (4..=20).step_by(2).enumerate() {
            ece(&mut s, 101 + i as u64, a, &mut out);
        }
        assert!(s.st.cwnd_bytes >= 9 * MSS, "halved again: {}", s.describe());
        assert!(s.snd_max > 20 * MSS);
        // an echo for data sent after the reduction is a new congestion event
        let before = s.st.cwnd_bytes;
        ece(&mut s, 200, 21, &mut out);
        assert!(s.st.cwnd_bytes < before, "{}", s.describe());
    }

    /// Linux's CWR state: after an ECN echo the window never grows until the data outstanding
    /// at the echo is acknowledged; proportional rate reduction spreads the sending over that
    /// round (about ssthresh/prior_cwnd per segment delivered) and ends at ssthresh.
    #[test]
    fn ecn_reduction_holds_the_window_until_its_round_ends() {
        use crate::cc::dctcp::DctcpConfig;
        let cfg = TcpConfig {
            mss_bytes: MSS as u32,
            initial_cwnd_segments: 20,
            initial_ssthresh_bytes: Some(20 * MSS),
            ..Default::default()
        };
        assert!(cfg.cwr, "the linux profile holds the window in CWR");
        let dctcp = CcConfig::Dctcp(DctcpConfig { g: 1.0 / 16.0, alpha_init: 1.0 }).build(&Default::default());
        let mut s = TcpSender::new(FlowId(0), NodeId(0), NodeId(1), None, &cfg, dctcp, true);
        let mut out = Vec::new();
        s.start(Nanos::ZERO, &mut out);
        assert_eq!(out.len(), 20);
        let ack_at = |s: &mut TcpSender, t_us: u64, seg: u64, ece: bool, out: &mut Vec<Packet>| {
            let mut p = Packet { kind: PacketKind::Ack, ack: seg * MSS, ts_echo_ns: 0, ..Default::default() };
            if ece {
                p.flags |= flags::ECE;
                p.ce_bytes_echo = MSS as u32;
            }
            s.on_packet(Nanos::from_micros(t_us), &p, out);
        };
        // The first ACK echoes a mark: alpha 1 halves the window's target to 10 segments.
        out.clear();
        ack_at(&mut s, 100, 1, true, &mut out);
        assert!(s.in_cwr());
        let high_seq = s.cwr.unwrap().high_seq / MSS;
        assert_eq!(s.st.ssthresh_bytes, 10 * MSS, "{}", s.describe());
        let mut sent = out.len();
        let mut cwnds = vec![s.st.cwnd_bytes];
        // Every segment outstanding at the echo is acknowledged, one ACK each, no new marks.
        for seg in 2..=high_seq {
            out.clear();
            ack_at(&mut s, 100 + seg, seg, false, &mut out);
            sent += out.len();
            if s.in_cwr() {
                cwnds.push(s.st.cwnd_bytes);
            }
        }
        assert!(cwnds.windows(2).all(|w| w[1] <= w[0]), "the window grew during CWR: {cwnds:?}");
        assert!(s.in_cwr(), "CWR lasts while snd_una has not passed {high_seq}: {}", s.describe());
        // PRR: over the round about ssthresh/prior = 1/2 of the delivered segments were sent,
        // not a burst at the end.
        assert!((9..=11).contains(&sent), "{sent} segments sent in the reduction's round");
        // The next ACK passes high_seq: CWR ends at ssthresh and growth resumes.
        out.clear();
        ack_at(&mut s, 200, high_seq + 1, false, &mut out);
        assert!(!s.in_cwr());
        assert!(s.st.cwnd_bytes >= 10 * MSS && s.st.cwnd_bytes < 11 * MSS, "{}", s.describe());
    }

    /// ATCP under CWR, one halving per congestion episode (the kernel ATCP's rule): an echo
    /// for data sent during the reduction's round, arriving after CWR ended, starts a new CWR
    /// round with the window kept (ssthresh = cwnd); the next echo for later data halves. With
    /// `halving = "per-window"` the same echo halves a second time.
    #[test]
    fn atcp_halves_once_per_episode_under_cwr() {
        use crate::cc::atcp::{AtcpConfig, Halving, WeightFunction};
        let run = |halving: Halving| {
            let cfg = TcpConfig {
                mss_bytes: MSS as u32,
                initial_cwnd_segments: 20,
                initial_ssthresh_bytes: Some(20 * MSS),
                ..Default::default()
            };
            assert!(cfg.cwr);
            let atcp = CcConfig::Atcp(AtcpConfig { function: WeightFunction::Fixed { weight: 1.0 }, halving })
                .build(&Default::default());
            let mut s = TcpSender::new(FlowId(0), NodeId(0), NodeId(1), None, &cfg, atcp, true);
            let mut out = Vec::new();
            s.start(Nanos::ZERO, &mut out);
            let mut t = 100;
            let mut ack_at = |s: &mut TcpSender, seg: u64, ece: bool| {
                let mut p = Packet { kind: PacketKind::Ack, ack: seg * MSS, ts_echo_ns: 0, ..Default::default() };
                if ece {
                    p.flags |= flags::ECE;
                    p.ce_bytes_echo = MSS as u32;
                }
                t += 1;
                s.on_packet(Nanos::from_micros(t), &p, &mut Vec::new());
            };
            // A mark on the first window: half the flight (19 segments), CWR until 20 is passed.
            ack_at(&mut s, 1, true);
            assert!(s.in_cwr());
            let first = s.st.ssthresh_bytes;
            assert_eq!(first, 9500, "{}", s.describe());
            for seg in 2..=20 {
                ack_at(&mut s, seg, false);
            }
            ack_at(&mut s, 21, false);
            assert!(!s.in_cwr(), "{}", s.describe());
            assert_eq!(s.st.cwnd_bytes, first);
            // PRR kept sending during the round: segments 20.. went out before CWR ended.
            let ended_at = s.snd_nxt / MSS;
            assert!(ended_at >= 28, "{}", s.describe());
            // An echo for one of them (sent before the reduction ended).
            ack_at(&mut s, 22, true);
            assert!(s.in_cwr(), "any echo outside CWR starts CWR: {}", s.describe());
            let second = s.st.ssthresh_bytes;
            // Its round passes without growth; then data sent after it is marked.
            let high = s.cwr.unwrap().high_seq / MSS;
            for seg in 23..=high + 1 {
                ack_at(&mut s, seg, false);
            }
            assert!(!s.in_cwr());
            assert!(s.snd_una / MSS > ended_at);
            ack_at(&mut s, high + 2, true);
            (first, second, s.st.ssthresh_bytes)
        };
        let (first, second, third) = run(Halving::PerEpisode);
        assert_eq!(second, first, "the echo for the reduction's own packets keeps the window");
        assert!(third < 6 * MSS, "a later echo halves: {third}");
        let (first, second, _) = run(Halving::PerWindow);
        assert!(second < 6 * MSS, "per window, the same echo halves again: {first} -> {second}");
    }

    /// Tail loss probe (linux profile): a flow whose last segments are lost sends a probe about
    /// two round trips after its last transmission and recovers by SACK, far before the RTO.
    #[test]
    fn lost_tail_is_recovered_by_a_probe_before_the_rto() {
        let cfg = TcpConfig { mss_bytes: MSS as u32, initial_cwnd_segments: 10, ..Default::default() };
        let cc = CcConfig::NewReno(NewRenoConfig {}).build(&Default::default());
        let mut s = TcpSender::new(FlowId(0), NodeId(0), NodeId(1), Some(10 * MSS), &cfg, cc, false);
        let mut out = Vec::new();
        s.start(Nanos::ZERO, &mut out);
        assert_eq!(out.len(), 10);
        // Segments 0..7 arrive (RTT 100 us); 7, 8 and 9 are lost.
        for seg in 1..=7u64 {
            out.clear();
            let p = Packet { kind: PacketKind::Ack, ack: seg * MSS, ts_echo_ns: 0, ..Default::default() };
            s.on_packet(Nanos::from_micros(100), &p, &mut out);
            assert!(out.is_empty());
        }
        let due = s.timer_deadline().expect("a timer runs");
        let rto_due = Nanos::from_micros(100) + Nanos::from_millis(200);
        assert!(due <= Nanos::from_micros(100 + 2 * 100) + PROBE_SLACK, "probe due at {due}");
        out.clear();
        s.on_timer(due, &mut out);
        assert_eq!((out.len(), out[0].seq / MSS, s.probes), (1, 9, 1), "the probe resends the last segment");
        // The probe arrives: its ACK SACKs segment 9, and RACK judges 7 and 8 lost.
        out.clear();
        let mut p = Packet { kind: PacketKind::Ack, ack: 7 * MSS, ts_echo_ns: due.0, ..Default::default() };
        p.sack[0] = SackBlock { start: 9 * MSS, end: 10 * MSS };
        p.sack_len = 1;
        let t = due + Nanos::from_micros(100);
        s.on_packet(t, &p, &mut out);
        assert!(s.in_recovery(), "{}", s.describe());
        assert_eq!(seqs(&out), vec![7, 8], "both holes retransmitted at once");
        out.clear();
        let p = Packet { kind: PacketKind::Ack, ack: 10 * MSS, ts_echo_ns: t.0, ..Default::default() };
        let done = t + Nanos::from_micros(100);
        s.on_packet(done, &p, &mut out);
        assert!(s.is_complete());
        assert_eq!(s.timeouts, 0);
        assert!(done < Nanos(rto_due.0 / 10), "recovered at {done}, the RTO was due at {rto_due}");

        // Without the probe (ns-2 has none) the same loss waits for the timeout.
        let cfg = TcpConfig { tail_loss_probe: false, ..cfg };
        let cc = CcConfig::NewReno(NewRenoConfig {}).build(&Default::default());
        let mut s = TcpSender::new(FlowId(0), NodeId(0), NodeId(1), Some(10 * MSS), &cfg, cc, false);
        s.start(Nanos::ZERO, &mut out);
        for seg in 1..=7u64 {
            let p = Packet { kind: PacketKind::Ack, ack: seg * MSS, ts_echo_ns: 0, ..Default::default() };
            s.on_packet(Nanos::from_micros(100), &p, &mut out);
        }
        assert_eq!(s.timer_deadline(), Some(rto_due));
    }

    /// The ns2 profile with SACK (ns-2's `Agent/TCP/Sack1`), no handshake, a large receiver
    /// window and an initial window of 20 segments.
    fn ns2_sack1(size: Option<u64>) -> TcpSender {
        let cfg = TcpConfig {
            sack: true,
            handshake: false,
            initial_cwnd_segments: 20,
            rwnd_bytes: 100 * MSS,
            initial_ssthresh_bytes: Some(100 * MSS),
            ..crate::Profile::Ns2.config()
        };
        assert_eq!(cfg.mss_bytes as u64, MSS);
        TcpSender::new(
            FlowId(0),
            NodeId(0),
            NodeId(1),
            size,
            &cfg,
            CcConfig::NewReno(NewRenoConfig {}).build(&Default::default()),
            false,
        )
    }

    /// Sack1 recovery: pipe_ counted in packets, each hole below the highest SACK sent once,
    /// new data past the holes while pipe_ < cwnd_, and a lost retransmission left to the
    /// retransmission timer (ns-2 has no lost-retransmission detection).
    #[test]
    fn sack1_lost_retransmission_waits_for_the_timer_while_new_data_flows() {
        let mut s = ns2_sack1(None);
        let mut out = Vec::new();
        s.start(Nanos::ZERO, &mut out);
        assert_eq!(seqs(&out), (0..20).collect::<Vec<_>>());
        out.clear();
        ack(&mut s, 100, 1, &[], &mut out); // slow start: 20, 21
        assert_eq!(seqs(&out), vec![20, 21]);
        // Segments 1 and 5 are lost. Two duplicate ACKs: one new segment each (singledup).
        out.clear();
        ack(&mut s, 101, 1, &[(2, 3)], &mut out);
        ack(&mut s, 102, 1, &[(2, 4)], &mut out);
        assert_eq!(seqs(&out), vec![22, 23]);
        // The third: fast retransmit of 1; pipe_ = 23 outstanding - 3 = 20 > cwnd_ 10.5.
        out.clear();
        ack(&mut s, 103, 1, &[(2, 5)], &mut out);
        assert!(s.in_recovery());
        assert_eq!(seqs(&out), vec![1]);
        assert_eq!((s.st.cwnd_bytes, s.st.ssthresh_bytes), (10_500, 10 * MSS), "half of 21 segments");
        // Segments 6..=23 arrive, each ACK takes one packet out of pipe_: from pipe_ 20 down
        // to 9, then one packet per ACK: hole 5 first, then new data.
        let mut sent = Vec::new();
        for k in 6..=23u64 {
            out.clear();
            ack(&mut s, 104 + k, 1, &[(6, k + 1), (2, 5)], &mut out);
            sent.extend(seqs(&out));
        }
        assert_eq!(sent.iter().filter(|&&q| q == 5).count(), 1, "{sent:?}");
        assert_eq!(sent[0], 5, "the hole goes first: {sent:?}");
        assert!(!sent.contains(&1), "1 was retransmitted already: {sent:?}");
        assert_eq!(sent[1..], (24..24 + sent.len() as u64 - 1).collect::<Vec<_>>(), "then new data: {sent:?}");
        // The retransmission of 1 is lost; 5 and the new data arrive. SACKs far beyond the
        // retransmission do not send 1 again: new data keeps flowing, within pipe_ < cwnd_.
        let top = s.snd_max / MSS;
        let deadline = s.timer_deadline().expect("the timer runs");
        let mut more = Vec::new();
        for k in 24..top {
            out.clear();
            ack(&mut s, 200 + k, 1, &[(2, k + 1)], &mut out);
            more.extend(seqs(&out));
        }
        assert!(!more.contains(&1) && !more.is_empty(), "{more:?}");
        assert!(more.iter().all(|&q| q >= top), "only new data: {more:?}");
        assert_eq!(s.retransmits, 2);
        assert_eq!(s.timer_deadline(), Some(deadline), "duplicate ACKs do not restart the timer");
        out.clear();
        s.on_timer(deadline, &mut out);
        assert_eq!((seqs(&out), s.timeouts), (vec![1], 1), "the timer repairs the lost retransmission");
        assert_eq!((s.first_timeouts, s.ecn_timeouts), (0, 0), "after a loss recovery: a data timeout");
        assert!(!s.in_recovery());
    }

    /// Sack1 ends recovery at the recovery point with the window the halving left (no
    /// deflation to ssthresh), and a first data packet lost without a handshake cannot be
    /// fast-retransmitted (ns-2's `highest_ack_ > recover_` test with `recover_` = 0).
    #[test]
    fn sack1_recovery_ends_at_the_recovery_point_and_the_first_packet_needs_the_timer() {
        let mut s = ns2_sack1(None);
        let mut out = Vec::new();
        s.start(Nanos::ZERO, &mut out);
        out.clear();
        for k in 1..=5u64 {
            ack(&mut s, 100 + k, 0, &[(1, k + 1)], &mut out);
        }
        assert!(!s.in_recovery(), "{}", s.describe());
        assert!(!seqs(&out).contains(&0));
        let mut s = ns2_sack1(None);
        s.start(Nanos::ZERO, &mut out);
        ack(&mut s, 100, 1, &[], &mut out);
        for k in 2..=4u64 {
            ack(&mut s, 100 + k, 1, &[(2, k + 1)], &mut out);
        }
        assert!(s.in_recovery());
        let cwnd = s.st.cwnd_bytes;
        let top = s.snd_max / MSS;
        ack(&mut s, 200, top, &[], &mut out);
        assert!(!s.in_recovery());
        assert_eq!(s.st.cwnd_bytes, cwnd, "cwnd_ stays at half the window");
    }

    /// ns-2's `singledup_`: the first two duplicate ACKs each send one new segment, if it fits
    /// in cwnd plus the duplicate ACKs (TcpAgent::send_one), without SACK as with it.
    #[test]
    fn singledup_sends_one_new_segment_per_early_duplicate_ack() {
        for singledup in [true, false] {
            let cfg =
                TcpConfig { handshake: false, initial_cwnd_segments: 4, singledup, ..crate::Profile::Ns2.config() };
            let cc = CcConfig::NewReno(NewRenoConfig {}).build(&Default::default());
            let mut s = TcpSender::new(FlowId(0), NodeId(0), NodeId(1), None, &cfg, cc, false);
            let mut out = Vec::new();
            s.start(Nanos::ZERO, &mut out);
            ack(&mut s, 100, 1, &[], &mut out); // cwnd 5: segments 4, 5
            out.clear();
            // Segment 1 is lost: 2, 3 and 4 bring duplicate ACKs.
            ack(&mut s, 101, 1, &[], &mut out);
            let first = seqs(&out);
            out.clear();
            ack(&mut s, 102, 1, &[], &mut out);
            let second = seqs(&out);
            if singledup {
                assert_eq!((first, second), (vec![6], vec![7]), "one new segment per duplicate ACK");
            } else {
                assert!(first.is_empty() && second.is_empty());
            }
            out.clear();
            ack(&mut s, 103, 1, &[], &mut out);
            assert!(s.in_recovery());
            assert_eq!(seqs(&out)[0], 1, "fast retransmit on the third");
        }
        // The window test: 5 outstanding, cwnd 4 (+1 per duplicate ACK): the first duplicate
        // ACK may not send (6 > 4 + 1), the second may (6 <= 4 + 2).
        let cfg = TcpConfig { handshake: false, initial_cwnd_segments: 5, ..crate::Profile::Ns2.config() };
        let mut out = Vec::new();
        let mut s2 = TcpSender::new(
            FlowId(0),
            NodeId(0),
            NodeId(1),
            None,
            &cfg,
            CcConfig::NewReno(NewRenoConfig {}).build(&Default::default()),
            false,
        );
        s2.start(Nanos::ZERO, &mut out);
        assert_eq!(s2.snd_max, 5 * MSS);
        s2.set_cwnd_segments(4.0);
        out.clear();
        ack(&mut s2, 101, 0, &[], &mut out);
        assert!(out.is_empty(), "5 + 1 > 4 + 1: {:?}", seqs(&out));
        ack(&mut s2, 102, 0, &[], &mut out);
        assert_eq!(seqs(&out), vec![5], "5 + 1 <= 4 + 2");
    }

    /// ns-2.35's `Agent/TCP/Newreno` as the ns2 profile has it, without handshake.
    fn ns2_newreno(initial_cwnd: u32) -> TcpSender {
        let cfg = TcpConfig { handshake: false, initial_cwnd_segments: initial_cwnd, ..crate::Profile::Ns2.config() };
        TcpSender::new(
            FlowId(0),
            NodeId(0),
            NodeId(1),
            None,
            &cfg,
            CcConfig::NewReno(NewRenoConfig {}).build(&Default::default()),
            false,
        )
    }

    /// `window_model = "ns2"`: opencwnd() (+1 in slow start, increase_num_ / cwnd_ after,
    /// ATCP's weight as increase_num_), int(cwnd_) whole segments sent, and slowdown()
    /// halving windowd() = min(cwnd_, window_) on a loss and a timeout, not the flight.
    #[test]
    fn ns2_window_opens_by_increase_over_cwnd_and_halves_min_of_cwnd_and_window() {
        let mut s = ns2_newreno(2);
        let mut out = Vec::new();
        s.start(Nanos::ZERO, &mut out);
        ack(&mut s, 100, 1, &[], &mut out);
        assert_eq!(s.ns2_cwnd, 3.0, "slow start: +1");
        s.st.ssthresh_bytes = 4 * MSS;
        s.set_cwnd_segments(4.5);
        out.clear();
        ack(&mut s, 200, 2, &[], &mut out);
        assert_eq!(s.ns2_cwnd, 4.5 + 1.0 / 4.5, "congestion avoidance: +1/cwnd");
        assert_eq!(seqs(&out), vec![4, 5], "int(4.72) = 4 segments outstanding");
        // cwnd_ above window_ (20): a loss halves min(cwnd_, window_), whatever is in flight.
        s.set_cwnd_segments(30.0);
        for t in 0..3 {
            ack(&mut s, 300 + t, 2, &[], &mut out);
        }
        assert!(s.in_recovery());
        assert_eq!((s.ns2_cwnd, s.st.ssthresh_bytes), (10.0, 10 * MSS), "{}", s.describe());
        // A timeout: ssthresh_ = int(min(cwnd_, window_) / 2), cwnd_ = 1.
        s.set_cwnd_segments(9.5);
        let t = s.timer_deadline().unwrap();
        s.on_timer(t, &mut out);
        assert_eq!((s.ns2_cwnd, s.st.ssthresh_bytes), (1.0, 4 * MSS));
        // ATCP's weight enters as increase_num_.
        let cfg = TcpConfig { handshake: false, ..crate::Profile::Ns2.config() };
        let atcp = crate::cc::atcp::AtcpConfig {
            function: crate::cc::atcp::WeightFunction::Fixed { weight: 2.0 },
            halving: Default::default(),
        };
        let mut a = TcpSender::new(
            FlowId(0),
            NodeId(0),
            NodeId(1),
            None,
            &cfg,
            CcConfig::Atcp(atcp).build(&Default::default()),
            false,
        );
        a.start(Nanos::ZERO, &mut out);
        a.st.ssthresh_bytes = 2 * MSS;
        a.set_cwnd_segments(4.0);
        ack(&mut a, 100, 1, &[], &mut out);
        assert_eq!(a.ns2_cwnd, 4.5, "+ weight / cwnd");
    }

    /// `rto_model = "ns2"`: the backoff of a timeout stays until a segment first sent after
    /// it is acknowledged (newack(): rtt_active_ and seqno >= rtt_seq_), not on the first
    /// new ACK; RTT samples come from the one timed segment.
    #[test]
    fn ns2_backoff_is_kept_until_the_timed_segment_is_acknowledged() {
        let mut s = ns2_newreno(2);
        let mut out = Vec::new();
        s.start(Nanos::ZERO, &mut out); // 0 and 1, 0 timed
        ack(&mut s, 30_000, 1, &[], &mut out); // 3 ticks: RTO max(90 ms, minrto_ 200 ms)
        assert_eq!(s.rtt.rto(), Nanos::from_millis(200));
        assert_eq!(s.timed.map(|t| t.0), Some(3 * MSS), "segment 2, the first sent untimed, is timed");
        let t = s.timer_deadline().unwrap();
        out.clear();
        s.on_timer(t, &mut out);
        assert_eq!((s.backoff, seqs(&out)), (1, vec![1]));
        assert!(s.timed.is_none());
        // The retransmission is acknowledged: the backoff stays (RFC 6298 would end it).
        let t1 = t + Nanos::from_millis(30);
        out.clear();
        s.on_packet(t1, &Packet { kind: PacketKind::Ack, ack: 2 * MSS, ..Default::default() }, &mut out);
        assert_eq!(s.backoff, 1);
        assert_eq!(s.timer_deadline(), Some(t1 + Nanos::from_millis(400)));
        assert_eq!(seqs(&out), vec![2, 3], "resent from the timeout: not timed");
        ack(&mut s, (t1.0 / 1000) + 10_000, 4, &[], &mut out);
        assert_eq!(s.backoff, 1, "still no segment sent after the timeout acknowledged");
        let timed_end = s.timed.map(|t| t.0).unwrap();
        assert_eq!(timed_end, 5 * MSS, "segment 4, the first new one, is timed");
        ack(&mut s, (t1.0 / 1000) + 20_000, 5, &[], &mut out);
        assert_eq!(s.backoff, 0, "the timed segment is acknowledged");
    }

    /// `newreno_recovery = "ns2"`: a partial ACK that acknowledges more packets than dupwnd_
    /// shrinks cwnd_ (partial_window_deflation_), recovery ends with cwnd_ kept and opened,
    /// and an ACK at the recovery point exactly allows no new fast retransmit.
    #[test]
    fn ns2_newreno_deflates_the_window_and_needs_an_ack_beyond_the_recovery_point() {
        let mut s = ns2_newreno(10);
        let mut out = Vec::new();
        s.start(Nanos::ZERO, &mut out);
        ack(&mut s, 100, 1, &[], &mut out); // cwnd 11: 1..=11 outstanding
        for t in 0..3 {
            ack(&mut s, 200 + t, 1, &[], &mut out); // singledup sends 12 and 13, then the fast retransmit
        }
        assert!(s.in_recovery());
        assert_eq!(s.recover, 14 * MSS);
        assert_eq!((s.ns2_cwnd, s.st.ssthresh_bytes), (5.5, 5 * MSS));
        ack(&mut s, 300, 1, &[], &mut out); // dupwnd_ 4
        out.clear();
        // 7 packets acknowledged, dupwnd_ 4: cwnd_ -= 3, dupwnd_ = 1; 8 goes out at once.
        ack(&mut s, 400, 8, &[], &mut out);
        assert_eq!((s.ns2_cwnd, s.dupacks), (2.5, 1), "{}", s.describe());
        assert_eq!(seqs(&out), vec![8]);
        ack(&mut s, 500, 14, &[], &mut out);
        assert!(!s.in_recovery());
        assert_eq!(s.ns2_cwnd, 3.5, "kept, then opened by one (below ssthresh_)");
        assert!(s.snd_max > 14 * MSS);
        for t in 0..3 {
            ack(&mut s, 600 + t, 14, &[], &mut out);
        }
        assert!(!s.in_recovery(), "highest_ack_ == recover_: no fast retransmit");
    }

    /// `whole_packets`: a flow of 2500 B with 1000 B segments sends three full segments and is
    /// complete only when the third is acknowledged.
    #[test]
    fn whole_packets_rounds_a_flow_up_to_full_segments() {
        for whole_packets in [true, false] {
            let cfg = TcpConfig { handshake: false, whole_packets, ..crate::Profile::Ns2.config() };
            let cc = CcConfig::NewReno(NewRenoConfig {}).build(&Default::default());
            let mut s = TcpSender::new(FlowId(0), NodeId(0), NodeId(1), Some(2500), &cfg, cc, false);
            let mut out = Vec::new();
            s.start(Nanos::ZERO, &mut out);
            ack(&mut s, 100, 2, &[], &mut out);
            let last = out.last().unwrap();
            assert_eq!((last.seq, last.payload_bytes), (2000, if whole_packets { 1000 } else { 500 }));
            let p = Packet { kind: PacketKind::Ack, ack: 2500, ..Default::default() };
            s.on_packet(Nanos::from_micros(200), &p, &mut out);
            assert_eq!(s.is_complete(), !whole_packets);
            let p = Packet { kind: PacketKind::Ack, ack: 3000, ..Default::default() };
            s.on_packet(Nanos::from_micros(300), &p, &mut out);
            assert!(s.is_complete());
        }
    }

    /// ns-2's ECN reaction (`TcpAgent::ecn()`, `slowdown()` with `precisionReduce_`): the
    /// window halves exactly, with no floor of two segments (one segment at least, ssthresh
    /// two), once per window; ACKs with ECN-Echo do not open the window; ns-2's integer
    /// window sends one segment at a window of 1.5; the first data packet is not ECT.
    #[test]
    fn ns2_ecn_reaction_halves_the_window_without_a_two_segment_floor() {
        let cfg = TcpConfig { handshake: false, initial_cwnd_segments: 3, ecn: true, ..crate::Profile::Ns2.config() };
        let cc = CcConfig::NewReno(NewRenoConfig {}).build(&Default::default());
        let mut s = TcpSender::new(FlowId(0), NodeId(0), NodeId(1), None, &cfg, cc, true);
        let mut out = Vec::new();
        s.start(Nanos::ZERO, &mut out);
        assert_eq!(seqs(&out), vec![0, 1, 2]);
        assert!(
            !out[0].has(flags::ECT) && out[1].has(flags::ECT) && out[2].has(flags::ECT),
            "seqno 0 is not ECN-capable"
        );
        let ece = |s: &mut TcpSender, t_us: u64, seg: u64, out: &mut Vec<Packet>| {
            let mut p = Packet { kind: PacketKind::Ack, ack: seg * MSS, ts_echo_ns: 0, ..Default::default() };
            p.flags |= flags::ECE;
            p.ce_bytes_echo = MSS as u32;
            s.on_packet(Nanos::from_micros(t_us), &p, out);
        };
        out.clear();
        ece(&mut s, 100, 1, &mut out);
        assert_eq!((s.st.cwnd_bytes, s.st.ssthresh_bytes), (1500, 2 * MSS), "3 segments halve to 1.5, ssthresh 2");
        assert!(out.is_empty(), "2 outstanding, window 1: {:?}", seqs(&out));
        // The rest of the window: the echo repeats (same congestion), no growth, no new cut.
        ece(&mut s, 101, 2, &mut out);
        assert!(out.is_empty());
        ece(&mut s, 102, 3, &mut out);
        assert_eq!(s.st.cwnd_bytes, 1500);
        assert_eq!(seqs(&out), vec![3], "one segment at a time (int window 1)");
        // An echo for the segment sent after the reduction: halved again, down to one segment.
        out.clear();
        ece(&mut s, 200, 4, &mut out);
        assert_eq!((s.st.cwnd_bytes, s.st.ssthresh_bytes), (MSS, 2 * MSS));
        assert_eq!(seqs(&out), vec![4]);
        out.clear();
        ece(&mut s, 300, 5, &mut out);
        assert_eq!(s.st.cwnd_bytes, MSS, "at one segment the window stays one segment");
        // Its last cut was by an echo: a timeout now is counted as one after marks.
        let d = s.timer_deadline().expect("a segment is outstanding");
        s.on_timer(d, &mut out);
        assert_eq!((s.timeouts, s.first_timeouts, s.ecn_timeouts), (1, 0, 1));
        // The retransmission of seqno 0 after a timeout is not ECT either.
        let cfg = TcpConfig { handshake: false, ecn: true, ..crate::Profile::Ns2.config() };
        let mut s = TcpSender::new(
            FlowId(0),
            NodeId(0),
            NodeId(1),
            None,
            &cfg,
            CcConfig::NewReno(NewRenoConfig {}).build(&Default::default()),
            true,
        );
        s.start(Nanos::ZERO, &mut out);
        out.clear();
        let d = s.timer_deadline().unwrap();
        s.on_timer(d, &mut out);
        assert_eq!(seqs(&out), vec![0]);
        assert!(!out[0].has(flags::ECT));
        // With a handshake seqno 0 is the SYN: every data packet is ECT.
        let cfg = TcpConfig { ecn: true, ..crate::Profile::Ns2.config() };
        let mut s = TcpSender::new(
            FlowId(0),
            NodeId(0),
            NodeId(1),
            None,
            &cfg,
            CcConfig::NewReno(NewRenoConfig {}).build(&Default::default()),
            true,
        );
        s.start(Nanos::ZERO, &mut out);
        out.clear();
        let p = Packet { kind: PacketKind::SynAck, ..Default::default() };
        s.on_packet(Nanos::from_micros(10), &p, &mut out);
        assert!(out.iter().all(|p| p.has(flags::ECT)) && !out.is_empty());
    }

    /// Timeouts by cause: of the SYN; after a window cut by an ECN echo (the RFC 3168 path
    /// as DCTCP and the linux profile take it); after a loss recovery that followed such a cut.
    #[test]
    fn timeouts_are_counted_by_cause() {
        let cfg = TcpConfig {
            mss_bytes: MSS as u32,
            handshake: true,
            ecn: true,
            tail_loss_probe: false,
            min_rto: Nanos::from_millis(10),
            ..Default::default()
        };
        let new = || {
            TcpSender::new(
                FlowId(0),
                NodeId(0),
                NodeId(1),
                None,
                &cfg,
                CcConfig::NewReno(NewRenoConfig {}).build(&Default::default()),
                true,
            )
        };
        let echo = |s: &mut TcpSender, t: Nanos, seg: u64, out: &mut Vec<Packet>| {
            let mut p = Packet { kind: PacketKind::Ack, ack: seg * MSS, ts_echo_ns: 0, ..Default::default() };
            p.flags |= flags::ECE;
            p.ce_bytes_echo = MSS as u32;
            s.on_packet(t, &p, out);
        };
        let mut out = Vec::new();
        let mut s = new();
        s.start(Nanos::ZERO, &mut out);
        let d = s.timer_deadline().unwrap();
        s.on_timer(d, &mut out);
        assert_eq!((s.timeouts, s.first_timeouts, s.ecn_timeouts), (1, 1, 0), "the SYN's timeout");
        out.clear();
        let t = d + Nanos::from_millis(1);
        s.on_packet(t, &Packet { kind: PacketKind::SynAck, ..Default::default() }, &mut out);
        assert!(seqs(&out).len() > 4, "{:?}", seqs(&out));
        // Segment 0 acknowledged with an echo: the window is cut by the mark.
        echo(&mut s, t + Nanos::from_micros(100), 1, &mut out);
        let d = s.timer_deadline().unwrap();
        s.on_timer(d, &mut out);
        assert_eq!((s.timeouts, s.first_timeouts, s.ecn_timeouts), (2, 1, 1), "after a cut by an echo");
        // A cut by an echo, then three duplicate ACKs: the loss recovery is the last cut.
        let mut s = new();
        out.clear();
        s.start(Nanos::ZERO, &mut out);
        s.on_packet(Nanos::from_micros(50), &Packet { kind: PacketKind::SynAck, ..Default::default() }, &mut out);
        echo(&mut s, Nanos::from_micros(100), 1, &mut out);
        for k in 0..3 {
            ack(&mut s, 110 + k, 1, &[(2, 3 + k)], &mut out);
        }
        assert!(s.in_recovery(), "{}", s.describe());
        let d = s.timer_deadline().unwrap();
        s.on_timer(d, &mut out);
        assert_eq!((s.timeouts, s.first_timeouts, s.ecn_timeouts), (1, 0, 0), "a data timeout after a loss recovery");
    }

    #[test]
    fn timeout_goes_back_to_one_segment() {
        let mut s = sender(10);
        let mut out = Vec::new();
        s.start(Nanos::ZERO, &mut out);
        out.clear();
        let d = s.timer_deadline().unwrap();
        s.on_timer(d, &mut out);
        assert_eq!(seqs(&out), vec![0]);
        assert_eq!((s.timeouts, s.first_timeouts), (1, 1), "nothing acknowledged yet: the first window's timeout");
        assert_eq!(s.st.cwnd_bytes, MSS);
        // backed off: twice the timeout
        assert_eq!(s.timer_deadline().unwrap() - d, Nanos::from_millis(2000).min(Nanos((d.0) * 2)));
    }
}
