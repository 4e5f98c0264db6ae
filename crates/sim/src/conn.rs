//! A flow's connection: both ends, on the transport its protocol runs on (TCP, the `roce`
//! transport's go-back-N messages, or the `ndp`, `eqds` and `uet` transports made for trimming
//! switches), behind the few calls the simulation makes.

use fctlab_engine::{BitsPerSec, Nanos};
use fctlab_net::{FlowId, NodeId, Packet};
use fctlab_transport::transport::HostReceiver;
use fctlab_transport::{
    AnyCc, EqdsReceiver, EqdsSender, NdpReceiver, NdpSender, RoceReceiver, RoceSender, TcpConfig, TcpReceiver,
    TcpSender, Transport, TransportKind, UetSender,
};

/// Both ends of one flow's connection. (Always boxed in its flow's state: a queue pair takes
/// a TCP connection's room, and no flow holds more than one.)
#[allow(clippy::large_enum_variant)]
// (A tag of its own: each call reads it at once, rather than working it out from a field.)
#[repr(u8)]
pub(crate) enum Conn {
    /// A TCP connection (the `tcp` and `homa` transports).
    Tcp { snd: TcpSender, rcv: TcpReceiver },
    /// An RDMA queue pair (the `roce` transport).
    Roce { snd: RoceSender, rcv: RoceReceiver },
    /// An NDP message (the `ndp` transport).
    Ndp { snd: NdpSender, rcv: NdpReceiver },
    /// An Ultra Ethernet message under a sender's window (the `uet` transport; NDP's
    /// receiver, without pulls).
    Uet { snd: UetSender, rcv: NdpReceiver },
    /// An EQDS datagram flow (the `eqds` transport).
    Eqds { snd: EqdsSender, rcv: EqdsReceiver },
}

/// What the window trace samples of a sender.
pub(crate) struct WindowView {
    pub acked: u64,
    pub cwnd_bytes: u64,
    pub ssthresh_bytes: Option<u64>,
    pub weight: Option<f64>,
    pub pacing: Option<BitsPerSec>,
}

impl Conn {
    /// A TCP connection (the `tcp` and `homa` transports): its sender, with its router
    /// header's `owner` for a router-assisted protocol, and its receiver, which follows the
    /// grants of its receiving `host` for a receiver-driven one.
    #[allow(clippy::too_many_arguments)]
    pub fn new_tcp(
        id: FlowId,
        (src, dst): (NodeId, NodeId),
        size: Option<u64>,
        tcp: &TcpConfig,
        cc: AnyCc,
        ecn: bool,
        owner: Option<u8>,
        host: Option<&dyn HostReceiver>,
    ) -> Box<Conn> {
        let mut snd = TcpSender::new(id, src, dst, size, tcp, cc, ecn);
        if let Some(o) = owner {
            snd.set_router_owner(o);
        }
        // the receiver takes the sender's settings (ns-2's modes are tcp's and atcp's only)
        let mut rcv = TcpReceiver::new(id, dst, src, snd.config());
        if let Some(r) = host {
            let size = size.unwrap_or(u64::MAX);
            rcv.expect_grants(size, r.unscheduled(size), r.resend_timeout());
        }
        Box::new(Conn::Tcp { snd, rcv })
    }

    /// A connection on a transport made for trimming switches: `ndp`, `eqds`, or else `uet`.
    #[allow(clippy::too_many_arguments)]
    pub fn new_trimmed(
        kind: TransportKind,
        id: FlowId,
        (src, dst): (NodeId, NodeId),
        size: Option<u64>,
        tcp: &TcpConfig,
        cc: AnyCc,
        ecn: bool,
        line_rate: BitsPerSec,
    ) -> Box<Conn> {
        Box::new(match kind {
            TransportKind::Ndp => Conn::Ndp {
                snd: NdpSender::new(id, src, dst, size, tcp, cc, ecn),
                rcv: NdpReceiver::new(id, dst, src, size, tcp),
            },
            TransportKind::Eqds => Conn::Eqds {
                snd: EqdsSender::new(id, src, dst, size, tcp, cc, ecn, line_rate),
                rcv: EqdsReceiver::new(id, dst, src, size, tcp),
            },
            _ => Conn::Uet {
                snd: UetSender::new(id, src, dst, size, tcp, cc),
                rcv: NdpReceiver::new(id, dst, src, size, tcp),
            },
        })
    }

