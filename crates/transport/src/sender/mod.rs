//! The TCP sender: NewReno with SACK-based loss recovery (RFC 5681, RFC 6582, RFC 6675),
//! RTO with exponential backoff (RFC 6298), ECN reaction (RFC 3168), optional handshake.
//!
//! Sequence numbers are byte offsets from zero (the handshake consumes none). The sender is
//! a pure state machine: calls take `now` and append packets to `out`.
//!
//! The parts, each a module with its own state and unit tests, composed here:
//! - `recovery`: the SACK scoreboard, duplicate ACKs, the retransmissions of a recovery, and
//!   RFC 6675's pipe, next-hole and lost-retransmission rules;
//! - `prr`: the ECN reduction round (CWR) with proportional rate reduction;
//! - `probe`: the tail loss probe's timeout and segment;
//! - `pacing`: rate-based flows' departures and window;
//! - `router`: router-assisted flows' headers, echoes and FIN;
//! - `ns2`: ns-2.35's behaviour, for the `ns2` profile's modes (below).
//!
//! `TcpSender::on_ack` runs the steps of Linux's `tcp_ack` over them, in its order; `on_timer`
//! the probe, the pacing timer or the retransmission timeout.
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
//! ns-2.35 modes (the ns2 profile), behind one seam: `ns2`. Its settings (`sack_recovery`,
//! `newreno_recovery`, `window_model`, `rto_model`, `ecn_reaction` = "ns2", `singledup`,
//! `whole_packets`) replace rules above by ns-2.35's `Agent/TCP`, `Agent/TCP/Newreno` and
//! `Agent/TCP/Sack1`: Sack1's recovery, NewReno's window deflation, `singledup_`, ns-2's
//! window in segments, its timed segment and backoff, and its ECN reaction. A flow's modes are
//! fixed when it starts (`ns2::Modes`); their state is the `ns2` field. The steps here ask the
//! seam at named points (`ns2_*` and `sack1_*`, and `Ns2`'s methods), each listed with ns-2's
//! source in `ns2`'s documentation; with every mode off (linux) each leaves the step as is.
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
use crate::config::TcpConfig;
use crate::rtt::RttEstimator;

mod ns2;
mod pacing;
mod probe;
mod prr;
mod recovery;
mod router;

