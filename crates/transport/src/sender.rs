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

use crate::cc::{AckSample, AnyCc, CcState, CongestionEvent};
use crate::config::TcpConfig;
use crate::rtt::RttEstimator;
use crate::scoreboard::RangeSet;
use fctlab_engine::Nanos;
use fctlab_net::packet::flags;
use fctlab_net::{FlowId, NodeId, Packet, PacketKind};

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum State {
    SynSent,
    Established,
    Done,
}

pub struct TcpSender {
    pub flow: FlowId,
    src: NodeId,
    dst: NodeId,
    cfg: TcpConfig,
    /// Bytes to send; u64::MAX for a long-lived flow.
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
    ect: bool,
    /// Segments sent again (fast retransmit, recovery, or after a timeout).
    pub retransmits: u64,
    pub timeouts: u64,
    /// Data packets sent, first transmissions and retransmissions.
    pub packets_sent: u64,
    pub completed_at: Option<Nanos>,
}

impl TcpSender {
    /// A sender of `size` bytes (None: long-lived) from `src` to `dst`.
    pub fn new(flow: FlowId, src: NodeId, dst: NodeId, size: Option<u64>, cfg: &TcpConfig, cc: AnyCc, ecn: bool) -> Self {
        let mss = cfg.mss_bytes as u64;
        TcpSender {
            flow,
            src,
            dst,
            cfg: *cfg,
            size: size.unwrap_or(u64::MAX),
            state: State::SynSent,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            cc,
            st: CcState {
                cwnd_bytes: cfg.initial_cwnd_segments.max(1) as u64 * mss,
                ssthresh_bytes: cfg.initial_ssthresh_bytes.unwrap_or(u64::MAX / 2),
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
            ect: ecn,
            retransmits: 0,
            timeouts: 0,
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
    /// When the retransmission timer expires, if it runs.
    pub fn rto_deadline(&self) -> Option<Nanos> {
        self.rto_deadline
    }
    pub fn srtt(&self) -> Option<Nanos> {
        self.rtt.srtt()
    }
    pub fn in_recovery(&self) -> bool {
        self.in_recovery
    }

    /// A one-line description of the sender's state, for diagnostics.
    pub fn describe(&self) -> String {
        format!(
            "state={:?} una={} nxt={} max={} cwnd={} ssthresh={} pipe={} recovery={} recover={} retx={:?} lost_hint={} sacked={:?} dupacks={} rto_at={:?} backoff={} rto={:?}",
            self.state, self.snd_una, self.snd_nxt, self.snd_max, self.st.cwnd_bytes, self.st.ssthresh_bytes, self.pipe(),
            self.in_recovery, self.recover, self.retx.ranges(), self.lost_hint, self.sacked.ranges(), self.dupacks, self.rto_deadline, self.backoff, self.rtt.rto()
        )
    }

    /// Opens the connection (SYN) or, without handshake, starts sending.
    pub fn start(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        if self.cfg.handshake {
            self.send_syn(now, out);
        } else {
            self.state = State::Established;
            self.send_what_fits(now, out);
            self.arm_if_outstanding(now, false);
        }
        if self.size == 0 && self.state == State::Established {
            self.state = State::Done;
            self.completed_at = Some(now);
            self.rto_deadline = None;
        }
    }

    fn send_syn(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        out.push(Packet {
            flow: self.flow,
            src: self.src,
            dst: self.dst,
            kind: PacketKind::Syn,
            wire_bytes: self.cfg.header_bytes,
            ts_sent_ns: now.0,
            ..Default::default()
        });
        self.rto_deadline = Some(now + self.rtt.backed_off(self.backoff));
    }

    /// Handles a packet from the receiver (ACK or SYN-ACK).
    pub fn on_packet(&mut self, now: Nanos, p: &Packet, out: &mut Vec<Packet>) {
        match (self.state, p.kind) {
            (State::SynSent, PacketKind::SynAck) => {
                self.rtt.sample(Nanos(now.0.saturating_sub(p.ts_echo_ns)));
                self.backoff = 0;
                self.state = State::Established;
                self.rto_deadline = None;
                if self.size == 0 {
                    self.finish(now);
                    return;
                }
                self.send_what_fits(now, out);
                self.arm_if_outstanding(now, true);
            }
            (State::Established, PacketKind::Ack) => self.on_ack(now, p, out),
            _ => {} // stale or duplicate control packets
        }
    }

    fn finish(&mut self, now: Nanos) {
        self.state = State::Done;
        self.completed_at = Some(now);
        self.rto_deadline = None;
    }

    fn on_ack(&mut self, now: Nanos, p: &Packet, out: &mut Vec<Packet>) {
        let ack = p.ack.min(self.snd_max);
        let mss = self.st.mss_bytes;
        if self.cfg.sack {
            for b in &p.sack[..p.sack_len as usize] {
                let (s, e) = (b.start.max(ack), b.end.min(self.snd_max));
                if s < e {
                    self.sacked.insert(s, e);
                    self.retx.remove(s, e);
                }
            }
        }
        let ece = self.ect && p.has(flags::ECE);
        self.cc.on_feedback(&mut self.st, &p.router);
        if ack > self.snd_una {
            let acked = ack - self.snd_una;
            // Timestamp echo gives a sample even for retransmitted data (RFC 7323).
            let r = Nanos(now.0.saturating_sub(p.ts_echo_ns));
            self.rtt.sample(r);
            let rtt = Some(r);
            self.snd_una = ack;
            if self.snd_nxt < ack {
                self.snd_nxt = ack;
            }
            self.sacked.remove_below(ack);
            self.retx.remove_below(ack);
            self.dupacks = 0;
            self.backoff = 0;
            if self.in_recovery {
                if ack >= self.recover {
                    self.in_recovery = false;
                    self.retx.clear();
                    self.rexmits.clear();
                    self.st.cwnd_bytes = self.st.ssthresh_bytes.max(mss);
                } else {
                    // Partial ACK: the next unacknowledged segment is lost too.
                    self.lost_hint = self.lost_hint.max(ack + mss);
                }
            } else {
                let sample = AckSample {
                    now,
                    acked_bytes: acked,
                    ce_bytes: if ece { (p.ce_bytes_echo as u64).min(acked).max(1) } else { 0 },
                    ece,
                    rtt,
                    snd_una: self.snd_una,
                    snd_nxt: self.snd_nxt,
                    bytes_sent: self.snd_max,
                };
                self.cc.on_ack(&mut self.st, &sample);
                // The window never grows past what the receiver accepts (ns-2's window_ caps
                // cwnd_ in effect; Linux grows cwnd only while it limits the sender).
                self.st.cwnd_bytes = self.st.cwnd_bytes.min(self.cfg.rwnd_bytes.max(mss));
            }
            if self.snd_una >= self.size {
                self.finish(now);
                return;
            }
            self.arm_if_outstanding(now, true);
        } else if ack == self.snd_una && self.snd_una < self.snd_max {
            self.dupacks += 1;
        }
        // Once per window (RFC 3168): an echo counts only on an ACK for data sent after the
        // last reduction, i.e. beyond `ecn_recover`. The ACK that reaches `ecn_recover`
        // exactly still acknowledges data sent before it, whose marks were already answered.
        if ece && !self.in_recovery && self.snd_una > self.ecn_recover {
            let flight = self.snd_max - self.snd_una;
            self.cc.on_congestion(&mut self.st, CongestionEvent::Ecn { flight_bytes: flight });
            self.ecn_recover = self.snd_nxt;
        }
        if self.in_recovery {
            self.detect_lost_retransmissions();
        }
        if !self.in_recovery && self.snd_una >= self.recover && self.snd_una < self.snd_max {
            let dupthresh = self.cfg.dupthresh as u64;
            let sack_says = self.cfg.sack && self.sacked.total() >= dupthresh * mss;
            if self.dupacks as u64 >= dupthresh || sack_says {
                self.enter_recovery();
                // Fast retransmit: the first hole goes out at once, whatever the pipe.
                if let Some((seq, len)) = self.next_hole() {
                    self.retransmit(now, seq, len, out);
                }
            }
        }
        self.send_what_fits(now, out);
        if self.rto_deadline.is_none() {
            self.arm_if_outstanding(now, false);
        }
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
        // FlightSize, but not above the window: with many holes, snd_max - snd_una overstates
        // what is really in the network.
        let flight = (self.snd_max - self.snd_una).min(self.st.cwnd_bytes);
        self.cc.on_congestion(&mut self.st, CongestionEvent::Loss { flight_bytes: flight });
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
    fn pipe(&self) -> u64 {
        let outstanding = self.snd_nxt - self.snd_una - self.sacked.covered_in(self.snd_una, self.snd_nxt);
        if !self.in_recovery {
            return outstanding;
        }
        let (from, to) = (self.snd_una, self.lost_limit());
        let lost = if to > from { (to - from) - self.sacked.covered_in(from, to) - self.retx.covered_in(from, to) } else { 0 };
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

    fn send_what_fits(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        if self.state != State::Established {
            return;
        }
        let mss = self.st.mss_bytes;
        loop {
            let pipe = self.pipe();
            if self.in_recovery {
                if pipe + mss > self.st.cwnd_bytes.max(mss) {
                    break;
                }
                if let Some((seq, len)) = self.next_hole() {
                    self.retransmit(now, seq, len, out);
                    continue;
                }
            }
            // New data (or, after a timeout, data again from snd_nxt).
            let remaining = self.size - self.snd_nxt;
            if remaining == 0 {
                break;
            }
            let len = remaining.min(mss);
            if pipe + len > self.st.cwnd_bytes.max(mss) {
                break;
            }
            if self.snd_nxt + len > self.snd_una + self.cfg.rwnd_bytes {
                break;
            }
            let seq = self.snd_nxt;
            self.emit(now, seq, len, out);
            self.snd_nxt += len;
            if self.snd_nxt > self.snd_max {
                self.snd_max = self.snd_nxt;
            }
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
        }
        self.packets_sent += 1;
        let mut f = if self.ect { flags::ECT } else { 0 };
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

    /// The retransmission timer fired at `now` (the caller checked the deadline).
    pub fn on_rto(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        match self.state {
            State::Done => {
                self.rto_deadline = None;
            }
            State::SynSent => {
                self.timeouts += 1;
                self.backoff += 1;
                self.send_syn(now, out);
            }
            State::Established => {
                if self.snd_una >= self.snd_max {
                    self.rto_deadline = None;
                    return;
                }
                self.timeouts += 1;
                let flight = (self.snd_max - self.snd_una).min(self.st.cwnd_bytes);
                self.cc.on_congestion(&mut self.st, CongestionEvent::Timeout { flight_bytes: flight });
                self.in_recovery = false;
                self.recover = self.snd_max;
                self.ecn_recover = self.snd_max;
                self.sacked.clear();
                self.retx.clear();
                self.rexmits.clear();
                self.dupacks = 0;
                self.snd_nxt = self.snd_una;
                self.backoff += 1;
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
        let cfg = TcpConfig { mss_bytes: MSS as u32, initial_cwnd_segments: cwnd_segments, min_rto: Nanos::from_millis(10), ..Default::default() };
        TcpSender::new(FlowId(0), NodeId(0), NodeId(1), None, &cfg, CcConfig::NewReno(NewRenoConfig {}).build(&Default::default()), false)
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
        assert!(s.rto_deadline().is_some());
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
        let deadline = s.rto_deadline().expect("the timer runs");
        assert!(deadline - Nanos::from_micros(1000) >= Nanos::from_millis(200), "RTO {deadline} is at least min RTO after the last new ACK");
        assert_eq!(deadline.0 % 10_000_000, (1_000_000) % 10_000_000, "RTO of whole 10 ms ticks after the ACK that armed it");
        s.on_rto(deadline, &mut out);
        assert!(out.iter().any(|p| p.has(flags::RETX) && p.seq == mss), "segment 1 is sent again after the timeout");
        assert_eq!(s.timeouts, 1);
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
        let cfg = TcpConfig { mss_bytes: MSS as u32, initial_cwnd_segments: 20, ..Default::default() };
        let mut s = TcpSender::new(FlowId(0), NodeId(0), NodeId(1), None, &cfg,
                                   CcConfig::NewReno(NewRenoConfig {}).build(&Default::default()), true);
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

    #[test]
    fn timeout_goes_back_to_one_segment() {
        let mut s = sender(10);
        let mut out = Vec::new();
        s.start(Nanos::ZERO, &mut out);
        out.clear();
        let d = s.rto_deadline().unwrap();
        s.on_rto(d, &mut out);
        assert_eq!(seqs(&out), vec![0]);
        assert_eq!(s.timeouts, 1);
        assert_eq!(s.st.cwnd_bytes, MSS);
        // backed off: twice the timeout
        assert_eq!(s.rto_deadline().unwrap() - d, Nanos::from_millis(2000).min(Nanos((d.0) * 2)));
    }
}
