//! The simulation's steps of priority flow control (`pfc.rs` has the model and its state):
//! counting a packet in at a switch and out when its transmission starts, sending pause and
//! resume frames, and waking lossless ports.

use crate::pfc::{frame_code, shared_part, Blocked, PauseRecord, FRAME_BYTES, NONE, RESUME_OFFSET};
use crate::sim::{Event, Simulation};
use fctlab_engine::Nanos;
use fctlab_net::{pfc_priority, PacketId, PacketMeta};

impl Simulation {
    /// A packet arrived at a switch by input `input`: counted against it; a pause goes back if
    /// it crossed `xoff`. False: the count is past the headroom, and the packet is dropped.
    #[cold]
    #[inline(never)]
    pub(crate) fn pfc_in(&mut self, input: u32, pid: PacketId, meta: &PacketMeta) -> bool {
        let now = self.now;
        let Some(pfc) = self.pfc.as_deref_mut() else { return true };
        let (i, prio, wire) = (input as usize, pfc_priority(meta), meta.wire_bytes as u64);
        let held = pfc.held[i][prio];
        let pause = match pfc.shared.as_mut() {
            Some(sh) => {
                // The fork's ingress admission: shared space up to the threshold, then headroom.
                let ingress = held - sh.hdrm[i][prio];
                let thr = sh.threshold(i);
                if shared_part(ingress + wire) > thr {
                    if sh.hdrm[i][prio] + wire > sh.headroom[i] {
                        return false;
                    }
                    sh.hdrm[i][prio] += wire;
                } else {
                    sh.used[sh.switch_of[i] as usize] += shared_part(ingress + wire) - shared_part(ingress);
                }
                sh.hdrm[i][prio] > 0 || shared_part(held - sh.hdrm[i][prio] + wire) >= sh.threshold(i).max(1)
            }
            None => {
                if pfc.limit[i] != u64::MAX && held.saturating_add(wire) > pfc.limit[i] {
                    return false;
                }
                held + wire > pfc.xoff[i]
            }
        };
        pfc.held[i][prio] += wire;
        pfc.max_held[i] = pfc.max_held[i].max(pfc.held[i][prio]);
        let k = pid.0 as usize;
        if pfc.input_of.len() <= k {
            pfc.input_of.resize(k + 1, NONE);
        }
        pfc.input_of[k] = input;
        if pause && pfc.sent[i] & (1 << prio) == 0 {
            pfc.sent[i] |= 1 << prio;
            self.pfc_send(i, prio, true, now);
        }
        true
    }

    /// A pause (or resume) of priority `prio` of port `input`, sent by the switch at its far
    /// end back on the reverse link.
    fn pfc_send(&mut self, input: usize, prio: usize, pause: bool, now: Nanos) {
        let back = &self.net.ports[input ^ 1];
        let t = now + back.rate.tx_time(FRAME_BYTES) + back.delay;
        self.events.push(t, Event::PfcFrame(frame_code(input, prio, pause)));
    }

    /// A packet held at a switch leaves its input's count (its transmission started, or it was
    /// dropped); a resume goes back when the count reaches `xon`.
    fn pfc_out(&mut self, pid: PacketId, meta: &PacketMeta) {
        let now = self.now;
        let Some(pfc) = self.pfc.as_deref_mut() else { return };
        let k = pid.0 as usize;
        let Some(&i) = pfc.input_of.get(k) else { return };
        if i == NONE {
            return;
        }
        pfc.input_of[k] = NONE;
        let (i, prio) = (i as usize, pfc_priority(meta));
        let (held, wire) = (pfc.held[i][prio], meta.wire_bytes as u64);
        pfc.held[i][prio] -= wire;
        let resume = match pfc.shared.as_mut() {
            Some(sh) => {
                // Out of the headroom first, then the shared bytes, then the reserve.
                let from_hdrm = sh.hdrm[i][prio].min(wire);
                let ingress = held - sh.hdrm[i][prio];
                sh.hdrm[i][prio] -= from_hdrm;
                let left = ingress - (wire - from_hdrm);
                sh.used[sh.switch_of[i] as usize] -= shared_part(ingress) - shared_part(left);
                sh.hdrm[i][prio] == 0
                    && (shared_part(left) == 0 || shared_part(left) + RESUME_OFFSET <= sh.threshold(i))
            }
            None => pfc.held[i][prio] <= pfc.xon[i],
        };
        if pfc.sent[i] & (1 << prio) != 0 && resume {
            pfc.sent[i] &= !(1 << prio);
            self.pfc_send(i, prio, false, now);
        }
    }

