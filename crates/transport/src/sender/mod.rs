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
//! - `grants`: receiver-driven flows (the `homa` transport) following their receiver's grants;
//! - `ns2`: ns-2.35's behaviour, for the `ns2` profile's modes (below).
//!
//! `TcpSender::on_ack` runs the steps of Linux's `tcp_ack` over them, in its order: the ACK,
//! the new ACK and the window's growth here, and the steps in `loss` (duplicate ACKs,
//! recovery entered and left), `ecn` (ECN echoes, CWR, one halving per episode) and `send`
//! (the send path and the packets' headers). The `Transport` trait (at the end) is what the
//! simulation calls; `on_timer` (in `timers`) runs the probe, the
//! pacing timer or the retransmission timeout.
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

use crate::cc::{AckSample, AnyCc, CcState};
use crate::config::TcpConfig;
use crate::rtt::RttEstimator;
use crate::transport::Transport;

mod ecn;
mod grants;
mod loss;
mod ns2;
mod pacing;
mod probe;
mod prr;
mod rack;
mod recovery;
mod router;
mod send;
mod timers;

use fctlab_engine::{BitsPerSec, Nanos};
use fctlab_net::packet::flags;
use fctlab_net::{FlowId, NodeId, Packet, PacketKind};
use ns2::Ns2;
use pacing::Pacer;
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
    /// RACK's loss detection by time (`[transport] rack`), if on.
    rack: Option<Box<rack::Rack>>,
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
    /// The receiver grants what the flow sends (a receiver-driven transport), up to `granted`
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
            rec: Recovery { rack: cfg.rack, ..Recovery::new() },
            rack: cfg.rack.then(Box::default),
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
        if cc.ns2_agent() {
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
        if self.paced
            && ack == self.snd_una
            && self.snd_una < self.snd_max
            && p.ts_echo_ns > self.last_data_sent.as_nanos()
        {
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
        if self.rack.is_some() && self.snd_una < self.snd_max {
            // (A first SACK block below the cumulative ACK is a DSACK, RFC 2883.)
            let dsack = p.sack_len > 0 && p.sack[0].end <= p.ack;
            self.rack_detect(now, Some((Nanos::from_nanos(p.ts_echo_ns), dsack)), out);
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
        let r = now.saturating_sub(Nanos::from_nanos(p.ts_echo_ns));
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

    /// What an ACK lets the sender send (tcp_data_snd_check), unless ns-2's modes decide it.
    #[inline]
    fn transmit_after_ack(&mut self, now: Nanos, counted_dupack: bool, out: &mut Vec<Packet>) {
        if !self.ns2_sends_after_ack(now, counted_dupack, out) {
            self.send_what_fits(now, out);
        }
    }

    /// Sets the window in bytes (ns-2's `cwnd_` follows with `window_model = "ns2"`).
    fn set_cwnd_bytes(&mut self, b: u64) {
        self.st.cwnd_bytes = b;
        self.ns2.follow_window(b, self.st.mss_bytes);
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
}

/// The TCP transport, as the simulation drives it.
impl Transport for TcpSender {
    /// Opens the connection (SYN) or, without handshake, starts sending.
    fn start(&mut self, now: Nanos, out: &mut Vec<Packet>) {
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

    /// Handles a packet from the receiver (ACK or SYN-ACK).
    #[inline]
    fn on_packet(&mut self, now: Nanos, p: &Packet, out: &mut Vec<Packet>) {
        match (self.state, p.kind) {
            (State::SynSent, PacketKind::SynAck) => {
                if self.ns2.mode.rto {
                    self.ns2_rtt_on_syn_ack(now);
                } else {
                    self.rtt.sample(now.saturating_sub(Nanos::from_nanos(p.ts_echo_ns)));
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

    /// Every byte is acknowledged.
    #[inline]
    fn is_complete(&self) -> bool {
        self.state == State::Done
    }
    /// Bytes acknowledged so far.
    fn bytes_acked(&self) -> u64 {
        self.snd_una
    }
    /// Bytes sent at least once so far (the highest sequence number sent).
    fn bytes_sent(&self) -> u64 {
        self.snd_max
    }
    /// When the sender's timer expires (retransmission timeout or tail loss probe), if it runs.
    #[inline]
    fn timer_deadline(&self) -> Option<Nanos> {
        let d = match (self.rto_deadline, self.probe_deadline) {
            (Some(r), Some(p)) => Some(r.min(p)),
            (r, p) => r.or(p),
        };
        match self.rack.as_deref() {
            None => d,
            Some(r) => match (d, r.deadline) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        }
    }
    /// The sender's timer fired at `now` (the caller checked the deadline): a tail loss probe
    /// if one is due first, the pacing timer, else the retransmission timeout.
    fn on_timer(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        self.timer_fired(now, out)
    }
}

#[cfg(test)]
mod tests;
