//! RACK's loss detection by time (RFC 8985 section 6, as Linux runs it with
//! `net.ipv4.tcp_recovery = 1`), on request (`[transport] rack = true`): a segment is lost when
//! a segment sent after it has been delivered and a round trip plus a reordering window has
//! passed since it was sent; duplicate-ACK and SACK counts no longer decide alone.
//!
//! - Each ACK's timestamp echo gives the send time of the packet it answers, the latest
//!   delivered one: RACK's `xmit_ts` is the latest such time, and `rtt` the round trip of
//!   that packet.
//! - An ACK answering a packet sent before one already delivered shows reordering
//!   (`reordering_seen`).
//! - The reordering window is a quarter of the smallest RTT times its steps (capped at the
//!   SRTT) once reordering has been seen, or while fewer than `dupthresh` segments are SACKed
//!   outside recovery; otherwise zero (RFC 8985 section 6.2, step 4). Each round trip in which
//!   a DSACK shows a retransmission was not needed adds a step (the receiver of a RACK flow
//!   reports duplicates as DSACK blocks, RFC 2883); the reset after 16 recoveries is not
//!   modelled.
//! - Each segment not SACKed that was sent no later than `xmit_ts` is lost once
//!   `sent + rtt + window` has passed; the earliest such time still to come arms RACK's timer.
//!
//! Lost segments extend the recovery's lost region (`Recovery::lost_hint`); with RACK the
//! highest SACKed byte no longer marks everything below it lost.

use fctlab_engine::Nanos;
use std::collections::BTreeMap;

#[derive(Debug, Default)]
pub(super) struct Rack {
    /// Each outstanding segment by its first byte: its end and when it was last sent.
    sent: BTreeMap<u64, (u64, Nanos)>,
    /// The send time of the latest packet delivered, the highest byte delivered with it
    /// (segments sent at that same time count as sent before it only below this), and its
    /// round trip.
    xmit_ts: Nanos,
    end_seq: u64,
    rtt: Nanos,
    pub reordering_seen: bool,
    /// The reordering window's multiple of a quarter of the smallest RTT: one more for each
    /// round trip in which a DSACK showed a retransmission was not needed.
    steps: u64,
    /// A DSACK before this byte is acknowledged counts for the same round trip.
    dsack_round: Option<u64>,
    /// When the next segment's time is up, if one is waiting.
    pub deadline: Option<Nanos>,
}

impl Rack {
    /// Segment `seq..end` left at `now`.
    pub fn on_sent(&mut self, seq: u64, end: u64, now: Nanos) {
        self.sent.insert(seq, (end, now));
    }

    /// An ACK at `now` answering a packet sent at `echo`; everything below `snd_una` is
    /// acknowledged, and `delivered` is the highest byte delivered (acknowledged or SACKed).
    pub fn on_ack(&mut self, now: Nanos, echo: Nanos, snd_una: u64, delivered: u64) {
        while let Some((&s, &(e, _))) = self.sent.first_key_value() {
            if e > snd_una {
                if s < snd_una {
                    let v = self.sent.remove(&s).unwrap_or((e, now));
                    self.sent.insert(snd_una, v);
                }
                break;
            }
            self.sent.remove(&s);
        }
        if echo == Nanos::ZERO {
            return;
        }
        if echo < self.xmit_ts {
            self.reordering_seen = true;
        } else {
            if echo > self.xmit_ts || delivered > self.end_seq {
                self.end_seq = delivered;
            }
            self.xmit_ts = echo;
            self.rtt = now.saturating_sub(echo);
        }
    }

    /// An ACK carried a DSACK (a retransmission arrived as a duplicate): reordering is seen,
    /// and the window grows by a step, once per round trip (`snd_una`, `snd_nxt`: the sender's).
    pub fn on_dsack(&mut self, snd_una: u64, snd_nxt: u64) {
        self.reordering_seen = true;
        if self.dsack_round.map_or(true, |r| snd_una >= r) {
            self.steps += 1;
            self.dsack_round = Some(snd_nxt);
        }
    }

    /// The reordering window.
    pub fn window(&self, min_rtt: Nanos, srtt: Nanos, dupthresh_sacked: bool, in_recovery: bool) -> Nanos {
        if !self.reordering_seen && (in_recovery || dupthresh_sacked) {
            return Nanos::ZERO;
        }
        Nanos::from_nanos(self.steps.max(1) * min_rtt.as_nanos() / 4).min(srtt)
    }

    /// The end of the highest segment lost at `now` (`sacked` says whether a range is SACKed
    /// whole), and arms the timer for the next one.
    pub fn detect(&mut self, now: Nanos, window: Nanos, sacked: impl Fn(u64, u64) -> bool) -> Option<u64> {
        let mut lost = None;
        let mut next: Option<Nanos> = None;
        for (&s, &(e, at)) in &self.sent {
            // (Sent after the latest delivered packet, or with it and beyond what was
            // delivered with it: not judged yet.)
            if at > self.xmit_ts || (at == self.xmit_ts && e > self.end_seq) || sacked(s, e) {
                continue;
            }
            let due = at + self.rtt + window;
            if due <= now {
                lost = Some(e);
            } else {
                next = Some(next.map_or(due, |n| n.min(due)));
            }
        }
        self.deadline = next;
        lost
    }
}
