//! ns-2.35's TCP behind one seam: the `ns2` profile's modes, as ns-2.35's `Agent/TCP`,
//! `Agent/TCP/Newreno` and `Agent/TCP/Sack1` behave. Each is a setting of [`TcpConfig`]:
//! `sack_recovery`, `newreno_recovery`, `window_model`, `rto_model` and `ecn_reaction` set to
//! `"ns2"`, `singledup` and `whole_packets`. Which of them a flow runs is fixed when it starts
//! ([`Modes`]); their state is [`Ns2`], the sender's `ns2` field.
//!
//! The sender runs the steps of Linux's `tcp_ack` (see `super`); at the points below it asks
//! this seam, which acts for the modes the flow runs and otherwise leaves the step to the
//! sender's own (Linux) rule:
//!
//! - a new flow: [`size_in_packets`] (`whole_packets`), [`Ns2::new`];
//! - a packet sent: [`Ns2::on_new_data_sent`] starts timing a segment (`rto_model`),
//!   `ns2_first_not_ect` keeps seqno 0 not ECN-capable (`ecn_reaction`);
//! - the RTT sample: `ns2_rtt_on_syn_ack`, `ns2_rtt_on_new_ack` and [`Ns2::restarts_timer`]
//!   (`rto_model`);
//! - duplicate and partial ACKs: `sack1_count_dupack`, [`Sack1::packet_left`] (Sack1's pipe),
//!   `ns2_partial_window_deflation` (NewReno);
//! - recovery's end and a new ACK outside recovery: `ns2_recovery_over`, `sack1_clear`;
//! - the window's growth: [`Ns2::holds_window`] (`ecn_reaction`), `ns2_open_window`
//!   (`window_model`), [`Ns2::follow_window`] when the sender sets it in bytes;
//! - an ECN echo: `ns2_ecn_echo` (`ecn_reaction`);
//! - loss detection: `ns2_fastretrans_alert` (Sack1, NewReno), `ns2_loss_in_ecn_window`
//!   (`ecn_reaction`), `ns2_reset_rtx_timer` (`rto_model`) at a fast retransmit;
//! - what to send: `ns2_sends_after_ack` (`singledup`, Sack1's `send_much`) and
//!   [`Ns2::window_bytes`] (`window_model`);
//! - the retransmission timeout: `ns2_timeout_window` (`ecn_reaction`, `window_model`),
//!   [`Ns2::timed_out`] (Sack1, `rto_model`), `ns2_back_off` (`rto_model`).
//!
//! The parts: `window` (ns-2's `cwnd_` arithmetic and NewReno's deflation) and `sack1`
//! (`Agent/TCP/Sack1`'s recovery).

mod sack1;
mod window;

use super::{CwndAction, State, TcpSender};
use crate::cc::{AckSample, AnyCc};
use crate::config::{EcnReaction, NewRenoRecovery, RtoModel, SackRecovery, TcpConfig, WindowModel};
use fctlab_engine::Nanos;
use fctlab_net::Packet;
use sack1::Sack1;

/// Which of ns-2's modes a flow runs (fixed when it starts).
#[derive(Copy, Clone, Debug, Default)]
pub(super) struct Modes {
    /// `sack_recovery = "ns2"` with SACK on: `Agent/TCP/Sack1`'s recovery.
    pub sack1: bool,
    /// `newreno_recovery = "ns2"`, without SACK: `Agent/TCP/Newreno`'s recovery.
    pub newreno: bool,
    /// `window_model = "ns2"`, for `tcp` and `atcp`: ns-2's `cwnd_`, a double in segments.
    pub window: bool,
    /// `rto_model = "ns2"`: one timed segment at a time, ns-2's backoff.
    pub rto: bool,
    /// `ecn_reaction = "ns2"`, for `tcp` and `atcp` (whose algorithm keeps Reno's decrease, as
    /// ns-2's `Agent/TCP` with `increase_num_`); DCTCP and the others keep their own reaction.
    pub ecn: bool,
    /// `singledup`: one new segment on each of the first duplicate ACKs.
    pub singledup: bool,
}

/// ns-2's state of a flow, for the modes it runs.
#[derive(Debug)]
pub(super) struct Ns2 {
    pub mode: Modes,
    /// `sack_recovery = "ns2"`: Sack1's pipe, retransmission pointer and timeout state.
    pub sack1: Sack1,
    /// `ecn_reaction = "ns2"`: ACKs up to this byte still carry ECN-Echo (ns-2's receiver
    /// repeats it until the first packet sent after the reduction, which carries CWR).
    pub ece_until: u64,
    /// `window_model = "ns2"`: ns-2's `cwnd_`, a double in segments; `st.cwnd_bytes` follows
    /// it (rounded down to whole bytes).
    pub cwnd: f64,
    /// `rto_model = "ns2"`: the timed segment (ns-2's `rtt_active_`, `rtt_seq_`, `rtt_ts_`):
    /// its end and when it was sent. A SYN is timed with end 0.
    pub timed: Option<(u64, Nanos)>,
    /// `rto_model = "ns2"` without SACK: the timer was restarted on a partial ACK of this
    /// recovery (`firstpartial_`, `newreno_changes1_ 1`).
    pub first_partial: bool,
}