use fctlab_engine::{BitsPerSec, Nanos};
use fctlab_net::packet::flags;
use fctlab_net::{FlowId, NodeId, Packet, PacketKind};
use ns2::Ns2;
use pacing::Pacer;
use probe::Probe;
use prr::Cwr;
use recovery::Recovery;
use router::RouterFeedback;

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
    /// Loss recovery: the scoreboard, duplicate ACKs, retransmissions, the recovery point.
    rec: Recovery,
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
    /// The algorithm gives each packet a band and rank (`Protocol::TAGS_PACKETS`).
    tags: bool,
    /// Probe mode after this many consecutive timeouts (see
    /// `CongestionControl::probe_after_timeouts`).
    probe_after: Option<u32>,
    /// The receiver grants what the flow sends (`Protocol::RECEIVER_DRIVEN`), up to `granted`
    /// (`u64::MAX` for other flows).
    receiver_driven: bool,
    granted: u64,
    /// Its header's owner and the FIN.
    feedback: RouterFeedback,
    /// Paced flows: when the last segment left and its wire bytes; the next may leave once
    /// those bytes have been sent at the current rate.
    pacer: Pacer,
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
    /// modes, and classifies timeouts in all (so it is the sender's, not `ns2`'s).
    last_action: CwndAction,
    /// ns-2.35's modes this flow runs and their state (the `ns2` profile; see `ns2`).
    ns2: Ns2,
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
        let tags = cc.tags_packets();
        let probe_after = cc.probe_after_timeouts();
        let receiver_driven = cc.receiver_driven();
        let granted = cc.send_limit().unwrap_or(u64::MAX);
        let paced = cc.pacing_rate().is_some();
        let cfg = &Self::own_config(cfg, &cc);
        let ns2 = Ns2::new(cfg, &cc);
        TcpSender {
            flow,
            src,
            dst,
            cfg: *cfg,
            size: ns2::size_in_packets(size, cfg).unwrap_or(LONG_LIVED),
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
            rec: Recovery::new(),
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
            tags,
            probe_after,
            receiver_driven,
            granted,
            feedback: RouterFeedback::default(),
            pacer: Pacer::default(),
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
            ns2,
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
        self.rec.active
    }

    /// A one-line description of the sender's state, for diagnostics.
    pub fn describe(&self) -> String {
        format!(
            "rate={:?} paced_at={:?} round={:?} header_only={} probes={} cwr={:?} state={:?} una={} nxt={} max={} cwnd={} ssthresh={} pipe={} recovery={} recover={} retx={:?} lost_hint={} sacked={:?} dupacks={} rto_at={:?} backoff={} rto={:?}",
            self.cc.pacing_rate(), self.pacer.at, self.cc.round(), self.header_only, self.probes, self.cwr.map(|c| c.high_seq), self.state, self.snd_una, self.snd_nxt, self.snd_max, self.st.cwnd_bytes, self.st.ssthresh_bytes, self.pipe(),
            self.rec.active, self.rec.recover, self.rec.retx.ranges(), self.rec.lost_hint, self.rec.sacked.ranges(), self.rec.dupacks, self.rto_deadline, self.backoff, self.rtt.rto()
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
        let mut own = TcpConfig {
            sack_recovery: linux.sack_recovery,
            singledup: linux.singledup,
            ecn_reaction: linux.ecn_reaction,
            window_model: linux.window_model,
            rto_model: linux.rto_model,
            newreno_recovery: linux.newreno_recovery,
            ..*cfg
        };
        cc.tune(&mut own);
        own
    }

    /// The settings this flow runs with (the scenario's, with ns-2's modes for tcp and atcp only).
    pub fn config(&self) -> &TcpConfig {
        &self.cfg
    }

    /// Opens the connection (SYN) or, without handshake, starts sending.
    pub fn start(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        if self.cfg.handshake || self.router {
            self.send_syn(now, out);
            self.ns2.syn_sent(now);
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
    /// if it adds one, and its band and rank if it tags packets. (Packets are built in place
    /// in `out`: no copy on the hot path.)
    #[inline(always)]
    fn pushed(&mut self, now: Nanos, out: &mut [Packet]) {
        self.last_sent = now;
        if self.router || self.tags {
            let Some(p) = out.last_mut() else { return };
            let ctx = SendContext {
                now,
                kind: p.kind,
                size: (self.size != LONG_LIVED).then_some(self.size),
                bytes_sent: self.snd_max.max(p.seq + p.payload_bytes as u64),
                seq: p.seq,
                snd_una: self.snd_una,
                sacked_bytes: self.rec.sacked.total(),
                srtt: self.rtt.srtt(),
                mss_bytes: self.st.mss_bytes,
            };
            if self.router {
                self.feedback.stamp(&mut self.cc, &ctx, p);
            }
            if self.tags {
                let t = self.cc.priority(&ctx);
                (p.prio, p.rank) = (t.band, t.rank);
                p.flags |= flags::TAGGED;
            }
        }
    }

    /// Router-assisted flows: the header-only FIN once every byte has been sent.
    fn send_fin_if_done(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        if self.router && !self.feedback.fin_sent && self.snd_max >= self.size {
            self.feedback.fin_sent = true;
            let p = Packet { kind: PacketKind::Fin, ..self.header_only_packet(now) };
            self.push(now, p, out);
        }
    }

    /// Marks this flow's router headers as belonging to the run's router-assisted protocol
    /// `owner` (the simulation numbers the protocols its flows use; 0 by default).
    pub fn set_router_owner(&mut self, owner: u8) {
        self.feedback.owner = owner;
    }

    /// Handles a packet from the receiver (ACK or SYN-ACK).
    pub fn on_packet(&mut self, now: Nanos, p: &Packet, out: &mut Vec<Packet>) {
        match (self.state, p.kind) {
            (State::SynSent, PacketKind::SynAck) => {
                if self.ns2.mode.rto {
                    self.ns2_rtt_on_syn_ack(now);
                } else {
                    self.rtt.sample(Nanos(now.0.saturating_sub(p.ts_echo_ns)));
                    self.backoff = 0;
                }
                self.state = State::Established;
                self.rto_deadline = None;
                router::on_echo(&mut self.cc, &mut self.st, p);
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
        let delivered_before = self.snd_una + self.rec.sacked.total();
        let sent_before = self.packets_sent;
        let sack1 = self.ns2.mode.sack1;
        if sack1 && self.rec.active {
            self.ns2.sack1.packet_left(); // Sack1's pipe_, one less per ACK in recovery
        }
        let sacked_total_before = self.rec.sacked.total();
        self.sack_tag(p, ack);
        let ece = self.ect && p.has(flags::ECE);
        router::on_echo(&mut self.cc, &mut self.st, p);
        if self.receiver_driven {
            self.follow_receiver(now, out);
        }
        let mut counted_dupack = false;
        if ack > self.snd_una {
            if self.on_new_ack(now, p, ack, ece, out) {
                return; // every byte acknowledged: the flow is complete
            }
        } else if ack == self.snd_una && self.snd_una < self.snd_max {
            counted_dupack = self.count_dupack(sacked_total_before);
        }
        if self.paced && ack == self.snd_una && self.snd_una < self.snd_max && p.ts_echo_ns > self.last_data_sent.0 {
            self.probe_found_losses();
        }
        self.react_to_ecn(ece, ack);
        let delivered = (self.snd_una + self.rec.sacked.total()).saturating_sub(delivered_before);
        if !self.rec.active && self.cwr.is_some() {
            self.reduce_cwnd(delivered, ack_advanced);
        }
        if self.rec.active && !sack1 {
            // (ns-2's Sack1 has no lost-retransmission detection.)
            self.detect_lost_retransmissions();
        }
        if !self.rec.active && self.snd_una < self.snd_max {
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

    /// Receiver-driven flows: the latest grant, and the range the receiver asked for again.
    #[cold]
    fn follow_receiver(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        self.granted = self.cc.send_limit().unwrap_or(u64::MAX);
        if let Some((start, end)) = self.cc.take_resend() {
            let (mut seq, end) = (start, end.min(self.snd_max));
            while seq < end {
                let len = (end - seq).min(self.st.mss_bytes);
                self.retransmit(now, seq, len, out);
                seq += len;
            }
        }
    }

    /// The ACK's SACK blocks (above the cumulative ACK `ack`) into the scoreboard
    /// (tcp_sacktag_write_queue).
    #[inline]
    fn sack_tag(&mut self, p: &Packet, ack: u64) {
        if self.cfg.sack {
            self.rec.tag(&p.sack[..p.sack_len as usize], ack, self.snd_max);
        }
    }

    /// A cumulative ACK of new data up to `ack`: the RTT sample, the acknowledged data off
    /// the scoreboard, duplicate-ACK deflation, the end of a recovery or CWR round, and the
    /// window's growth (tcp_clean_rtx_queue, tcp_ack_update_rtt, tcp_cong_control). True when
    /// it acknowledged the flow's last byte.
    #[inline]
    fn on_new_ack(&mut self, now: Nanos, p: &Packet, ack: u64, ece: bool, out: &mut Vec<Packet>) -> bool {
        let mss = self.st.mss_bytes;
        let acked = ack - self.snd_una;
        // Timestamp echo gives a sample even for retransmitted data (RFC 7323).
        let r = Nanos(now.0.saturating_sub(p.ts_echo_ns));
        let partial = self.rec.active && ack < self.rec.recover;
        if self.ns2.mode.rto {
            self.ns2_rtt_on_new_ack(now, ack, partial);
        } else {
            self.rtt.sample(r);
            self.backoff = 0;
        }
        self.snd_una = ack;
        if self.snd_nxt < ack {
            self.snd_nxt = ack;
        }
        self.rec.acked_to(ack);
        let newreno_partial = partial && !self.cfg.sack;
        if newreno_partial && self.ns2.mode.newreno {
            self.ns2_partial_window_deflation(acked);
        } else if newreno_partial {
            // The segments that sent duplicate ACKs and are now acknowledged have left the
            // window's accounting; the retransmitted one did not send any (RFC 6582's
            // deflation by the data acknowledged, plus one segment).
            self.rec.dupacks = self.rec.dupacks.saturating_sub(((acked / mss) as u32).saturating_sub(1));
        } else {
            self.rec.dupacks = 0;
        }
        let restart_timer = self.ns2.restarts_timer(newreno_partial);
        let open_on_exit = if self.rec.active {
            self.recovery_on_new_ack(now, ack, out)
        } else {
            if self.cwr.is_some_and(|c| c.is_over(self.snd_una)) {
                self.set_cwnd_bytes(self.st.ssthresh_bytes.max(mss));
                self.cwr = None;
                self.reduction_ended();
            }
            if self.ns2.mode.sack1 {
                self.sack1_clear();
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
    fn recovery_on_new_ack(&mut self, now: Nanos, ack: u64, out: &mut Vec<Packet>) -> bool {
        let mss = self.st.mss_bytes;
        if ack >= self.rec.recover {
            self.rec.active = false;
            self.rec.forget_retransmissions();
            let open_on_exit = if self.ns2.mode.sack1 || self.ns2.mode.newreno {
                self.ns2_recovery_over()
            } else {
                self.set_cwnd_bytes(self.st.ssthresh_bytes.max(mss));
                false
            };
            self.reduction_ended();
            return open_on_exit;
        }
        if self.ns2.mode.sack1 {
            self.ns2.sack1.packet_left(); // Sack1's partial ACK: pipe_ one less, nothing sent
        } else {
            // Partial ACK: the next unacknowledged segment is lost too. Without SACK it
            // goes out at once, whatever the window (RFC 6582, section 3.2 step 3).
            self.rec.lost_hint = self.rec.lost_hint.max(ack + mss);
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
        // With ns-2's ECN reaction, an ACK with (or still counted as with) ECN-Echo.
        let held = self.ns2.holds_window(ece, ack);
        // In CWR the algorithm still sees the ACK (DCTCP's alpha), but the window is
        // PRR's: `reduce_cwnd` sets it on every ACK that delivers data.
        let sample = AckSample {
            now,
            acked_bytes: if held { 0 } else { acked },
            ce_bytes: if ece { (p.ce_bytes_echo as u64).min(acked).max(1) } else { 0 },
            ece,
            rtt: Some(r),
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt,
            bytes_sent: self.snd_max,
        };
        if !held {
            if self.ns2.mode.window {
                self.ns2_open_window(&sample);
            } else {
                self.cc.on_ack(&mut self.st, &sample);
            }
        }
        self.left_slow_start |= self.st.cwnd_bytes >= self.st.ssthresh_bytes;
        if !self.ns2.mode.window {
            // The window never grows past what the receiver accepts (ns-2's window_
            // caps cwnd_ in effect; Linux grows cwnd only while it limits the sender).
            self.st.cwnd_bytes = self.st.cwnd_bytes.min(self.cfg.rwnd_bytes.max(mss));
        }
    }

    /// A duplicate ACK with data outstanding: counted, as the recovery in use counts it.
    /// Returns whether it was counted.
    #[inline]
    fn count_dupack(&mut self, sacked_total_before: u64) -> bool {
        if self.ns2.mode.sack1 {
            return self.sack1_count_dupack(sacked_total_before);
        }
        self.rec.dupacks += 1;
        true
    }

    /// Outside recovery with data outstanding: enter fast recovery when the duplicate ACKs,
    /// the SACKed bytes or RACK say a segment is lost (tcp_fastretrans_alert), as the
    /// recovery in use decides it.
    #[inline]
    fn fastretrans_alert(&mut self, now: Nanos, counted_dupack: bool, out: &mut Vec<Packet>) {
        let mss = self.st.mss_bytes;
        if self.ns2.mode.sack1 || self.ns2.mode.newreno {
            self.ns2_fastretrans_alert(now, counted_dupack, out);
        } else if self.snd_una >= self.rec.recover {
            let dupthresh = self.cfg.dupthresh as u64;
            let sack_says = self.cfg.sack && self.rec.sacked.total() >= dupthresh * mss;
            // After a probe, a SACK means the holes below it are older than the probe
            // timeout: RACK marks them lost.
            let rack_says = self.tlp_high_seq.is_some() && self.rec.sacked.total() > 0;
            if self.rec.dupacks as u64 >= dupthresh || sack_says || rack_says {
                self.enter_recovery();
                // Fast retransmit: the first hole goes out at once, whatever the pipe.
                if let Some((seq, len)) = self.next_hole() {
                    self.retransmit(now, seq, len, out);
                }
                self.ns2_reset_rtx_timer(now);
            }
        } else if counted_dupack && self.rec.dupacks == self.cfg.dupthresh {
            self.ns2_loss_in_ecn_window(now, out);
        }
    }

    /// What an ACK lets the sender send (tcp_data_snd_check), unless ns-2's modes decide it.
    #[inline]
    fn transmit_after_ack(&mut self, now: Nanos, counted_dupack: bool, out: &mut Vec<Packet>) {
        if !self.ns2_sends_after_ack(now, counted_dupack, out) {
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
        if !self.rec.active {
            self.enter_recovery();
        }
        self.rec.all_lost(self.snd_max);
    }

    /// Sets the window in bytes (ns-2's `cwnd_` follows with `window_model = "ns2"`).
    fn set_cwnd_bytes(&mut self, b: u64) {
        self.st.cwnd_bytes = b;
        self.ns2.follow_window(b, self.st.mss_bytes);
    }

    /// The reaction to an ECN echo on the ACK of `ack`.
    fn react_to_ecn(&mut self, ece: bool, ack: u64) {
        if !ece {
            return;
        }
        let mss = self.st.mss_bytes;
        if self.ns2.mode.ecn {
            self.ns2_ecn_echo(ack);
            return;
        }
        // Once per window (RFC 3168): an echo counts only on an ACK for data sent after the
        // last reduction, i.e. beyond `ecn_recover`. The ACK that reaches `ecn_recover`
        // exactly still acknowledges data sent before it, whose marks were already answered.
        if !self.rec.active && self.snd_una > self.ecn_recover {
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
                self.cwr = Some(Cwr::new(self.snd_nxt, prior_cwnd));
            } else {
                self.reduction_ended(); // the window fell at once
            }
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

    /// One ACK's step of proportional rate reduction in CWR (see `Cwr::step`).
    fn reduce_cwnd(&mut self, delivered: u64, ack_advanced: bool) {
        let pipe = self.pipe();
        let Some(c) = self.cwr.as_mut() else { return };
        if let Some(cwnd) = c.step(delivered, ack_advanced, pipe, self.st.ssthresh_bytes, self.st.mss_bytes) {
            self.st.cwnd_bytes = cwnd;
        }
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
            && !self.rec.active
            && self.snd_una >= self.rec.recover // not after a timeout until its data is acknowledged
            && self.tlp_high_seq.is_none()
            && self.snd_una < self.snd_max;
        let Some(srtt) = self.rtt.srtt() else { return };
        if !eligible {
            return;
        }
        let one_segment = self.snd_max - self.snd_una <= self.st.mss_bytes;
        let rto_left = if advancing_rto {
            Some(self.rtt.backed_off(self.backoff))
        } else {
            self.rto_deadline.filter(|&d| d > now).map(|d| d - now)
        };
        self.probe_deadline = Some(now + probe::timeout(srtt, one_segment, self.cfg.min_rto, rto_left));
    }

    /// Sends the tail loss probe: a new segment if one may go, else the last one again.
    fn send_probe(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        self.probe_deadline = None;
        if self.state != State::Established || self.snd_una >= self.snd_max || self.tlp_high_seq.is_some() {
            return;
        }
        let (una, nxt, max) = (self.snd_una, self.snd_nxt, self.snd_max);
        let head = match probe::segment(una, nxt, max, self.size, self.cfg.rwnd_bytes, self.st.mss_bytes) {
            Probe::New { seq, len } => {
                self.emit(now, seq, len, out);
                self.snd_nxt += len;
                self.snd_max = self.snd_nxt;
                false
            }
            Probe::Last { seq, len } => {
                self.emit(now, seq, len, out);
                seq == self.snd_una
            }
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

    /// A retransmission SACKed `dupthresh` segments beyond is lost (see `Recovery`).
    fn detect_lost_retransmissions(&mut self) {
        self.rec.detect_lost_retransmissions(self.cfg.dupthresh as u64 * self.st.mss_bytes);
    }

    fn enter_recovery(&mut self) {
        if self.cwr.take().is_some() {
            // Already reducing for an ECN echo: the loss continues that reduction.
            self.set_cwnd_bytes(self.st.ssthresh_bytes.max(self.st.mss_bytes));
        } else if self.ns2.mode.window {
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
        self.rec.start(self.snd_una, self.snd_max, self.st.mss_bytes);
        self.ecn_recover = self.snd_max;
    }

    /// RFC 6675's pipe over the data outstanding (see `Recovery::pipe`).
    #[inline]
    fn pipe(&self) -> u64 {
        let sack1 = self.ns2.mode.sack1;
        self.rec.pipe(self.snd_una, self.snd_nxt, self.snd_max, self.cfg.sack, sack1, self.st.mss_bytes)
    }

    /// The next lost hole to retransmit: (seq, len), neither SACKed nor retransmitted yet.
    #[inline]
    fn next_hole(&self) -> Option<(u64, u64)> {
        self.rec.next_hole(self.snd_una, self.snd_max, self.st.mss_bytes)
    }

    fn send_what_fits(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        if self.paced {
            self.send_paced(now, out);
            return;
        }
        if self.state != State::Established {
            return;
        }
        let wnd = if self.ns2.mode.window {
            self.ns2.window_bytes(self.st.mss_bytes)
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
        let wnd = pacing::window(rate, self.rtt.srtt(), self.st.mss_bytes);
        // (A rate of 0: nothing granted yet, only the round's header-only packet below.)
        if rate.0 > 0 {
            loop {
                let next = self.pacer.next_departure(rate);
                if now < next {
                    self.probe_deadline = Some(next);
                    break;
                }
                let before = out.len();
                if !self.send_one(now, wnd, out) {
                    break;
                }
                // The next segment waits for its time above (in this call when it has come).
                self.pacer.sent(now, out[before..].iter().map(|p| p.wire_bytes as u64).sum());
            }
        }
        self.send_fin_if_done(now, out);
        if !self.feedback.fin_sent {
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
            if self.rec.active {
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
            if pipe + len > wnd || self.snd_nxt >= self.granted {
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
        self.rec.retransmitted(seq, len, self.snd_nxt, self.cfg.sack);
    }

    fn emit(&mut self, now: Nanos, seq: u64, len: u64, out: &mut Vec<Packet>) {
        let retx = seq < self.snd_max;
        if retx {
            self.retransmits += 1;
        } else {
            self.ns2.on_new_data_sent(seq + len, now);
        }
        if let Some(c) = self.cwr.as_mut() {
            c.sent(len);
        }
        self.last_data_sent = now;
        self.packets_sent += 1;
        let mut f = if self.ect && !(seq == 0 && self.ns2_first_not_ect()) { flags::ECT } else { 0 };
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

    /// One more doubling of the timeout (ns-2's `rtt_backoff` with `rto_model = "ns2"`).
    fn back_off(&mut self) {
        if self.ns2.mode.rto {
            self.ns2_back_off();
        } else {
            self.backoff += 1;
        }
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
                self.ns2.untime();
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
                if self.receiver_driven {
                    // The receiver finds losses and asks for them: the sender's timeout only
                    // makes sure it knows the message (one byte, answered by its latest grant).
                    self.back_off();
                    self.emit(now, self.snd_una, 1, out);
                    self.rto_deadline = Some(now + self.rtt.backed_off(self.backoff));
                    return;
                }
                self.left_slow_start = true;
                if !self.ns2_timeout_window() {
                    let flight = (self.snd_max - self.snd_una).min(self.st.cwnd_bytes);
                    self.cc.on_congestion(&mut self.st, CongestionEvent::Timeout { flight_bytes: flight });
                }
                self.last_action = CwndAction::Timeout;
                self.rec.timed_out(self.snd_max);
                self.ecn_recover = self.snd_max;
                self.cwr = None;
                self.quiet_until = None;
                self.episode_halved = false;
                self.tlp_high_seq = None;
                self.snd_nxt = self.snd_una;
                self.back_off();
                self.ns2.timed_out(); // Sack1 ignores duplicate ACKs; the timed segment is forgotten
                if self.probe_after.is_some_and(|n| self.backoff > n) {
                    // Probe mode: one byte of the first unacknowledged segment, until an ACK
                    // of new data answers (the window is one segment then: slow start).
                    self.retransmit(now, self.snd_una, 1, out);
                } else {
                    self.send_what_fits(now, out);
                }
                self.rto_deadline = Some(now + self.rtt.backed_off(self.backoff));
            }
        }
    }
}

#[cfg(test)]
mod tests;