    /// After anything touched lossless port `port`: the packets whose transmission started
    /// leave their switch's count, and the port is woken when its transmitter frees.
    #[cold]
    #[inline(never)]
    pub(crate) fn pfc_touched(&mut self, port: usize) {
        let Some(pfc) = self.pfc.as_deref_mut() else { return };
        let mut started = std::mem::take(&mut pfc.started);
        self.net.ports[port].take_started(&mut started);
        for w in started.drain(..) {
            self.pfc_out(w.pkt, &w.meta);
        }
        let now = self.now;
        let wake = self.net.ports[port].pfc_wake(now);
        let Some(pfc) = self.pfc.as_deref_mut() else { return };
        pfc.started = started;
        if let Some(t) = wake {
            if pfc.wake_at[port] != t {
                pfc.wake_at[port] = t;
                self.events.push(t, Event::PfcWake(port as u32));
            }
        }
    }

    /// A dropped packet that a switch counted leaves the count.
    pub(crate) fn pfc_forget(&mut self, pid: PacketId, meta: &PacketMeta) {
        self.pfc_out(pid, meta);
    }

    /// A pause frame arrives at the port it stops or resumes.
    #[cold]
    #[inline(never)]
    pub(crate) fn on_pfc_frame(&mut self, code: u32) {
        let (port, prio, pause) = ((code >> 4) as usize, ((code >> 1) & 7) as usize, code & 1 == 1);
        if let Some(t) = self.net.ports[port].set_paused(self.now, prio, pause) {
            self.events.push(t, Event::Arrival(port as u32));
        }
        let blocked = if pause { self.blocked_at(port, prio) } else { None };
        if let Some(pfc) = self.pfc.as_deref_mut() {
            pfc.log.push(PauseRecord { time: self.now, port: port as u32, prio: prio as u8, pause, blocked });
        }
        self.pfc_touched(port);
        if pause {
            if let Some(cycle) = self.pause_cycle(port, prio) {
                self.stop_deadlocked(&cycle, prio);
            }
        }
    }

    /// Who a pause of `prio` at `port` holds up (see [`Blocked`]): found by looking through the
    /// paused port's waiting packets and the far-end switch's outputs, as the pause takes effect.
    fn blocked_at(&self, port: usize, prio: usize) -> Option<Blocked> {
        let pfc = self.pfc.as_deref()?;
        let queues = self.net.ports[port].pfc()?;
        let at = self.net.ports[port].to.0 as usize;
        // The far end's output holding the most bytes that came in by this port.
        let mut congested: Option<(u64, u32)> = None;
        for &q in pfc.outputs.get(at).map_or(&[][..], |v| &v[..]) {
            let Some(out) = self.net.ports[q as usize].pfc() else { continue };
            let bytes: u64 = out
                .waiting(prio)
                .filter(|w| pfc.input_of.get(w.pkt.0 as usize).copied() == Some(port as u32))
                .map(|w| w.meta.wire_bytes as u64)
                .sum();
            if bytes > 0 && congested.map_or(true, |(b, _)| bytes > b) {
                congested = Some((bytes, q));
            }
        }
        let congested = congested.map(|(_, q)| q);
        let (mut flows, mut victims) = (Vec::new(), Vec::new());
        let mut packets = 0u32;
        for w in queues.waiting(prio) {
            packets += 1;
            let f = w.meta.flow.0;
            flows.push(f);
            // (Under per-packet path choice a waiting packet's next port is chosen only when
            // it arrives: it is counted as no victim.)
            let next = match self.balance {
                None => self.flows.next_port(w.meta.flow, w.meta.hop).map(|(p, _)| p.0),
                Some(_) => None,
            };
            if congested.is_some() && next.is_some() && next != congested {
                victims.push(f);
            }
        }
        flows.sort_unstable();
        flows.dedup();
        victims.sort_unstable();
        victims.dedup();
        Some(Blocked { packets, flows: flows.len() as u32, victim_flows: victims.len() as u32, congested })
    }

