//! Router feedback (RCP, RACS, SDC): the algorithm's header stamped on the packets it asks
//! for, with its bytes on the wire and the run's owner of the header; the echo on ACKs handed
//! back to the algorithm; the header-only FIN that tells the routers the flow has ended.

use crate::cc::{AnyCc, CcState, SendContext};
use fctlab_net::packet::flags;
use fctlab_net::Packet;

/// A router-assisted flow's part of the sender.
#[derive(Copy, Clone, Debug, Default)]
pub(super) struct RouterFeedback {
    /// Which of the run's router-assisted protocols this flow's headers belong to.
    pub owner: u8,
    /// The header-only FIN went out.
    pub fin_sent: bool,
}

impl RouterFeedback {
    /// The packet `p` leaves: the algorithm's header goes on it if the algorithm adds one
    /// (its bytes added to the packet's).
    #[inline]
    pub fn stamp(&self, cc: &mut AnyCc, ctx: &SendContext, p: &mut Packet) {
        if cc.stamp(ctx, &mut p.router) {
            p.router.owner = self.owner;
            p.flags |= flags::ROUTER;
            p.wire_bytes += p.router.wire_bytes as u32;
        }
    }
}

/// A packet from the receiver that echoes a header hands it to the algorithm: a router's
/// feedback to its congestion control, a receiver's grant to its transport policy.
#[inline]
pub(super) fn on_echo(cc: &mut AnyCc, st: &mut CcState, p: &Packet) {
    if p.has(flags::ROUTER) {
        cc.on_echo(st, &p.router);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::newreno::NewRenoConfig;
    use crate::cc::rcp::{RcpConfig, RcpHeader};
    use crate::cc::CcConfig;
    use fctlab_engine::{BitsPerSec, Nanos};
    use fctlab_net::PacketKind;

    fn ctx() -> SendContext {
        SendContext {
            now: Nanos::ZERO,
            kind: PacketKind::Data,
            size: Some(10_000),
            bytes_sent: 1460,
            seq: 0,
            snd_una: 0,
            sacked_bytes: 0,
            srtt: Some(Nanos::from_micros(100)),
            mss_bytes: 1460,
        }
    }

    #[test]
    fn a_router_assisted_algorithm_stamps_its_header_with_its_bytes_and_owner() {
        let info = crate::FlowInfo { nic_rate: BitsPerSec(1_000_000_000), ..Default::default() };
        let mut cc = CcConfig::Rcp(RcpConfig::default()).build(&info);
        let mut p = Packet { kind: PacketKind::Data, wire_bytes: 1500, payload_bytes: 1460, ..Default::default() };
        RouterFeedback { owner: 2, fin_sent: false }.stamp(&mut cc, &ctx(), &mut p);
        assert!(p.has(flags::ROUTER));
        assert_eq!(p.router.owner, 2);
        assert!(p.router.wire_bytes > 0);
        assert_eq!(p.wire_bytes, 1500 + p.router.wire_bytes as u32);
        // The echo of a granted rate reaches the algorithm.
        let mut st = CcState { cwnd_bytes: 14600, ssthresh_bytes: u64::MAX, mss_bytes: 1460 };
        let mut ack = Packet { kind: PacketKind::Ack, flags: flags::ROUTER, ..Default::default() };
        ack.router = RcpHeader { rate_bps: 250_000_000, ..Default::default() }.header();
        on_echo(&mut cc, &mut st, &ack);
        assert_eq!(cc.pacing_rate(), Some(BitsPerSec(250_000_000)));
    }

    #[test]
    fn other_algorithms_leave_the_packet_as_it_is() {
        let mut cc = CcConfig::NewReno(NewRenoConfig {}).build(&Default::default());
        let mut p = Packet { kind: PacketKind::Data, wire_bytes: 1500, ..Default::default() };
        RouterFeedback::default().stamp(&mut cc, &ctx(), &mut p);
        assert!(!p.has(flags::ROUTER));
        assert_eq!(p.wire_bytes, 1500);
    }
}
