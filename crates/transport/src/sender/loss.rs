//! Loss detection and recovery's steps in the sender: duplicate ACKs counted, recovery
//! entered (tcp_fastretrans_alert) and left or continued on a new ACK, lost retransmissions
//! found; the scoreboard's rules are `Recovery`'s. ns-2's Sack1 and NewReno decide through
//! the `ns2` seam.

use super::{CwndAction, TcpSender};
use crate::cc::CongestionEvent;
use fctlab_engine::Nanos;
use fctlab_net::Packet;

impl TcpSender {
    /// A duplicate ACK with data outstanding: counted, as the recovery in use counts it.
    /// Returns whether it was counted.
    #[inline]
    pub(super) fn count_dupack(&mut self, sacked_total_before: u64) -> bool {
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
    pub(super) fn fastretrans_alert(&mut self, now: Nanos, counted_dupack: bool, out: &mut Vec<Packet>) {
        let mss = self.st.mss_bytes;
        if self.ns2.mode.sack1 || self.ns2.mode.newreno {
            self.ns2_fastretrans_alert(now, counted_dupack, out);
        } else if self.snd_una >= self.rec.recover {
            let dupthresh = self.cfg.dupthresh as u64;
            let sack_says = self.cfg.sack && self.rec.sacked.total() >= dupthresh * mss;
            // After a probe, a SACK means the holes below it are older than the probe
            // timeout: RACK marks them lost.
            let rack_says = self.tlp_high_seq.is_some() && self.rec.sacked.total() > 0;
            // (With RACK on, its time rule decides alone: `rack_detect`.)
            let counts_say = self.rack.is_none() && (self.rec.dupacks as u64 >= dupthresh || sack_says);
            if counts_say || rack_says {
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

    /// Fast recovery starts: the window is cut once (continuing CWR if one is under way,
    /// ns-2's slowdown, or the algorithm's `on_congestion`), losses up to snd_max belong to it.
    pub(super) fn enter_recovery(&mut self) {
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

    /// A new ACK during loss recovery: its end at the recovery point, or a partial ACK.
    /// Returns whether this ACK then opens the window (ns-2's NewReno on exit).
    #[inline]
    pub(super) fn recovery_on_new_ack(&mut self, now: Nanos, ack: u64, out: &mut Vec<Packet>) -> bool {
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

    /// RACK's step (`rack.rs`) after an ACK answering a packet sent at `echo`, or when its
    /// timer fires (`echo` None): the segments whose time is up are lost; the first loss
    /// starts recovery, whose first hole goes out at once.
    pub(super) fn rack_detect(&mut self, now: Nanos, echo: Option<(Nanos, bool)>, out: &mut Vec<Packet>) {
        let Some(mut r) = self.rack.take() else { return };
        if let Some((e, dsack)) = echo {
            if dsack {
                r.on_dsack(self.snd_una, self.snd_nxt);
            }
            let delivered = self.rec.sacked.highest().unwrap_or(0).max(self.snd_una);
            r.on_ack(now, e, self.snd_una, delivered);
        }
        let mss = self.st.mss_bytes;
        let (min_rtt, srtt) = match (self.rtt.measured(), self.rtt.srtt()) {
            (Some((min, _)), Some(s)) => (min, s),
            _ => (Nanos::ZERO, Nanos::ZERO),
        };
        let dupthresh_sacked = self.rec.sacked.total() >= self.cfg.dupthresh as u64 * mss;
        let window = r.window(min_rtt, srtt, dupthresh_sacked, self.rec.active);
        let rec = &self.rec;
        let lost = r.detect(now, window, |s, e| rec.sacked.covered_in(s, e) >= e - s);
        self.rack = Some(r);
        let Some(end) = lost else { return };
        let entering = !self.rec.active && self.snd_una >= self.rec.recover;
        if entering {
            self.enter_recovery();
        }
        self.rec.lost_hint = self.rec.lost_hint.max(end);
        if entering {
            if let Some((seq, len)) = self.next_hole() {
                self.retransmit(now, seq, len, out);
            }
            self.ns2_reset_rtx_timer(now);
        }
    }

    /// A retransmission SACKed `dupthresh` segments beyond is lost (see `Recovery`).
    pub(super) fn detect_lost_retransmissions(&mut self) {
        self.rec.detect_lost_retransmissions(self.cfg.dupthresh as u64 * self.st.mss_bytes);
    }

    /// A paced flow: this ACK answers a packet sent after every outstanding data segment (the
    /// round's header-only packet), and that data is neither acknowledged nor SACKed. A flow's
    /// packets keep their order on its path, so all of it is lost, retransmissions included:
    /// it becomes eligible for repair at once. Without this a paced flow whose whole window was
    /// dropped hears nothing but these answers, and its window (which counts the lost data as
    /// in flight) keeps it silent until the retransmission timeout.
    pub(super) fn probe_found_losses(&mut self) {
        if !self.rec.active {
            self.enter_recovery();
        }
        self.rec.all_lost(self.snd_max);
    }
}
