//! The window's reductions for ECN echoes (RFC 3168, once per window; with `cwr`, Linux's CWR
//! state and proportional rate reduction) and ATCP's one halving per congestion episode (see
//! the module documentation of `super`). ns-2's reaction is `ns2_ecn_echo`.

use super::prr::Cwr;
use super::{CwndAction, TcpSender};
use crate::cc::CongestionEvent;

impl TcpSender {
    /// The reaction to an ECN echo on the ACK of `ack`.
    #[inline]
    pub(super) fn react_to_ecn(&mut self, ece: bool, ack: u64) {
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

    /// One ACK's step of proportional rate reduction in CWR (see `Cwr::step`).
    #[inline]
    pub(super) fn reduce_cwnd(&mut self, delivered: u64, ack_advanced: bool) {
        let pipe = self.pipe();
        let Some(c) = self.cwr.as_mut() else { return };
        if let Some(cwnd) = c.step(delivered, ack_advanced, pipe, self.st.ssthresh_bytes, self.st.mss_bytes) {
            self.st.cwnd_bytes = cwnd;
        }
    }

    /// One halving per episode (ATCP's `halving = "per-episode"`): a signal now, with snd_una
    /// below where the last halving reduction ended, keeps the window (ssthresh = cwnd, as the
    /// kernel ATCP's `ssthresh` returns it). Returns whether it did.
    pub(super) fn keep_window(&mut self) -> bool {
        if !(self.cc.halving_per_episode() && self.quiet_until.is_some_and(|q| self.snd_una < q)) {
            return false;
        }
        self.st.ssthresh_bytes = self.st.cwnd_bytes.max(2 * self.st.mss_bytes);
        self.episode_halved = false;
        true
    }

    /// CWR or recovery is over (or an ECN reduction without CWR is done): after a halving,
    /// signals for data sent until now belong to its episode.
    pub(super) fn reduction_ended(&mut self) {
        if std::mem::take(&mut self.episode_halved) {
            self.quiet_until = Some(self.snd_nxt);
        }
    }
}
