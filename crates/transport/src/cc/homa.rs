//! Homa (Montazeri et al., "Homa: A Receiver-Driven Low-Latency Transport Protocol Using
//! Network Priorities", SIGCOMM 2018), over strict-priority ports (`queue = "priority"`).
//!
//! The receiver decides. A message sends its first `homa_rtt_bytes` (one bandwidth-delay
//! product, rounded up to whole segments) at once, unscheduled; every further byte waits for a
//! grant from the receiving host. Each receiving host keeps its incoming messages
//! ([`HomaGrants`]) and, whenever one of their packets arrives, grants the
//! `homa_overcommit` messages with the fewest bytes left (SRPT, overcommitted so that the
//! downlink stays busy when a sender stalls) up to one `homa_rtt_bytes` beyond what it has
//! received. There are no per-packet acknowledgements: the receiver sends grants, resend
//! requests, and one acknowledgement when the whole message is in.
//!
//! Priorities, band 0 first, of `homa_bands` (default 8):
//! - unscheduled packets take one of the highest bands by their message's size: band `i` for
//!   sizes up to `homa_unscheduled_cutoffs[i]`, the band after the last cutoff above it (no
//!   cutoffs: every unscheduled packet in band 0);
//! - scheduled packets take the band their latest grant names: of the granted messages, the
//!   one with the fewest bytes left gets the highest scheduled band, and with fewer granted
//!   messages than scheduled bands the lowest ones are used (as the paper assigns them, so
//!   that a new shorter message can still preempt);
//! - grants, resend requests and acknowledgements travel in band 0.
//!
//! Losses. The receiver asks again (a RESEND for the first missing range) when granted or
//! unscheduled bytes have not arrived for `homa_resend_timeout`; the sender resends that
//! range. A message whose every unscheduled packet was lost is unknown to its receiver: its
//! sender's own timer (`homa_timeout`, doubling) then sends one byte of it, which introduces
//! the message, or, for a message the receiver knows but has not granted yet, gets its
//! latest grant back. The window plays no part: the sender sends what it is granted.
//!
//! `homa_unscheduled_cutoffs` come from the workload in the paper: unscheduled bands in
//! proportion to the share of bytes sent unscheduled, with cutoffs that give each such band an
//! equal share of them. The default (no cutoffs: one unscheduled band, seven scheduled, all
//! seven granted at once) is what that rule gives for the web-search and data-mining
//! distributions, whose bytes lie almost all in large messages (docs/size_aware.md).
//!
//! The sender sends its messages shortest first: Homa's hosts are to run `nic_queue =
//! "pfabric"` (the most urgent flow's packets first, by their rank, the bytes the message has
//! not sent yet). Behind a first-in-first-out NIC a granted message waits behind its
//! sender's other traffic, and small messages lose most of what Homa gives them.
//!
//! Timeouts are Linux Homa's: a receiver asks again after 5 ms without the bytes it expects
//! (`resend_ticks`), and the sender's own timer waits twice that. Shorter ones resend packets
//! that are only waiting in a low band behind higher ones.

use super::{CongestionControl, FlowInfo, PacketPriority, Protocol, SendContext, TransportKind, TransportPolicy};
use crate::transport::{Grant, HostReceiver, Incoming};
use crate::config::TcpConfig;
use fctlab_engine::quantity::{Duration, Size};
use fctlab_engine::Nanos;
use fctlab_net::{rank_of_bytes, RouterHeader};
use serde::{Deserialize, Serialize};

/// The most bands a port serves.
pub const MAX_BANDS: u8 = 8;

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct HomaConfig {
    /// Bytes a message sends before its first grant, and the most a receiver lets a granted
    /// message have in flight: one bandwidth-delay product. Key `homa_rtt_bytes`.
    #[serde(rename = "homa_rtt_bytes")]
    pub rtt_bytes: Size,
    /// The bands of the ports. Key `homa_bands`.
    #[serde(rename = "homa_bands")]
    pub bands: u8,
    /// Message sizes that separate the unscheduled bands, ascending. Key
    /// `homa_unscheduled_cutoffs`.
    #[serde(rename = "homa_unscheduled_cutoffs")]
    pub unscheduled_cutoffs: Vec<Size>,
    /// Messages a receiver grants at once (0: one per scheduled band). Key `homa_overcommit`.
    #[serde(rename = "homa_overcommit")]
    pub overcommit: u32,
    /// How long a receiver waits for bytes it expects before asking for them again. Key
    /// `homa_resend_timeout`.
    #[serde(rename = "homa_resend_timeout")]
    pub resend_timeout: Duration,
    /// The sender's timeout for a message its receiver has not answered (doubling). Key
    /// `homa_timeout`.
    #[serde(rename = "homa_timeout")]
    pub timeout: Duration,
}

