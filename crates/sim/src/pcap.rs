//! Packet captures (`[monitor] pcap`): the packets a host sends and receives, or that leave
//! one port, as classic pcap files that Wireshark, tcpdump, tshark and scapy read.
//!
//! The simulator's packets are fields, not bytes. Each captured packet is written as the
//! Ethernet, IPv4 and TCP headers those fields describe; its payload is not written (the
//! record's captured length ends with the TCP header, its original length counts the payload,
//! as a capture with a short snap length does). The rules, also in docs/results.md:
//! - **Addresses.** Node `i` (its index in the topology) is IPv4 `10.0.0.0 + i + 1` and MAC
//!   `02:00` followed by `i + 1` in four bytes. The Ethernet addresses are those of the link's
//!   two ends, the IP addresses those of the flow's hosts.
//! - **Ports.** Flow `f`'s sender uses port `1024 + f % 64511`, its receiver port
//!   `5000 + f / 64511`: every flow is its own TCP stream.
//! - **Sequence numbers.** The SYN and SYN-ACK have sequence number 0, a data byte at offset
//!   `s` of the flow has `s + 1` (as if both initial sequence numbers were 0), and an ACK of
//!   the flow's first `n` bytes acknowledges `n + 1`.
//! - **ECN.** ECT(0) and CE in the IP header; ECE and CWR in the TCP flags.
//! - **Options**, each written only if it still fits TCP's 40 bytes of options, in this order:
//!   SACK blocks (as many as fit), the router header (experimental option 253 with the
//!   RFC 6994 identifier 0x4643, then its first seven 32-bit words, 32 bytes in all), timestamps
//!   (kind 8: the send time and its echo in microseconds, 32 bits).
//! - **Timestamps of records**, in nanoseconds: a packet leaving a port when its transmission
//!   starts (where tcpdump on the sending interface stamps it), a packet a captured host
//!   receives when its last bit arrives.
//! - The TCP checksum is 0 (the payload it covers is not written); the IP checksum is right.

use crate::build::Network;
use fctlab_engine::Nanos;
use fctlab_net::packet::flags;
use fctlab_net::{NodeId, Packet, PacketKind};
use fctlab_scenario::{PcapConfig, Scenario};

/// Where a capture takes a port's packets: when they leave, or when they arrive at the far
/// end (a captured host's receiving side).
#[derive(Copy, Clone, Debug)]
struct Tap {
    file: u16,
    at_arrival: bool,
}

/// One captured packet: its time, the link's ends, and the packet as it was on the link.
struct Record {
    t: Nanos,
    from: NodeId,
    to: NodeId,
    pkt: Packet,
}

struct CaptureFile {
    name: String,
    records: Vec<Record>,
    missed: u64,
}

/// A finished capture: its name as in `[monitor] pcap`, the pcap file's bytes, the packets in
/// it and the packets inside the time window that the packet limit left out.
#[derive(Clone, Debug, PartialEq)]
pub struct PcapFile {
    pub name: String,
    pub bytes: Vec<u8>,
    pub packets: u64,
    pub missed: u64,
}

/// The captures of a run, while it runs.
pub(crate) struct Capture {
    /// The taps on each port (most have none).
    taps: Vec<Vec<Tap>>,
    files: Vec<CaptureFile>,
    from: Nanos,
    until: Option<Nanos>,
    max_packets: u64,
}

impl Capture {
    /// The captures `[monitor] pcap` asks for (None when it asks for none).
    pub fn new(scenario: &Scenario, net: &Network) -> Option<Box<Capture>> {
        let cfg: &PcapConfig = scenario.monitor.pcap.as_ref()?;
        let topo = &scenario.topology;
        let mut taps = vec![Vec::new(); net.ports.len()];
        for (k, point) in cfg.points.iter().enumerate() {
            let file = k as u16;
            let link = point.split_once("->").map(|(a, b)| (topo.find(a.trim()), topo.find(b.trim())));
            for (pi, p) in net.ports.iter().enumerate() {
                let (from, to) = (p.from.0 as usize, p.to.0 as usize);
                match link {
                    Some((a, b)) => {
                        if a == Some(from) && b == Some(to) {
                            taps[pi].push(Tap { file, at_arrival: false });
                        }
                    }
                    None => {
                        let host = topo.find(point);
                        if host == Some(from) {
                            taps[pi].push(Tap { file, at_arrival: false });
                        } else if host == Some(to) {
                            taps[pi].push(Tap { file, at_arrival: true });
                        }
                    }
                }
            }
        }
        let files =
            cfg.points.iter().map(|n| CaptureFile { name: n.clone(), records: Vec::new(), missed: 0 }).collect();
        Some(Box::new(Capture { taps, files, from: cfg.from, until: cfg.until, max_packets: cfg.max_packets }))
    }