/// ns-2's TcpAgent::sendmsg (tcp.cc:818) counts a flow in whole packets (`whole_packets`):
/// curseq_ += ceil(nbytes / size_), each packet size_ bytes.
pub(super) fn size_in_packets(size: Option<u64>, cfg: &TcpConfig) -> Option<u64> {
    let mss = cfg.mss_bytes as u64;
    size.map(|s| if cfg.whole_packets { s.div_ceil(mss) * mss } else { s })
}

impl Ns2 {
    /// The modes of a flow with settings `cfg` (its own, see `TcpSender::config`) and
    /// congestion control `cc`.
    pub fn new(cfg: &TcpConfig, cc: &AnyCc) -> Self {
        let reno = cc.ns2_agent();
        Ns2 {
            mode: Modes {
                sack1: cfg.sack && cfg.sack_recovery == SackRecovery::Ns2,
                newreno: cfg.newreno_recovery == NewRenoRecovery::Ns2 && !cfg.sack,
                window: cfg.window_model == WindowModel::Ns2 && reno,
                rto: cfg.rto_model == RtoModel::Ns2,
                ecn: cfg.ecn_reaction == EcnReaction::Ns2 && reno,
                singledup: cfg.singledup,
            },
            sack1: Sack1::default(),
            ece_until: 0,
            cwnd: cfg.initial_cwnd_segments.max(1) as f64,
            timed: None,
            first_partial: false,
        }
    }

    /// The sender's window: `TcpAgent::window()` (tcp.cc:899), int(cwnd_) whole segments
    /// (window_ applies in send_one as rwnd), with `window_model = "ns2"`.
    #[inline]
    pub fn window_bytes(&self, mss: u64) -> u64 {
        (self.cwnd as u64).max(1) * mss
    }

    /// The sender set its window to `bytes`: ns-2's `cwnd_` follows (`window_model = "ns2"`).
    #[inline]
    pub fn follow_window(&mut self, bytes: u64, mss: u64) {
        if self.mode.window {
            self.cwnd = bytes as f64 / mss as f64;
        }
    }

    /// A SYN left (`rto_model = "ns2"`): output() of seqno 0 starts the timing.
    pub fn syn_sent(&mut self, now: Nanos) {
        if self.mode.rto {
            self.timed = Some((0, now));
        }
    }

    /// New data up to `end` left at `now` (`rto_model = "ns2"`): output() (tcp.cc:789-797),
    /// the first packet beyond maxseq_ sent while none is timed starts the timing.
    #[inline]
    pub fn on_new_data_sent(&mut self, end: u64, now: Nanos) {
        if self.mode.rto && self.timed.is_none() {
            self.timed = Some((end, now));
        }
    }

    /// The timed segment is forgotten (`reset_rtx_timer(_, 1)`: `rtt_active_ = 0`).
    #[inline]
    pub fn untime(&mut self) {
        self.timed = None;
    }

    /// Whether a new ACK restarts the retransmission timer: always, except that ns-2
    /// restarts it on the first partial ACK of a NewReno recovery only
    /// (NewRenoTcpAgent::partialnewack_helper, tcp-newreno.cc:88, newreno_changes1_ 1).
    /// `newreno_partial`: a partial ACK without SACK.
    #[inline]
    pub fn restarts_timer(&mut self, newreno_partial: bool) -> bool {
        if newreno_partial && self.mode.rto {
            !std::mem::replace(&mut self.first_partial, true)
        } else {
            self.first_partial = false;
            true
        }
    }

    /// Whether the ACK of `ack` (carrying ECN-Echo if `ece`) leaves the window as it is:
    /// ns-2 opens the window only on ACKs without ECN-Echo (recv_newack_helper,
    /// tcp.cc:1478), and its receiver repeats the echo until the packet carrying CWR, the
    /// first one sent after the reduction, arrives (tcp-sink.cc:319-328).
    #[inline]
    pub fn holds_window(&self, ece: bool, ack: u64) -> bool {
        self.mode.ecn && (ece || ack <= self.ece_until)
    }

    /// A retransmission timeout: Sack1TcpAgent::timeout (tcp-sack1.cc:390-413) ignores
    /// duplicate ACKs until new data is acknowledged and clears the scoreboard's pointer;
    /// reset_rtx_timer(0, 1) forgets the timed segment.
    pub fn timed_out(&mut self) {
        self.sack1.after_timeout = self.mode.sack1;
        self.sack1.next_retx = 0;
        self.untime();
    }
}