impl Default for HomaConfig {
    fn default() -> Self {
        HomaConfig {
            // The paper's 9.7 KB for its 10 Gb/s fabric.
            rtt_bytes: Size(9_700),
            bands: MAX_BANDS,
            unscheduled_cutoffs: Vec::new(),
            overcommit: 0,
            resend_timeout: Duration(Nanos::from_millis(5)),
            timeout: Duration(Nanos::from_millis(10)),
        }
    }
}

impl HomaConfig {
    fn unscheduled_bands(&self) -> u8 {
        self.unscheduled_cutoffs.len() as u8 + 1
    }
    /// The band of a message's unscheduled packets.
    pub fn unscheduled_band(&self, size: u64) -> u8 {
        self.unscheduled_cutoffs.iter().take_while(|c| size > c.0).count() as u8
    }
}

/// Homa's control header, on the grants and resend requests a receiver sends (words: the
/// kind and band, then the granted offset or the range asked for again).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum HomaHeader {
    /// The sender may send up to byte `offset`, its scheduled packets in `band`.
    Grant { offset: u64, band: u8 },
    /// The sender is to send bytes `start..end` again.
    Resend { start: u64, end: u64 },
}

impl HomaHeader {
    /// Bytes the header adds to a packet: a kind, a band, two 8-byte offsets.
    pub const WIRE_BYTES: u8 = 20;
    /// The owner value of Homa's headers: no switch reads them.
    pub const OWNER: u8 = u8::MAX;

    pub fn header(&self) -> RouterHeader {
        let mut h = RouterHeader { owner: Self::OWNER, wire_bytes: Self::WIRE_BYTES, ..Default::default() };
        match *self {
            HomaHeader::Grant { offset, band } => {
                h.set_u32(0, 1 | (band as u32) << 8);
                h.set_u64(1, offset);
            }
            HomaHeader::Resend { start, end } => {
                h.set_u32(0, 2);
                h.set_u64(1, start);
                h.set_u64(3, end);
            }
        }
        h
    }

    pub fn of(h: &RouterHeader) -> Option<HomaHeader> {
        match h.u32(0) & 0xff {
            1 => Some(HomaHeader::Grant { offset: h.u64(1), band: (h.u32(0) >> 8) as u8 }),
            2 => Some(HomaHeader::Resend { start: h.u64(1), end: h.u64(3) }),
            _ => None,
        }
    }
}

/// A Homa sender: one message.
#[derive(Clone, Debug)]
pub struct Homa {
    /// The highest byte it may send (the unscheduled bytes, then the latest grant's offset).
    granted: u64,
    /// The band of its unscheduled packets, and of its scheduled ones (latest grant).
    unscheduled_band: u8,
    scheduled_band: u8,
    unscheduled_bytes: u64,
    /// A range the receiver asked for again, not yet sent.
    resend: Option<(u64, u64)>,
    timeout: Nanos,
}

/// The unscheduled bytes of a message of `size`: one `rtt_bytes` (the sender sends whole
/// segments while below a limit, so it rounds up to one).
fn unscheduled_bytes(rtt_bytes: u64, size: u64) -> u64 {
    rtt_bytes.min(size)
}