    /// Whether port `port` feeds a capture.
    #[inline]
    pub fn taps(&self, port: usize) -> bool {
        !self.taps[port].is_empty()
    }

    /// The packet `pkt` crossed port `port` from `from` to `to`: its transmission started at
    /// `tx_start` and it arrives at `arrive`.
    pub fn record(&mut self, port: usize, from: NodeId, to: NodeId, tx_start: Nanos, arrive: Nanos, pkt: &Packet) {
        for tap in &self.taps[port] {
            let t = if tap.at_arrival { arrive } else { tx_start };
            if t < self.from || self.until.is_some_and(|u| t >= u) {
                continue;
            }
            let f = &mut self.files[tap.file as usize];
            if f.records.len() as u64 >= self.max_packets {
                f.missed += 1;
            } else {
                f.records.push(Record { t, from, to, pkt: pkt.clone() });
            }
        }
    }

    /// Every host's address as a hosts file ("10.0.0.3 s0" lines), which `tshark -H` and
    /// Wireshark read to show the topology's names.
    pub fn hosts_file(scenario: &Scenario) -> String {
        let mut out = String::from("# the hosts of the captures in pcap/: `tshark -H hosts -N n -r FILE.pcap`\n");
        for (i, n) in scenario.topology.nodes.iter().enumerate() {
            if n.kind == fctlab_net::NodeKind::Host {
                let ip = ipv4_of(NodeId(i as u32));
                out.push_str(&format!("{}.{}.{}.{} {}\n", ip[0], ip[1], ip[2], ip[3], n.name));
            }
        }
        out
    }

    /// The pcap files so far, their records in time order.
    pub fn files(&self) -> Vec<PcapFile> {
        self.files
            .iter()
            .map(|f| {
                let mut order: Vec<&Record> = f.records.iter().collect();
                order.sort_by_key(|r| r.t);
                let mut bytes = global_header();
                for r in order {
                    write_record(&mut bytes, r);
                }
                PcapFile { name: f.name.clone(), bytes, packets: f.records.len() as u64, missed: f.missed }
            })
            .collect()
    }
}

/// Classic pcap's file header: nanosecond timestamps (magic 0xa1b23c4d), version 2.4,
/// Ethernet frames.
fn global_header() -> Vec<u8> {
    let mut b = Vec::with_capacity(1 << 16);
    b.extend_from_slice(&0xa1b2_3c4du32.to_le_bytes());
    b.extend_from_slice(&2u16.to_le_bytes());
    b.extend_from_slice(&4u16.to_le_bytes());
    b.extend_from_slice(&0i32.to_le_bytes()); // GMT
    b.extend_from_slice(&0u32.to_le_bytes()); // accuracy
    b.extend_from_slice(&65_535u32.to_le_bytes()); // snap length
    b.extend_from_slice(&1u32.to_le_bytes()); // LINKTYPE_ETHERNET
    b
}

/// Node `n`'s IPv4 address: 10.0.0.0 + n + 1.
pub fn ipv4_of(n: NodeId) -> [u8; 4] {
    (0x0a00_0000u32 + n.0 + 1).to_be_bytes()
}

fn mac_of(n: NodeId) -> [u8; 6] {
    let i = (n.0 + 1).to_be_bytes();
    [0x02, 0x00, i[0], i[1], i[2], i[3]]
}

/// Flow `f`'s TCP ports: (sender's, receiver's).
pub fn ports_of(flow: u32) -> (u16, u16) {
    ((1024 + flow % 64_511) as u16, (5000 + flow / 64_511) as u16)
}

const TCP_FIN: u8 = 0x01;
const TCP_SYN: u8 = 0x02;
const TCP_ACK: u8 = 0x10;
const TCP_ECE: u8 = 0x40;
const TCP_CWR: u8 = 0x80;
/// TCP options fit in 40 bytes (a 60-byte header).
const MAX_OPTIONS: usize = 40;
/// RFC 6994's experiment identifier for the router header option ("FC").
pub const ROUTER_OPTION_EXID: u16 = 0x4643;