impl TcpSender {
    /// ns-2's output() (tcp.cc:710-732) sends seqno 0 not ECN-capable: the SYN with syn_, else
    /// the first data packet (every transmission of it).
    #[cold]
    pub(super) fn ns2_first_not_ect(&self) -> bool {
        self.cfg.ecn_reaction == EcnReaction::Ns2 && !(self.cfg.handshake || self.router)
    }

    /// The SYN-ACK's RTT sample (`rto_model = "ns2"`): newack() takes a sample and ends the
    /// backoff only if the SYN was timed, i.e. not retransmitted (tcp.cc:1407-1419).
    pub(super) fn ns2_rtt_on_syn_ack(&mut self, now: Nanos) {
        if let Some((_, sent)) = self.ns2.timed.take() {
            self.rtt.sample_ns2(sent, now);
            self.backoff = 0;
        }
    }

    /// ns-2's RTT sample and end of backoff on an ACK of new data up to `ack`
    /// (`rto_model = "ns2"`, before `snd_una` moves). `TcpAgent::newack` (tcp.cc:1407-1420):
    /// the timed segment acknowledged gives a sample and ends the backoff (`t_backoff_ = 1`);
    /// a NewReno partial ACK (`partialnewack`, tcp-newreno.cc:83) ends both without a
    /// sample; a Sack1 partial ACK ends the backoff whatever was timed (tcp-sack1.cc:224).
    pub(super) fn ns2_rtt_on_new_ack(&mut self, now: Nanos, ack: u64, partial: bool) {
        let timed_acked = self.ns2.timed.is_some_and(|(end, _)| ack >= end);
        if partial && !self.cfg.sack {
            if timed_acked {
                self.ns2.timed = None;
                self.backoff = 0;
            }
        } else if partial && self.ns2.mode.sack1 {
            self.backoff = 0;
        } else if timed_acked {
            if let Some((_, sent)) = self.ns2.timed.take() {
                self.rtt.sample_ns2(sent, now);
            }
            self.backoff = 0;
        }
    }

    /// Recovery ends at the recovery point, as ns-2's recovery in use (Sack1 or NewReno)
    /// ends it. Returns whether this ACK then opens the window.
    pub(super) fn ns2_recovery_over(&mut self) -> bool {
        if self.ns2.mode.sack1 {
            // tcp-sack1.cc:193-204: recover_ = 0, the scoreboard is cleared, and newack()
            // leaves cwnd_ as the halving set it.
            self.rec.recover = 0;
            self.sack1_clear();
            return false;
        }
        // NewRenoTcpAgent::recv (tcp-newreno.cc:229-246): dupwnd_ = 0, cwnd_ stays as the
        // halving (and deflation) left it, and this ACK opens it (recv_newack_helper).
        true
    }

    /// The window's growth with `window_model = "ns2"`: the algorithm sees the ACK (ATCP's
    /// weight), the window is ns-2's (`opencwnd`).
    pub(super) fn ns2_open_window(&mut self, sample: &AckSample) {
        let mut scratch = self.st;
        self.cc.on_ack(&mut scratch, sample);
        self.ns2_opencwnd();
    }

    /// An ECN echo on the ACK of `ack` (`ecn_reaction = "ns2"`). TcpAgent::ecn (tcp.cc:1438):
    /// once per window of data, the ACK beyond recover_ (shared with loss recovery), or the
    /// first echo after a timeout.
    pub(super) fn ns2_ecn_echo(&mut self, ack: u64) {
        if !(ack > self.rec.recover || self.last_action == CwndAction::Timeout) || self.rec.active {
            return;
        }
        self.rec.recover = self.snd_max;
        self.ecn_recover = self.snd_max;
        self.last_action = CwndAction::Ecn;
        self.ns2_halve();
        self.left_slow_start = true;
        self.ns2.ece_until = self.snd_nxt;
    }

    /// Loss detection outside recovery with ns-2's Sack1 or NewReno recovery: their
    /// `dupack_action`, on the `dupthresh`th duplicate ACK only.
    pub(super) fn ns2_fastretrans_alert(&mut self, now: Nanos, counted_dupack: bool, out: &mut Vec<Packet>) {
        if !(counted_dupack && self.rec.dupacks == self.cfg.dupthresh) {
            return;
        }
        if self.ns2.mode.sack1 {
            self.sack1_dupack_action(now, out);
            return;
        }
        // NewRenoTcpAgent::dupack_action (tcp-newreno.cc:118-177): a fast retransmit needs
        // highest_ack_ > recover_ (or highest_ack_ == 0, bugfix_ss_); otherwise nothing but
        // the ECN case.
        let first = if self.cfg.handshake || self.router { 0 } else { self.st.mss_bytes };
        let recovered = self.snd_una > self.rec.recover || self.snd_una == first;
        if recovered {
            self.enter_recovery();
            if let Some((seq, len)) = self.next_hole() {
                self.retransmit(now, seq, len, out);
            }
            self.ns2_reset_rtx_timer(now);
        } else {
            self.ns2_loss_in_ecn_window(now, out);
        }
    }