impl Protocol for Homa {
    const NAMES: &'static [&'static str] = &["homa"];
    type Config = HomaConfig;
    const TRANSPORTS: &'static [TransportKind] = &[TransportKind::Homa];
    const TAGS_PACKETS: bool = true;
    const HOST_KEYS: &'static [&'static str] =
        &["homa_rtt_bytes", "homa_bands", "homa_unscheduled_cutoffs", "homa_overcommit", "homa_resend_timeout"];
    fn check(cfg: &HomaConfig) -> Result<(), String> {
        if cfg.rtt_bytes.0 == 0 {
            return Err("`homa_rtt_bytes` must be positive".into());
        }
        if !(2..=MAX_BANDS).contains(&cfg.bands) {
            return Err(format!("`homa_bands` must be 2 to {MAX_BANDS}, not {}", cfg.bands));
        }
        if cfg.unscheduled_cutoffs.len() + 1 >= cfg.bands as usize {
            return Err(format!(
                "`homa_unscheduled_cutoffs` has {} cutoffs: at most {} with {} bands (one band at least stays scheduled)",
                cfg.unscheduled_cutoffs.len(),
                cfg.bands - 2,
                cfg.bands
            ));
        }
        if let Some(i) = (1..cfg.unscheduled_cutoffs.len())
            .find(|&i| cfg.unscheduled_cutoffs[i].0 <= cfg.unscheduled_cutoffs[i - 1].0)
        {
            return Err(format!(
                "`homa_unscheduled_cutoffs` must rise: [{i}] = {}B is not above [{}] = {}B",
                cfg.unscheduled_cutoffs[i].0,
                i - 1,
                cfg.unscheduled_cutoffs[i - 1].0
            ));
        }
        for (key, d) in [("homa_resend_timeout", cfg.resend_timeout), ("homa_timeout", cfg.timeout)] {
            if d.0 == Nanos::ZERO {
                return Err(format!("`{key}` must be positive"));
            }
        }
        Ok(())
    }
    fn new(cfg: &HomaConfig, info: &FlowInfo) -> Self {
        let size = info.size.unwrap_or(u64::MAX);
        Homa {
            granted: unscheduled_bytes(cfg.rtt_bytes.0, size),
            unscheduled_band: cfg.unscheduled_band(size),
            scheduled_band: cfg.bands - 1,
            unscheduled_bytes: unscheduled_bytes(cfg.rtt_bytes.0, size),
            resend: None,
            timeout: cfg.timeout.0,
        }
    }
    fn receiver(cfg: &HomaConfig) -> Option<Box<dyn HostReceiver>> {
        Some(Box::new(HomaGrants::new(cfg)))
    }
}

/// No congestion control: the window plays no part, grants limit what is sent.
impl CongestionControl for Homa {}

/// Homa's sender follows its receiver's grants and tags its packets by them.
impl TransportPolicy for Homa {
    fn on_grant(&mut self, hdr: &RouterHeader) {
        match HomaHeader::of(hdr) {
            Some(HomaHeader::Grant { offset, band }) => {
                self.granted = self.granted.max(offset);
                self.scheduled_band = band;
            }
            Some(HomaHeader::Resend { start, end }) => self.resend = Some((start, end)),
            None => {}
        }
    }

    fn priority(&self, ctx: &SendContext) -> PacketPriority {
        let band = if ctx.seq < self.unscheduled_bytes { self.unscheduled_band } else { self.scheduled_band };
        PacketPriority { band, rank: ctx.remaining().map_or(u16::MAX, rank_of_bytes) }
    }

    fn tune(&self, tcp: &mut TcpConfig) {
        // The window never limits: grants do.
        tcp.initial_cwnd_segments = u32::MAX >> 4;
        tcp.initial_ssthresh_bytes = None;
        (tcp.min_rto, tcp.initial_rto) = (self.timeout, self.timeout);
        tcp.max_rto = tcp.max_rto.max(self.timeout);
        tcp.rto_granularity = Nanos::ZERO;
        // Losses are the receiver's to find: no fast retransmission, no probes, no delayed ACKs.
        tcp.dupthresh = u32::MAX;
        tcp.tail_loss_probe = false;
        tcp.delayed_ack = false;
        tcp.sack = true;
    }

    fn send_limit(&self) -> Option<u64> {
        Some(self.granted)
    }

    fn take_resend(&mut self) -> Option<(u64, u64)> {
        self.resend.take()
    }
}

/// A message being received.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Message {
    flow: u32,
    size: u64,
    received: u64,
    granted: u64,
    /// The band of its latest grant.
    band: u8,
}

impl Message {
    fn left(&self) -> u64 {
        self.size - self.received
    }
}