/// The TCP options of `p`: SACK blocks, router header, timestamps, each if it fits.
fn tcp_options(p: &Packet) -> Vec<u8> {
    let mut o = Vec::with_capacity(MAX_OPTIONS);
    let seq32 = |v: u64| ((v + 1) as u32).to_be_bytes();
    let sacks = p.sack_len as usize;
    if sacks > 0 && p.kind == PacketKind::Ack {
        let fit = sacks.min((MAX_OPTIONS - 4) / 8);
        o.extend_from_slice(&[1, 1, 5, (2 + 8 * fit) as u8]);
        for b in &p.sack[..fit] {
            o.extend_from_slice(&seq32(b.start));
            o.extend_from_slice(&seq32(b.end));
        }
    }
    if p.has(flags::ROUTER) && o.len() + 32 <= MAX_OPTIONS {
        o.extend_from_slice(&[253, 32]);
        o.extend_from_slice(&ROUTER_OPTION_EXID.to_be_bytes());
        // Its first seven words: a longer header (HPCC's telemetry) does not fit the options.
        for w in &p.router.words[..7] {
            o.extend_from_slice(&w.to_be_bytes());
        }
    }
    if o.len() + 12 <= MAX_OPTIONS {
        o.extend_from_slice(&[1, 1, 8, 10]);
        o.extend_from_slice(&((p.ts_sent_ns / 1000) as u32).to_be_bytes());
        o.extend_from_slice(&((p.ts_echo_ns / 1000) as u32).to_be_bytes());
    }
    o
}

