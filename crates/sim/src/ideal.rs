//! The ideal flow completion time: a flow alone on its path, with no window limit
//! (`ideal_fct_s` in `docs/results.md`).

use fctlab_engine::{BitsPerSec, Nanos};
use fctlab_net::{Port, PortId};
use fctlab_transport::TcpConfig;

/// Best-case completion time of `size` bytes over the path `fwd` (ACKs back over `rev`): all
/// segments leave the sender back to back at time zero and cross the store-and-forward path
/// with no other traffic and no window limit; the flow completes when the ACK of the last
/// segment is back. The pipeline is computed packet by packet (a packet starts on a hop when
/// it has arrived there and the previous packet has left); once it is in steady state, the
/// remaining full-size segments advance every hop by the largest per-hop serialization time,
/// so long flows cost no more than short ones. A handshake adds one round trip of
/// header-only packets.
pub(crate) fn ideal_fct(size: u64, fwd: &[PortId], rev: &[PortId], ports: &[Port], tcp: &TcpConfig) -> Nanos {
    let mss = tcp.mss_bytes as u64;
    let hdr = tcp.header_bytes as u64;
    let segments = size.div_ceil(mss).max(1);
    let first_wire = size.min(mss) + hdr;
    let full_wire = mss + hdr;
    let last_wire = size.saturating_sub((segments - 1) * mss) + hdr;
    let hops: Vec<(BitsPerSec, Nanos)> =
        fwd.iter().map(|p| (ports[p.0 as usize].rate, ports[p.0 as usize].delay)).collect();
    let mut fin = vec![Nanos::ZERO; hops.len()];
    let send = |bytes: u64, fin: &mut [Nanos]| -> Nanos { pipeline(&hops, Nanos::ZERO, bytes, fin) };
    let mut arrival = send(first_wire, &mut fin);
    let mut prev_arrival = None;
    if segments >= 2 {
        let middle = segments - 2;
        let direct = middle.min(hops.len() as u64 + 2);
        let mut a = arrival;
        for _ in 0..direct {
            a = send(full_wire, &mut fin);
        }
        let rest = middle - direct;
        if rest > 0 {
            let step = hops.iter().map(|(r, _)| r.tx_time(full_wire)).max().unwrap_or(Nanos::ZERO);
            for f in fin.iter_mut() {
                *f += step.mul(rest);
            }
            a += step.mul(rest);
        }
        prev_arrival = Some(a);
        arrival = send(last_wire, &mut fin);
    }
    // The last ACK may queue behind the one before it (a short last segment follows its
    // predecessor closely); earlier ACKs are spaced by full-size data and cannot interfere.
    let rhops: Vec<(BitsPerSec, Nanos)> =
        rev.iter().map(|p| (ports[p.0 as usize].rate, ports[p.0 as usize].delay)).collect();
    let mut rfin = vec![Nanos::ZERO; rhops.len()];
    if let Some(a) = prev_arrival {
        pipeline(&rhops, a, hdr, &mut rfin);
    }
    let mut t = pipeline(&rhops, arrival, hdr, &mut rfin);
    if tcp.handshake {
        for p in fwd.iter().chain(rev) {
            let port = &ports[p.0 as usize];
            t += port.rate.tx_time(hdr) + port.delay;
        }
    }
    t
}

/// The round trip of one full data packet and its acknowledgement over `fwd` and `rev` with
/// no other traffic: the base RTT of HPCC and the like.
pub(crate) fn base_rtt(fwd: &[PortId], rev: &[PortId], ports: &[Port], tcp: &TcpConfig) -> Nanos {
    let one = TcpConfig { handshake: false, ..*tcp };
    ideal_fct(tcp.mss_bytes as u64, fwd, rev, ports, &one)
}

/// Sends one packet of `bytes` into a store-and-forward path at time `at`; `fin` holds each
/// hop's finish time of the previous packet and is updated. Returns the arrival time.
fn pipeline(hops: &[(BitsPerSec, Nanos)], at: Nanos, bytes: u64, fin: &mut [Nanos]) -> Nanos {
    let mut arrive = at;
    for (i, &(rate, delay)) in hops.iter().enumerate() {
        let start = arrive.max(fin[i]);
        fin[i] = start + rate.tx_time(bytes);
        arrive = fin[i] + delay;
    }
    arrive
}