/// A receiving host's grants: its incoming messages, granted by fewest bytes left.
#[derive(Debug)]
pub struct HomaGrants {
    rtt_bytes: u64,
    /// The first scheduled band, and the scheduled bands.
    first_scheduled: u8,
    scheduled_bands: u8,
    overcommit: usize,
    resend_timeout: Nanos,
    /// Messages partly received, in arrival order of their first packet.
    messages: Vec<Message>,
    /// Scratch: indices of the messages still to be granted, by bytes left.
    order: Vec<usize>,
}

impl HomaGrants {
    pub fn new(cfg: &HomaConfig) -> HomaGrants {
        let first_scheduled = cfg.unscheduled_bands();
        let scheduled_bands = cfg.bands - first_scheduled;
        let overcommit = if cfg.overcommit == 0 { scheduled_bands as usize } else { cfg.overcommit as usize };
        HomaGrants {
            rtt_bytes: cfg.rtt_bytes.0,
            first_scheduled,
            scheduled_bands,
            overcommit,
            resend_timeout: cfg.resend_timeout.0,
            messages: Vec::new(),
            order: Vec::new(),
        }
    }

    /// The messages being received (for tests).
    pub fn pending(&self) -> usize {
        self.messages.len()
    }
}

impl HostReceiver for HomaGrants {
    fn unscheduled(&self, size: u64) -> u64 {
        unscheduled_bytes(self.rtt_bytes, size)
    }

    fn resend_timeout(&self) -> Nanos {
        self.resend_timeout
    }

