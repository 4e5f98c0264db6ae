//! The send path: what the window lets go (`send_what_fits`, `send_one`; a paced flow's
//! `send_paced`), the data packets (`emit`, `retransmit`), the SYN, FIN and header-only
//! packets, and what goes on each packet as it leaves (`pushed`: the router header, the band
//! and rank).

use super::{pacing, State, TcpSender, LONG_LIVED};
use crate::cc::SendContext;
use fctlab_engine::{BitsPerSec, Nanos};
use fctlab_net::packet::flags;
use fctlab_net::{Packet, PacketKind};

impl TcpSender {
    /// Sends the SYN (again after a timeout) and runs the retransmission timer for it.
    pub(super) fn send_syn(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        let p = Packet { kind: PacketKind::Syn, ..self.header_only_packet(now) };
        self.push(now, p, out);
        self.rto_deadline = Some(now + self.rtt.backed_off(self.backoff));
    }

    /// A packet of this flow without payload, as `send_syn` and header-only packets use.
    pub(super) fn header_only_packet(&self, now: Nanos) -> Packet {
        Packet {
            flow: self.flow,
            src: self.src,
            dst: self.dst,
            wire_bytes: self.cfg.header_bytes,
            seq: self.snd_nxt,
            ts_sent_ns: now.as_nanos(),
            ..Default::default()
        }
    }

    /// Hands a packet to the network, with the algorithm's router header if it adds one.
    pub(super) fn push(&mut self, now: Nanos, p: Packet, out: &mut Vec<Packet>) {
        out.push(p);
        self.pushed(now, out);
    }

    /// The packet just appended to `out` leaves now: the algorithm's router header goes on it
    /// if it adds one, and its band and rank if it tags packets. (Packets are built in place
    /// in `out`: no copy on the hot path.)
    #[inline(always)]
    pub(super) fn pushed(&mut self, now: Nanos, out: &mut [Packet]) {
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

    /// Marks this flow's router headers as belonging to the run's router-assisted protocol
    /// `owner` (the simulation numbers the protocols its flows use; 0 by default).
    pub fn set_router_owner(&mut self, owner: u8) {
        self.feedback.owner = owner;
    }

    /// Router-assisted flows: the header-only FIN once every byte has been sent.
    pub(super) fn send_fin_if_done(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        if self.router && !self.feedback.fin_sent && self.snd_max >= self.size {
            self.feedback.fin_sent = true;
            let p = Packet { kind: PacketKind::Fin, ..self.header_only_packet(now) };
            self.push(now, p, out);
        }
    }

    /// Sends what the window allows: holes first in recovery, then new data (a paced flow
    /// at its rate instead); a router-assisted flow's FIN once every byte has been sent.
    #[inline]
    pub(super) fn send_what_fits(&mut self, now: Nanos, out: &mut Vec<Packet>) {
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
    pub(super) fn send_paced(&mut self, now: Nanos, out: &mut Vec<Packet>) {
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
    pub(super) fn send_one(&mut self, now: Nanos, wnd: u64, out: &mut Vec<Packet>) -> bool {
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

    /// Sends `seq..seq + len` again and counts it as retransmitted in this recovery.
    pub(super) fn retransmit(&mut self, now: Nanos, seq: u64, len: u64, out: &mut Vec<Packet>) {
        self.emit(now, seq, len, out);
        self.rec.retransmitted(seq, len, self.snd_nxt, self.cfg.sack);
    }

    /// Appends the data segment `seq..seq + len` to `out` (a retransmission if below
    /// snd_max): its ECT and RETX flags, then what `pushed` adds.
    #[inline]
    pub(super) fn emit(&mut self, now: Nanos, seq: u64, len: u64, out: &mut Vec<Packet>) {
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
        if let Some(r) = self.rack.as_deref_mut() {
            r.on_sent(seq, seq + len, now);
        }
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
            ts_sent_ns: now.as_nanos(),
            ..Default::default()
        });
        self.pushed(now, out);
    }
}
