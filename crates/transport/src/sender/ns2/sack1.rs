//! ns-2.35's `Agent/TCP/Sack1` (`sack_recovery = "ns2"` with SACK; tcp-sack1.cc with
//! `ScoreBoardRQ`): fast retransmit on the `dupthresh`th duplicate ACK that brings new SACK
//! information, a pipe counted in packets, each hole below the highest SACK retransmitted once
//! in order, new data within the receiver's window past the holes, no lost-retransmission
//! detection, and duplicate ACKs ignored after a timeout until new data is acknowledged.

use super::super::{CwndAction, TcpSender};
use crate::cc::{AnyCc, CongestionEvent};
use fctlab_engine::Nanos;
use fctlab_net::Packet;

/// ns-2.35's `Sack1TcpAgent` state (`sack_recovery = "ns2"`).
#[derive(Debug, Default)]
pub(in crate::sender) struct Sack1 {
    /// `pipe_` in fast recovery, in packets.
    pub pipe: i64,
    /// Holes below this were retransmitted in this recovery (`ScoreBoardRQ`'s `h_seqno_`).
    pub next_retx: u64,
    /// Duplicate ACKs are ignored from a timeout until new data is acknowledged (`timeout_`).
    pub after_timeout: bool,
}

impl Sack1 {
    /// The scoreboard's pointer and the timeout state start again (a new ACK outside recovery,
    /// or the end of one).
    pub fn reset(&mut self) {
        self.next_retx = 0;
        self.after_timeout = false;
    }

    /// One packet has left the network: in fast recovery every ACK takes one packet out of
    /// `pipe_` (Sack1TcpAgent::recv, tcp-sack1.cc:191), and a partial ACK one more
    /// (`partial_ack_` false, tcp-sack1.cc:223), nothing being sent for it at once.
    #[inline]
    pub fn packet_left(&mut self) {
        self.pipe -= 1;
    }
}

impl TcpSender {
    /// A new ACK outside recovery, or recovery's end, clears the scoreboard and the timeout
    /// state (tcp-sack1.cc:138, 193-204).
    pub(in crate::sender) fn sack1_clear(&mut self) {
        self.rec.sacked.clear();
        self.ns2.sack1.reset();
    }

    /// A duplicate ACK with data outstanding, as Sack1 counts it: only if its SACK blocks tell
    /// something new (CheckUpdate), and none until new data is acknowledged after a timeout
    /// (timeout_, tcp-sack1.cc:144, 232). Returns whether it counts towards a fast retransmit.
    pub(in crate::sender) fn sack1_count_dupack(&mut self, sacked_total_before: u64) -> bool {
        if !self.ns2.sack1.after_timeout
            && self.rec.sacked.total() != sacked_total_before
            && (!self.rec.active || self.rec.dupacks > 0)
        {
            self.rec.dupacks += 1;
            return !self.rec.active;
        }
        false
    }

    /// `Sack1TcpAgent::dupack_action` (tcp-sack1.cc:274) on the `dupthresh`th duplicate ACK.
    pub(in crate::sender) fn sack1_dupack_action(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        let mss = self.st.mss_bytes;
        // highest_ack_ > recover_, or highest_ack_ == 0 (bugfix_ss_: the first data packet;
        // with syn_ packet 0 is the SYN, without it the first data packet, whose loss then
        // waits for the timer).
        let first = if self.cfg.handshake || self.router { 0 } else { mss };
        let recovered = self.snd_una > self.rec.recover || self.snd_una == first;
        let cut = if recovered {
            true
        } else if self.ns2.mode.ecn && self.last_action == CwndAction::Ecn {
            false // tcp-sack1.cc:285: the ECN reaction already halved this window
        } else {
            return; // bug_fix_: no second fast retransmit in one window
        };
        self.tlp_high_seq = None;
        self.probe_deadline = None;
        self.left_slow_start = true;
        if cut {
            self.rec.recover = self.snd_max;
        }
        // pipe_ = maxseq_ - highest_ack_ - numdupacks_ (LimTransmitFix_ false)
        let outstanding = (self.snd_max - self.snd_una).div_ceil(mss) as i64;
        self.ns2.sack1.pipe = outstanding - self.cfg.dupthresh as i64;
        self.rec.active = true;
        self.ecn_recover = self.ecn_recover.max(self.rec.recover);
        self.rec.forget_retransmissions();
        self.last_action = CwndAction::Dupack;
        if cut {
            if matches!(self.cc, AnyCc::NewReno(_)) || self.ns2.mode.window {
                self.ns2_halve();
            } else {
                let flight = self.st.cwnd_bytes.min(self.cfg.rwnd_bytes);
                self.cc.on_congestion(&mut self.st, CongestionEvent::Loss { flight_bytes: flight });
            }
        }
        // reset_rtx_timer(1, 0), MarkRetran(highest_ack_ + 1), output(last_ack_ + 1): the
        // first retransmission is not counted in pipe_.
        self.rto_deadline = Some(now + self.rtt.backed_off(self.backoff));
        if self.ns2.mode.rto {
            self.ns2.timed = None;
        }
        let len = (self.snd_max - self.snd_una).min(mss);
        self.ns2.sack1.next_retx = self.snd_una + len;
        let seq = self.snd_una;
        self.emit(now, seq, len, out);
    }

    /// `Sack1TcpAgent::send_much` in fast recovery (tcp-sack1.cc:422-434): while pipe_ < cwnd_
    /// (whole packets), the next hole below the highest SACK at or after the retransmission
    /// pointer (`ScoreBoardRQ::GetNextRetran`: each hole once, a lost retransmission waits
    /// for the timer), else new data within the receiver's window of the cumulative ACK.
    pub(in crate::sender) fn sack1_send_much(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        let mss = self.st.mss_bytes;
        let rwnd = self.cfg.rwnd_bytes.max(mss);
        while self.ns2.sack1.pipe < self.cwnd_segments() as i64 && self.snd_una < self.size {
            let from = self.ns2.sack1.next_retx.max(self.snd_una);
            let highest = self.rec.sacked.highest().unwrap_or(0);
            let (g, gap_end) = self.rec.sacked.next_gap(from);
            if g < highest {
                if g + mss > self.snd_una + rwnd {
                    break;
                }
                let len = (gap_end - g).min(mss);
                self.ns2.sack1.next_retx = g + len;
                self.emit(now, g, len, out);
                self.rec.retx.insert(g, g + len);
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
            self.ns2.sack1.pipe += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sack1_starts_again_after_a_new_ack() {
        let mut s = Sack1 { pipe: 3, next_retx: 5000, after_timeout: true };
        s.reset();
        assert_eq!((s.pipe, s.next_retx, s.after_timeout), (3, 0, false));
    }
}