    fn on_data(&mut self, msg: Incoming, grants: &mut Vec<Grant>) {
        match self.messages.iter().position(|m| m.flow == msg.flow) {
            Some(i) if msg.received >= msg.size => {
                self.messages.remove(i);
            }
            Some(i) => self.messages[i].received = msg.received,
            None if msg.received >= msg.size => {}
            None => {
                let unscheduled = self.unscheduled(msg.size);
                self.messages.push(Message {
                    flow: msg.flow,
                    size: msg.size,
                    received: msg.received,
                    granted: unscheduled,
                    band: self.first_scheduled + self.scheduled_bands - 1,
                });
            }
        }
        // SRPT over the messages that still need grants (ties: the earlier message first).
        self.order.clear();
        self.order.extend((0..self.messages.len()).filter(|&i| self.messages[i].granted < self.messages[i].size));
        let messages = &self.messages;
        self.order.sort_by_key(|&i| (messages[i].left(), i));
        let active = self.order.len().min(self.overcommit);
        // The lowest scheduled bands when fewer messages than bands are granted.
        let spare = (self.scheduled_bands as usize).saturating_sub(active);
        for (rank, &i) in self.order[..active].iter().enumerate() {
            let band = (self.first_scheduled as usize + spare + rank).min(self.first_scheduled as usize + self.scheduled_bands as usize - 1) as u8;
            let m = &mut self.messages[i];
            let offset = (m.received + self.rtt_bytes).min(m.size);
            if offset > m.granted || band != m.band {
                m.granted = m.granted.max(offset);
                m.band = band;
                grants.push(Grant { flow: m.flow, offset: m.granted, band });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grants(cfg: &HomaConfig) -> HomaGrants {
        HomaGrants::new(cfg)
    }

    fn arrive(g: &mut HomaGrants, flow: u32, size: u64, received: u64) -> Vec<Grant> {
        let mut out = Vec::new();
        g.on_data(Incoming { flow, size, received }, &mut out);
        out
    }

    #[test]
    fn the_receiver_grants_the_fewest_bytes_left_first_with_the_highest_scheduled_band() {
        let cfg = HomaConfig { rtt_bytes: Size(10_000), bands: 4, overcommit: 2, ..Default::default() };
        let mut g = grants(&cfg);
        // A large message: alone, it is granted one RTT beyond what arrived, in the lowest band.
        assert_eq!(arrive(&mut g, 1, 1_000_000, 1_000), vec![Grant { flow: 1, offset: 11_000, band: 3 }]);
        // A smaller one arrives: it takes the higher scheduled band, the large one keeps its.
        assert_eq!(arrive(&mut g, 2, 100_000, 1_000), vec![Grant { flow: 2, offset: 11_000, band: 2 }]);
        // A third, smaller still: it goes first; with overcommitment 2 the largest is left
        // without grants (its band is not renewed) until one of the two completes.
        assert_eq!(
            arrive(&mut g, 3, 50_000, 1_000),
            vec![Grant { flow: 3, offset: 11_000, band: 2 }, Grant { flow: 2, offset: 11_000, band: 3 }]
        );
        assert_eq!(arrive(&mut g, 1, 1_000_000, 2_000), vec![], "not among the two shortest: no grant");
        // Message 3's packets keep it granted one RTT ahead.
        assert_eq!(arrive(&mut g, 3, 50_000, 2_500), vec![Grant { flow: 3, offset: 12_500, band: 2 }]);
        // Message 3 completes: 2 moves up, and 1 is granted again.
        assert_eq!(
            arrive(&mut g, 3, 50_000, 50_000),
            vec![Grant { flow: 2, offset: 11_000, band: 2 }, Grant { flow: 1, offset: 12_000, band: 3 }]
        );
        assert_eq!(g.pending(), 2);
    }

    #[test]
    fn a_message_within_its_unscheduled_bytes_needs_no_grant_and_the_last_grant_stops_at_its_size() {
        let cfg = HomaConfig { rtt_bytes: Size(10_000), ..Default::default() };
        let mut g = grants(&cfg);
        assert_eq!(arrive(&mut g, 1, 8_000, 1_460), vec![]);
        assert_eq!(arrive(&mut g, 2, 15_000, 1_460), vec![Grant { flow: 2, offset: 11_460, band: 7 }]);
        assert_eq!(arrive(&mut g, 2, 15_000, 9_000), vec![Grant { flow: 2, offset: 15_000, band: 7 }]);
        assert_eq!(arrive(&mut g, 2, 15_000, 10_000), vec![], "fully granted");
        arrive(&mut g, 1, 8_000, 8_000);
        arrive(&mut g, 2, 15_000, 15_000);
        assert_eq!(g.pending(), 0, "completed messages are forgotten");
    }

    #[test]
    fn unscheduled_packets_take_their_band_by_message_size_and_scheduled_ones_their_grants() {
        let cfg = HomaConfig { unscheduled_cutoffs: vec![Size(1_000), Size(5_000)], ..Default::default() };
        assert_eq!([500, 1_000, 1_001, 5_000, 5_001].map(|s| cfg.unscheduled_band(s)), [0, 0, 1, 1, 2]);
        let info = FlowInfo { size: Some(100_000), ..Default::default() };
        let mut h = Homa::new(&cfg, &info);
        let ctx = |seq| SendContext {
            now: Nanos::ZERO,
            kind: fctlab_net::PacketKind::Data,
            size: Some(100_000),
            bytes_sent: seq,
            seq,
            snd_una: 0,
            sacked_bytes: 0,
            srtt: None,
            mss_bytes: 1460,
        };
        assert_eq!(h.priority(&ctx(0)).band, 2);
        assert_eq!(h.send_limit(), Some(9_700));
        h.on_grant(&HomaHeader::Grant { offset: 30_000, band: 4 }.header());
        assert_eq!((h.send_limit(), h.priority(&ctx(20_000)).band), (Some(30_000), 4));
        h.on_grant(&HomaHeader::Resend { start: 1_460, end: 2_920 }.header());
        assert_eq!((h.take_resend(), h.take_resend()), (Some((1_460, 2_920)), None));
    }

    #[test]
    fn the_parameters_are_checked() {
        let check = |cfg: HomaConfig| <Homa as Protocol>::check(&cfg);
        assert!(check(HomaConfig::default()).is_ok());
        assert!(check(HomaConfig { bands: 9, ..Default::default() }).unwrap_err().contains("2 to 8"));
        let cutoffs = |v: &[u64]| HomaConfig { unscheduled_cutoffs: v.iter().map(|&c| Size(c)).collect(), ..Default::default() };
        assert!(check(cutoffs(&[1, 2, 3, 4, 5, 6])).is_ok());
        assert!(check(cutoffs(&[1, 2, 3, 4, 5, 6, 7])).unwrap_err().contains("one band at least stays scheduled"));
        assert!(check(cutoffs(&[5, 5])).unwrap_err().contains("must rise"));
    }
}