    /// The sending side.
    #[inline]
    pub fn sender(&self) -> &dyn Transport {
        match self {
            Conn::Tcp { snd, .. } => snd,
            Conn::Roce { snd, .. } => snd,
            Conn::Ndp { snd, .. } => snd,
            Conn::Uet { snd, .. } => snd,
            Conn::Eqds { snd, .. } => snd,
        }
    }

    /// The TCP ends, for what only TCP has (grants, the scheduling layer's windows).
    #[inline]
    pub fn tcp(&self) -> Option<(&TcpSender, &TcpReceiver)> {
        match self {
            Conn::Tcp { snd, rcv } => Some((snd, rcv)),
            Conn::Roce { .. } | Conn::Ndp { .. } | Conn::Uet { .. } | Conn::Eqds { .. } => None,
        }
    }
    #[inline]
    pub fn tcp_mut(&mut self) -> Option<(&mut TcpSender, &mut TcpReceiver)> {
        match self {
            Conn::Tcp { snd, rcv } => Some((snd, rcv)),
            Conn::Roce { .. } | Conn::Ndp { .. } | Conn::Uet { .. } | Conn::Eqds { .. } => None,
        }
    }

    /// A queue pair's NIC can take its next packet at `at` (None: now); TCP ignores it.
    #[inline]
    pub fn set_nic_ready(&mut self, at: Option<Nanos>) {
        if let Conn::Roce { snd, .. } = self {
            snd.set_nic_ready(at);
        }
    }

    /// Whether the connection is a queue pair (its NIC arbitrates among them).
    #[inline]
    pub fn is_roce(&self) -> bool {
        matches!(self, Conn::Roce { .. })
    }

    /// Whether the connection is an NDP message or an EQDS flow (its receiving host's pacer
    /// pulls for it).
    #[inline]
    pub fn is_pulled(&self) -> bool {
        matches!(self, Conn::Ndp { .. } | Conn::Eqds { .. })
    }

    pub fn start(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        match self {
            Conn::Tcp { snd, .. } => snd.start(now, out),
            Conn::Roce { snd, .. } => snd.start(now, out),
            Conn::Ndp { snd, .. } => snd.start(now, out),
            Conn::Uet { snd, .. } => snd.start(now, out),
            Conn::Eqds { snd, .. } => snd.start(now, out),
        }
    }

    /// A packet for the receiving end (data, a SYN). True when the receiving host's side of a
    /// receiver-driven protocol must decide grants.
    #[inline]
    pub fn on_data(&mut self, now: Nanos, p: &Packet, out: &mut Vec<Packet>) -> bool {
        // (TCP first, by one comparison: the other kinds behind a call of their own.)
        match self {
            Conn::Tcp { rcv, .. } => rcv.on_packet(now, p, out),
            other => other.on_data_other(now, p, out),
        }
    }

    #[inline(never)]
    fn on_data_other(&mut self, now: Nanos, p: &Packet, out: &mut Vec<Packet>) -> bool {
        match self {
            Conn::Tcp { rcv, .. } => rcv.on_packet(now, p, out),
            Conn::Roce { rcv, .. } => {
                rcv.on_packet(now, p, out);
                false
            }
            Conn::Ndp { rcv, .. } => rcv.on_packet(now, p, out),
            Conn::Uet { rcv, .. } => {
                rcv.on_packet(now, p, out);
                false
            }
            Conn::Eqds { rcv, .. } => {
                rcv.on_packet(now, p, out);
                true
            }
        }
    }

    /// A packet for the sending end (an ACK, a NACK, a CNP, a SYN-ACK).
    #[inline]
    pub fn on_reply(&mut self, now: Nanos, p: &Packet, out: &mut Vec<Packet>) {
        match self {
            Conn::Tcp { snd, .. } => snd.on_packet(now, p, out),
            other => other.on_reply_other(now, p, out),
        }
    }

    #[inline(never)]
    fn on_reply_other(&mut self, now: Nanos, p: &Packet, out: &mut Vec<Packet>) {
        match self {
            Conn::Tcp { snd, .. } => snd.on_packet(now, p, out),
            Conn::Roce { snd, .. } => snd.on_packet(now, p, out),
            Conn::Ndp { snd, .. } => snd.on_packet(now, p, out),
            Conn::Uet { snd, .. } => snd.on_packet(now, p, out),
            Conn::Eqds { snd, .. } => snd.on_packet(now, p, out),
        }
    }