    /// Whether port `start`, paused for `prio`, is in a cycle of ports that each wait on the
    /// next: the switch at a port's far end sent its pause, has not resumed it, and holds its
    /// packets of that priority only at output ports that are paused too. Nothing in such a
    /// cycle can move again (a resume on its way breaks it: its pause is no longer counted as
    /// sent). Returns the cycle, from `start`.
    fn pause_cycle(&self, start: usize, prio: usize) -> Option<Vec<usize>> {
        let pfc = self.pfc.as_deref()?;
        let stuck = |p: usize| -> Option<Vec<usize>> {
            if pfc.sent[p] & (1 << prio) == 0 {
                return None;
            }
            let at = self.net.ports[p].to.0 as usize;
            let mut next = Vec::new();
            for &q in &pfc.outputs[at] {
                let q = q as usize;
                let Some(queues) = self.net.ports[q].pfc() else { continue };
                // (Found by looking through the output's waiting packets: pauses are rare
                // beside packets, so no count is kept per packet.)
                let input_of = |w: &fctlab_net::Waiting| pfc.input_of.get(w.pkt.0 as usize).copied();
                if !queues.waiting(prio).any(|w| input_of(w) == Some(p as u32)) {
                    continue;
                }
                if !queues.is_paused(prio) {
                    return None; // some of its packets can leave
                }
                next.push(q);
            }
            Some(next)
        };
        // Depth-first over the ports each waits on, bounded by the ports there are.
        let mut path = vec![start];
        let mut stack = vec![stuck(start)?];
        let mut seen = vec![false; self.net.ports.len()];
        seen[start] = true;
        while let Some(top) = stack.last_mut() {
            let Some(q) = top.pop() else {
                stack.pop();
                path.pop();
                continue;
            };
            if q == start {
                return Some(path);
            }
            if seen[q] {
                continue;
            }
            seen[q] = true;
            if let Some(next) = stuck(q) {
                path.push(q);
                stack.push(next);
            }
        }
        None
    }

    /// A pause cycle: the run stops, and says which ports wait on one another.
    #[cold]
    fn stop_deadlocked(&mut self, cycle: &[usize], prio: usize) {
        let topo = &self.scenario.topology;
        let name = |p: usize| {
            let port = &self.net.ports[p];
            format!("{}->{}", topo.nodes[port.from.0 as usize].name, topo.nodes[port.to.0 as usize].name)
        };
        let ring: Vec<String> = cycle.iter().map(|&p| name(p)).collect();
        let m = format!(
            "priority flow control deadlocked at {:.6} s: the ports {} (priority {prio}) are each paused by a switch \
             that holds their packets behind the next one, and the last behind the first; the run stopped",
            self.now.as_secs_f64(),
            ring.join(", ")
        );
        if let Some(pfc) = self.pfc.as_deref_mut() {
            pfc.deadlock.get_or_insert(m);
        }
        self.stop_now();
    }

    /// A lossless port's transmitter frees: its next packet starts.
    #[cold]
    #[inline(never)]
    pub(crate) fn on_pfc_wake(&mut self, port: u32) {
        let p = port as usize;
        if let Some(pfc) = self.pfc.as_deref_mut() {
            if pfc.wake_at[p] == self.now {
                pfc.wake_at[p] = Nanos::MAX;
            }
        }
        if let Some(t) = self.net.ports[p].serve(self.now) {
            self.events.push(t, Event::Arrival(port));
        }
        self.pfc_touched(p);
    }

    /// The pause monitor: every pause and resume so far, in time order.
    pub fn pfc_log(&self) -> &[PauseRecord] {
        self.pfc.as_deref().map_or(&[], |p| &p.log)
    }

    /// The most bytes of one priority input `p`'s switch held from it, and its thresholds
    /// (pause, resume, drop), if the run is lossless.
    pub fn pfc_input(&self, p: usize) -> Option<(u64, (u64, u64, u64))> {
        self.pfc.as_deref().map(|x| (x.max_held[p], x.thresholds_of(p)))
    }

    /// The shared bytes in use at each switch of a lossless run over shared buffers (for tests).
    pub fn pfc_shared_used(&self) -> Option<&[u64]> {
        self.pfc.as_deref().and_then(|x| x.shared.as_ref()).map(|s| &s.used[..])
    }
}