    /// The `dupthresh`th duplicate ACK below the recovery point (`ecn_reaction = "ns2"`):
    /// NewRenoTcpAgent::dupack_action (tcp-newreno.cc:136), a loss in the window an ECN echo
    /// already halved is repaired without a second reduction.
    pub(super) fn ns2_loss_in_ecn_window(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        if !(self.ns2.mode.ecn && self.last_action == CwndAction::Ecn) {
            return;
        }
        self.last_action = CwndAction::Dupack;
        // The recovery point stays: this repair belongs to the echo's window.
        let recover = self.rec.recover;
        self.rec.start(self.snd_una, self.snd_max, self.st.mss_bytes);
        self.rec.recover = recover;
        if let Some((seq, len)) = self.next_hole() {
            self.retransmit(now, seq, len, out);
        }
        self.arm_if_outstanding(now, true);
        if self.ns2.mode.rto {
            self.ns2.untime(); // reset_rtx_timer(1, 0)
        }
    }

    /// `reset_rtx_timer(1, 0)` at a fast retransmit (`rto_model = "ns2"`; tcp.cc:976): the
    /// timer restarts and the timed segment is forgotten (`rtt_active_ = 0`).
    pub(super) fn ns2_reset_rtx_timer(&mut self, now: Nanos) {
        if self.ns2.mode.rto {
            self.ns2.untime();
            self.rto_deadline = Some(now + self.rtt.backed_off(self.backoff));
        }
    }

    /// What an ACK lets the sender send, where ns-2's modes decide it: one new segment on
    /// each early duplicate ACK (`singledup`), Sack1's `send_much` in recovery, and nothing
    /// on Sack1's duplicate ACKs outside it (ns-2 calls send_much only when dupacks_ is 0:
    /// tcp-newreno.cc:292, tcp-sack1.cc:187). Returns whether it decided (else the sender
    /// sends what fits).
    #[inline]
    pub(super) fn ns2_sends_after_ack(&mut self, now: Nanos, counted_dupack: bool, out: &mut Vec<Packet>) -> bool {
        let sack1 = self.ns2.mode.sack1;
        if self.ns2.mode.singledup && !self.rec.active && counted_dupack && self.rec.dupacks < self.cfg.dupthresh {
            self.send_one_singledup(now, out);
            true
        } else if sack1 && self.rec.active {
            self.sack1_send_much(now, out);
            true
        } else {
            sack1 && self.rec.dupacks > 0 && !self.rec.active
        }
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
        let cwnd = if self.ns2.mode.window { self.cwnd_segments() * mss } else { self.st.cwnd_bytes };
        if outstanding + mss > self.cfg.rwnd_bytes.max(mss) || outstanding + mss > cwnd + self.rec.dupacks as u64 * mss
        {
            return;
        }
        let seq = self.snd_nxt;
        self.emit(now, seq, len, out);
        self.snd_nxt += len;
        self.snd_max = self.snd_max.max(self.snd_nxt);
    }

    /// The window after a retransmission timeout, where ns-2's modes set it. Returns whether
    /// they did (else the algorithm's `on_congestion` sets it).
    pub(super) fn ns2_timeout_window(&mut self) -> bool {
        if self.ns2.mode.ecn && self.last_action == CwndAction::Ecn && self.snd_una < self.rec.recover {
            // TcpAgent::timeout (tcp.cc:1920): in the window an ECN echo already halved,
            // ssthresh stays; the window restarts at one segment.
            self.set_cwnd_bytes(self.st.mss_bytes);
            true
        } else if self.ns2.mode.window {
            // TcpAgent::timeout (tcp.cc:1927): slowdown(CLOSE_SSTHRESH_HALF |
            // CLOSE_CWND_RESTART).
            self.ns2_slowdown(false);
            true
        } else {
            false
        }
    }

    /// One more doubling of the timeout with `rto_model = "ns2"`: `TcpAgent::rtt_backoff`
    /// (tcp.cc:622), `t_backoff_` doubles while below 64 or while the timeout is below
    /// `maxrto_`, and beyond 8 the SRTT is cleared.
    pub(super) fn ns2_back_off(&mut self) {
        if self.backoff < 6 || self.rtt.backed_off(self.backoff) < self.cfg.max_rto {
            self.backoff += 1;
        }
        self.rtt.backed_off_ns2(self.backoff);
    }
}