    /// None when the connection is complete, else when its sender's and its receiver's timers
    /// are due (one dispatch on the transport, for the step after every activity).
    #[inline]
    pub fn open_deadlines(&self) -> Option<(Option<Nanos>, Option<Nanos>)> {
        match self {
            Conn::Tcp { snd, rcv } => {
                if snd.is_complete() {
                    None
                } else {
                    Some((snd.timer_deadline(), rcv.delack_deadline()))
                }
            }
            other => other.open_deadlines_other(),
        }
    }

    #[inline(never)]
    fn open_deadlines_other(&self) -> Option<(Option<Nanos>, Option<Nanos>)> {
        let t = self.sender();
        (!t.is_complete()).then(|| (t.timer_deadline(), self.receiver_deadline()))
    }

    /// When the sender's timer is due.
    #[inline]
    pub fn sender_deadline(&self) -> Option<Nanos> {
        match self {
            Conn::Tcp { snd, .. } => snd.timer_deadline(),
            Conn::Roce { snd, .. } => snd.timer_deadline(),
            Conn::Ndp { snd, .. } => snd.timer_deadline(),
            Conn::Uet { snd, .. } => snd.timer_deadline(),
            Conn::Eqds { snd, .. } => snd.timer_deadline(),
        }
    }

    /// When the receiver's timer (delayed ACK, resend request) is due.
    #[inline]
    pub fn receiver_deadline(&self) -> Option<Nanos> {
        match self {
            Conn::Tcp { rcv, .. } => rcv.delack_deadline(),
            Conn::Roce { .. } | Conn::Ndp { .. } | Conn::Uet { .. } | Conn::Eqds { .. } => None,
        }
    }

    pub fn on_sender_timer(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        match self {
            Conn::Tcp { snd, .. } => snd.on_timer(now, out),
            Conn::Roce { snd, .. } => snd.on_timer(now, out),
            Conn::Ndp { snd, .. } => snd.on_timer(now, out),
            Conn::Uet { snd, .. } => snd.on_timer(now, out),
            Conn::Eqds { snd, .. } => snd.on_timer(now, out),
        }
    }

    pub fn on_receiver_timer(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        if let Conn::Tcp { rcv, .. } = self {
            rcv.on_delack_timer(now, out)
        }
    }

    /// In-order bytes the receiver has.
    pub fn bytes_delivered(&self) -> u64 {
        match self {
            Conn::Tcp { rcv, .. } => rcv.bytes_delivered(),
            Conn::Roce { rcv, .. } => rcv.bytes_delivered(),
            Conn::Ndp { rcv, .. } => rcv.bytes_delivered(),
            Conn::Uet { rcv, .. } => rcv.bytes_delivered(),
            Conn::Eqds { rcv, .. } => rcv.bytes_delivered(),
        }
    }

    pub fn srtt(&self) -> Option<Nanos> {
        match self {
            Conn::Tcp { snd, .. } => snd.srtt(),
            Conn::Roce { snd, .. } => snd.srtt(),
            Conn::Ndp { snd, .. } => snd.srtt(),
            Conn::Uet { snd, .. } => snd.srtt(),
            Conn::Eqds { snd, .. } => snd.srtt(),
        }
    }

    /// The window and rate the window trace records.
    pub fn window_view(&self) -> WindowView {
        match self {
            Conn::Tcp { snd, .. } => WindowView {
                acked: snd.bytes_acked(),
                cwnd_bytes: snd.st.cwnd_bytes,
                ssthresh_bytes: snd.st.ssthresh(),
                weight: snd.cc.weight(),
                pacing: snd.pacing_rate(),
            },
            Conn::Roce { snd, .. } => WindowView {
                acked: snd.bytes_acked(),
                cwnd_bytes: snd.st.cwnd_bytes.min(u64::MAX / 4),
                ssthresh_bytes: None,
                weight: snd.cc.weight(),
                pacing: Some(snd.rate()),
            },
            Conn::Ndp { snd, .. } => WindowView {
                acked: snd.bytes_acked(),
                cwnd_bytes: snd.st.cwnd_bytes,
                ssthresh_bytes: None,
                weight: None,
                pacing: None,
            },
            Conn::Eqds { snd, .. } => WindowView {
                acked: snd.bytes_acked(),
                cwnd_bytes: snd.st.cwnd_bytes,
                ssthresh_bytes: None,
                weight: None,
                pacing: None,
            },
            Conn::Uet { snd, .. } => WindowView {
                acked: snd.bytes_acked(),
                cwnd_bytes: snd.st.cwnd_bytes,
                ssthresh_bytes: None,
                weight: None,
                pacing: None,
            },
        }
    }
}