/// The IPv4 header checksum (RFC 791): the ones' complement of the ones' complement sum.
fn ip_checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = h.chunks(2).map(|c| u16::from_be_bytes([c[0], c[1]]) as u32).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Appends one record: the record header, then Ethernet, IPv4 and TCP headers.
fn write_record(out: &mut Vec<u8>, r: &Record) {
    let p = &r.pkt;
    let (sport, dport) = ports_of(p.flow.0);
    let reverse = p.kind.is_reverse();
    let (sport, dport) = if reverse { (dport, sport) } else { (sport, dport) };
    let (seq, ack, mut tcp_flags) = match p.kind {
        PacketKind::Syn => (0, 0, TCP_SYN),
        PacketKind::SynAck => (0, 1, TCP_SYN | TCP_ACK),
        // The `roce` transport's NACK is written as the duplicate ACK it amounts to, its CNP as
        // an ACK with ECE.
        PacketKind::Ack | PacketKind::Nack | PacketKind::Pull => (1, (p.ack + 1) as u32, TCP_ACK),
        PacketKind::Cnp => (1, (p.ack + 1) as u32, TCP_ACK | TCP_ECE),
        PacketKind::Data => ((p.seq + 1) as u32, 1, TCP_ACK),
        PacketKind::Fin => ((p.seq + 1) as u32, 1, TCP_ACK | TCP_FIN),
    };
    if p.has(flags::ECE) {
        tcp_flags |= TCP_ECE;
    }
    if p.has(flags::CWR) {
        tcp_flags |= TCP_CWR;
    }
    let opts = tcp_options(p);
    let pad = (4 - opts.len() % 4) % 4;
    let tcp_len = 20 + opts.len() + pad;
    let ip_total = 20 + tcp_len + p.payload_bytes as usize;
    let captured = 14 + 20 + tcp_len;
    out.extend_from_slice(&((r.t.as_nanos() / 1_000_000_000) as u32).to_le_bytes());
    out.extend_from_slice(&((r.t.as_nanos() % 1_000_000_000) as u32).to_le_bytes());
    out.extend_from_slice(&(captured as u32).to_le_bytes());
    out.extend_from_slice(&((14 + ip_total) as u32).to_le_bytes());
    // Ethernet
    out.extend_from_slice(&mac_of(r.to));
    out.extend_from_slice(&mac_of(r.from));
    out.extend_from_slice(&0x0800u16.to_be_bytes());
    // IPv4
    let ecn = if p.has(flags::CE) {
        0b11
    } else if p.has(flags::ECT) {
        0b10
    } else {
        0
    };
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[1] = ecn;
    ip[2..4].copy_from_slice(&(ip_total.min(65_535) as u16).to_be_bytes());
    ip[6] = 0x40; // don't fragment
    ip[8] = 64; // TTL
    ip[9] = 6; // TCP
    ip[12..16].copy_from_slice(&ipv4_of(p.src));
    ip[16..20].copy_from_slice(&ipv4_of(p.dst));
    let sum = ip_checksum(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    out.extend_from_slice(&ip);
    // TCP
    out.extend_from_slice(&sport.to_be_bytes());
    out.extend_from_slice(&dport.to_be_bytes());
    out.extend_from_slice(&seq.to_be_bytes());
    out.extend_from_slice(&ack.to_be_bytes());
    out.push(((tcp_len / 4) as u8) << 4);
    out.push(tcp_flags);
    out.extend_from_slice(&65_535u16.to_be_bytes()); // window
    out.extend_from_slice(&[0, 0, 0, 0]); // checksum (payload not captured), urgent pointer
    out.extend_from_slice(&opts);
    out.extend(std::iter::repeat(1u8).take(pad)); // NOP padding
}

#[cfg(test)]
mod tests {
    use super::*;
    use fctlab_net::{FlowId, SackBlock};

    fn record(p: Packet) -> Vec<u8> {
        let mut out = Vec::new();
        write_record(&mut out, &Record { t: Nanos::from_nanos(1_500_000_123), from: NodeId(0), to: NodeId(5), pkt: p });
        out
    }

    #[test]
    fn a_data_packet_as_headers() {
        let p = Packet {
            flow: FlowId(3),
            src: NodeId(0),
            dst: NodeId(2),
            kind: PacketKind::Data,
            flags: flags::ECT | flags::CE,
            payload_bytes: 1460,
            seq: 2920,
            ts_sent_ns: 7_000,
            ..Default::default()
        };
        let b = record(p);
        // record header: 1 s and 500000123 ns; 14 + 20 + 32 captured, 14 + 20 + 32 + 1460 long
        assert_eq!(&b[0..4], &1u32.to_le_bytes());
        assert_eq!(&b[4..8], &500_000_123u32.to_le_bytes());
        assert_eq!(&b[8..12], &66u32.to_le_bytes());
        assert_eq!(&b[12..16], &1526u32.to_le_bytes());
        let eth = &b[16..];
        assert_eq!(&eth[0..6], &[2, 0, 0, 0, 0, 6]);
        assert_eq!(&eth[6..12], &[2, 0, 0, 0, 0, 1]);
        let ip = &eth[14..34];
        assert_eq!(ip[1], 0b11, "CE");
        assert_eq!(u16::from_be_bytes([ip[2], ip[3]]), 1512);
        assert_eq!((&ip[12..16], &ip[16..20]), (&[10, 0, 0, 1][..], &[10, 0, 0, 3][..]));
        assert_eq!(ip_checksum(ip), 0, "a header with its checksum sums to 0xffff");
        let tcp = &eth[34..];
        assert_eq!(u16::from_be_bytes([tcp[0], tcp[1]]), 1027);
        assert_eq!(u16::from_be_bytes([tcp[2], tcp[3]]), 5000);
        assert_eq!(u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]), 2921);
        assert_eq!(tcp[12] >> 4, 8, "20 bytes and the timestamp option");
        assert_eq!(tcp[13], TCP_ACK);
        assert_eq!(&tcp[20..24], &[1, 1, 8, 10]);
        assert_eq!(&tcp[24..28], &7u32.to_be_bytes());
    }

    #[test]
    fn an_ack_carries_its_sack_blocks_and_flags() {
        let mut sack = [SackBlock::default(); 3];
        sack[0] = SackBlock { start: 2920, end: 5840 };
        sack[1] = SackBlock { start: 8760, end: 10220 };
        let p = Packet {
            flow: FlowId(64_512),
            src: NodeId(2),
            dst: NodeId(0),
            kind: PacketKind::Ack,
            flags: flags::ECE,
            sack_len: 2,
            sack,
            ack: 1460,
            ..Default::default()
        };
        let b = record(p);
        let tcp = &b[16 + 14 + 20..];
        // the receiver's port first: flow 64512 is port 1025 at the sender, 5001 at the receiver
        assert_eq!(u16::from_be_bytes([tcp[0], tcp[1]]), 5001);
        assert_eq!(u16::from_be_bytes([tcp[2], tcp[3]]), 1025);
        assert_eq!(u32::from_be_bytes([tcp[8], tcp[9], tcp[10], tcp[11]]), 1461);
        assert_eq!(tcp[13], TCP_ACK | TCP_ECE);
        assert_eq!(&tcp[20..24], &[1, 1, 5, 18]);
        assert_eq!(&tcp[24..28], &2921u32.to_be_bytes());
        assert_eq!(&tcp[36..40], &10_221u32.to_be_bytes());
        // 20 + 20 (SACK) + 12 (timestamps) = 52 bytes
        assert_eq!(tcp[12] >> 4, 13);
    }

    #[test]
    fn options_that_do_not_fit_are_left_out() {
        let mut p = Packet { kind: PacketKind::Ack, flags: flags::ROUTER, sack_len: 3, ..Default::default() };
        p.router.words[..7].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7]);
        // Three SACK blocks take 28 bytes with their NOPs: then the router header (32) does
        // not fit, timestamps (12) do.
        let o = tcp_options(&p);
        assert_eq!((o.len(), &o[28..32]), (40, &[1, 1, 8, 10][..]));
        p.sack_len = 0;
        let o = tcp_options(&p);
        assert_eq!((o[0], o[1], &o[2..4]), (253, 32, &ROUTER_OPTION_EXID.to_be_bytes()[..]));
        assert_eq!(o.len(), 32, "the router header, and no room for timestamps");
    }
}
