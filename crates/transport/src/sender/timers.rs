//! The sender's timers: the retransmission timeout (RFC 6298 with exponential backoff, or
//! ns-2's) and the other timer, which is the tail loss probe's or, for a paced flow, the
//! pacing timer (see the module documentation of `super`).

use super::probe::{self, Probe};
use super::{CwndAction, State, TcpSender};
use crate::cc::CongestionEvent;
use fctlab_engine::Nanos;
use fctlab_net::Packet;

impl TcpSender {
    /// Runs the retransmission timer while data is outstanding (from now if `restart` or it
    /// is not running), else stops it.
    #[inline]
    pub(super) fn arm_if_outstanding(&mut self, now: Nanos, restart: bool) {
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
    pub(super) fn timer_fired(&mut self, now: Nanos, out: &mut Vec<Packet>) {
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
            return;
        }
        // RACK's timer: a segment's time is up with nothing arriving.
        if self.rack.as_deref().and_then(|r| r.deadline).is_some_and(|d| d <= now) {
            self.rack_detect(now, None, out);
            self.send_what_fits(now, out);
        }
    }

    /// One more doubling of the timeout (ns-2's `rtt_backoff` with `rto_model = "ns2"`).
    pub(super) fn back_off(&mut self) {
        if self.ns2.mode.rto {
            self.ns2_back_off();
        } else {
            self.backoff += 1;
        }
    }

    /// The retransmission timeout: the SYN again, or the window cut (`on_congestion`, or
    /// ns-2's), the scoreboard discarded, and sending again from snd_una with the timer backed
    /// off (or probe mode after `probe_after` timeouts).
    pub(super) fn on_rto(&mut self, now: Nanos, out: &mut Vec<Packet>) {
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

    /// Arms the tail loss probe if the sender may use one now, or disarms it.
    /// `advancing_rto`: the RTO was just restarted (Linux's argument of the same name).
    #[inline]
    pub(super) fn schedule_probe(&mut self, now: Nanos, advancing_rto: bool) {
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
    pub(super) fn send_probe(&mut self, now: Nanos, out: &mut Vec<Packet>) {
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
            Some(d) if !head => d.max(now + Nanos::from_nanos(1)),
            _ => rto,
        });
    }
}
