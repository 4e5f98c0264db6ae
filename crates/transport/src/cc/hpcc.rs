//! HPCC (Li et al., "HPCC: High Precision Congestion Control", SIGCOMM 2019): a window and a
//! rate from in-band telemetry, on the `roce` transport.
//!
//! **Switches** keep no per-flow state. Each output port appends one record to the telemetry
//! header of every data packet that carries one, up to five hops: the time, the bytes the
//! port has transmitted so far, the bytes waiting in its queue and its link rate. The receiver
//! echoes the header on the packet's acknowledgement.
//!
//! **The sender** keeps the record of each hop from the previous acknowledgement. For each hop
//! of a new one: the transmit rate is the bytes transmitted between the two records over the
//! time between them, and the hop's utilization is
//! `u = tx_rate / B + min(qlen, qlen_prev) / (B T)`, with B the hop's rate and T the base RTT.
//! The most utilized hop's u, over the time tau between its records, enters a moving average
//! over one base RTT: `U = (U (T - tau) + u tau) / T` (tau at most T). Then, with
//! `k = U / eta`:
//! - if `k >= 1` or `max_stage` additive steps have been taken: `R = R_c / k + R_AI` (the
//!   multiplicative step, to the rate that would bring the hop to eta);
//! - else `R = R_c + R_AI` (an additive step).
//!
//! R stays between `min_rate` and the line rate. The window is `W = W_init R / line rate`
//! with `W_init` = T x line rate, and the sender also paces at R. Every acknowledgement sets R
//! from the committed rate R_c (reacting at once); once per round trip, when an
//! acknowledgement covers the data sent at the last commitment, R becomes the new R_c and the
//! stage counts (the HPCC ns-3 fork's `FAST_REACT 1`, the paper's per-ACK reaction with
//! per-RTT reference).
//!
//! **The header.** One word holds the hop count and two words each hop, packed as the HPCC
//! fork packs its `IntHop`: the time in nanoseconds (24 bits, wrapping), the transmitted bytes in
//! units of 128 B (20 bits, wrapping), the queue in units of 80 B (17 bits) and the link rate as
//! a 3-bit code. Its bytes on the wire are the fork's: 2 + 8 x 5 = 42. The code covers 1, 10,
//! 25, 40, 50, 100, 200 and 400 Gbps; a link of another rate is refused by name.
//!
//! Where the models differ: the fork stamps a record as the packet leaves the queue (its
//! transmitted bytes including it, the queue it leaves behind); here it is stamped as the packet
//! joins the queue (the queue ahead of it, the bytes delivered across the link by then).

use super::{
    AckSample, CcState, CongestionControl, FlowInfo, PacketKind, PortControl, PortInfo, PortView, Protocol,
    RouterHeader, SendContext, TransportKind, TransportPolicy,
};
use fctlab_engine::quantity::{Duration, Rate};
use fctlab_engine::{BitsPerSec, Nanos};
use serde::{Deserialize, Serialize};

/// Hops the header has room for.
pub const MAX_HOPS: usize = 5;
/// Bytes of the header on the wire: the hop count and five 8-byte records.
pub const HEADER_BYTES: u8 = 2 + 8 * MAX_HOPS as u8;
/// Link rates a record can carry, by their 3-bit code, Gbps.
pub const RATE_CODES_GBPS: [u64; 8] = [1, 10, 25, 40, 50, 100, 200, 400];
const TIME_BITS: u32 = 24;
const BYTES_BITS: u32 = 20;
const QLEN_BITS: u32 = 17;
const BYTE_UNIT: u64 = 128;
const QLEN_UNIT: u64 = 80;

/// One hop's record, as the header carries it.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Hop {
    /// Nanoseconds, modulo 2^24.
    pub time: u32,
    /// Transmitted bytes in units of 128 B, modulo 2^20.
    pub bytes: u32,
    /// Queue in units of 80 B (saturating at 2^17 - 1).
    pub qlen: u32,
    /// Index into [`RATE_CODES_GBPS`].
    pub rate: u8,
}

impl Hop {
    pub fn new(now: Nanos, tx_bytes: u64, qlen_bytes: u64, rate: u8) -> Hop {
        Hop {
            time: (now.as_nanos() & ((1 << TIME_BITS) - 1)) as u32,
            bytes: ((tx_bytes / BYTE_UNIT) & ((1 << BYTES_BITS) - 1)) as u32,
            qlen: (qlen_bytes / QLEN_UNIT).min((1 << QLEN_BITS) - 1) as u32,
            rate,
        }
    }
    fn pack(&self) -> u64 {
        self.rate as u64 | (self.time as u64) << 3 | (self.bytes as u64) << (3 + TIME_BITS) | (self.qlen as u64) << (3 + TIME_BITS + BYTES_BITS)
    }
    fn unpack(v: u64) -> Hop {
        Hop {
            rate: (v & 7) as u8,
            time: ((v >> 3) & ((1 << TIME_BITS) - 1)) as u32,
            bytes: ((v >> (3 + TIME_BITS)) & ((1 << BYTES_BITS) - 1)) as u32,
            qlen: ((v >> (3 + TIME_BITS + BYTES_BITS)) & ((1 << QLEN_BITS) - 1)) as u32,
        }
    }
    /// Nanoseconds since `prev` (modulo 2^24).
    pub fn time_since(&self, prev: &Hop) -> u64 {
        (self.time.wrapping_sub(prev.time) & ((1 << TIME_BITS) - 1)) as u64
    }
    /// Bytes transmitted since `prev` (modulo 2^20 units).
    pub fn bytes_since(&self, prev: &Hop) -> u64 {
        (self.bytes.wrapping_sub(prev.bytes) & ((1 << BYTES_BITS) - 1)) as u64 * BYTE_UNIT
    }
    pub fn qlen_bytes(&self) -> u64 {
        self.qlen as u64 * QLEN_UNIT
    }
    pub fn rate_bps(&self) -> f64 {
        RATE_CODES_GBPS[self.rate as usize & 7] as f64 * 1e9
    }
}

/// The telemetry header: its hop count in word 0, hop i in words 1 + 2i and 2 + 2i.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct IntHeader {
    pub nhop: u8,
    pub hops: [Hop; MAX_HOPS],
}

impl IntHeader {
    pub fn read(h: &RouterHeader) -> IntHeader {
        let nhop = (h.u8(0, 0) as usize).min(MAX_HOPS);
        let mut hops = [Hop::default(); MAX_HOPS];
        for (i, hop) in hops.iter_mut().enumerate().take(nhop) {
            *hop = Hop::unpack(h.u64(1 + 2 * i));
        }
        IntHeader { nhop: nhop as u8, hops }
    }
    /// Appends a hop's record to the header in place, if there is room.
    pub fn push(h: &mut RouterHeader, hop: Hop) {
        let n = h.u8(0, 0) as usize;
        if n < MAX_HOPS {
            h.set_u64(1 + 2 * n, hop.pack());
            h.set_u8(0, 0, n as u8 + 1);
        }
    }
}

/// The rate code of a link rate, if it has one.
pub fn rate_code(rate: BitsPerSec) -> Option<u8> {
    RATE_CODES_GBPS.iter().position(|&g| g * 1_000_000_000 == rate.0).map(|i| i as u8)
}

/// HPCC's parameters (keys of `[transport.hpcc]`).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct HpccConfig {
    /// The target utilization (eta).
    pub hpcc_eta: f64,
    /// Additive steps before a multiplicative one (maxStage). 0, as the paper's simulations ran
    /// (its authors' results page: the 5 printed in the paper is a typo for the simulation).
    pub max_stage: u32,
    /// The additive step (W_AI as a rate); none: 0.04% of the line rate, as the HPCC fork's
    /// `run.py` sets it (10 x bw / 25 Mb/s at bw Gb/s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hpcc_rate_ai: Option<Rate>,
    /// The rate never falls below this.
    pub hpcc_min_rate: Rate,
    /// The base RTT T; none: the flow's own round trip on its paths with no queueing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hpcc_base_rtt: Option<Duration>,
}

impl Default for HpccConfig {
    fn default() -> Self {
        HpccConfig {
            hpcc_eta: 0.95,
            max_stage: 0,
            hpcc_rate_ai: None,
            hpcc_min_rate: Rate(BitsPerSec(100_000_000)),
            hpcc_base_rtt: None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Hpcc {
    eta: f64,
    max_stage: u32,
    rai: f64,
    min_rate: f64,
    line: f64,
    /// T, seconds and nanoseconds.
    t_s: f64,
    t_ns: u64,
    /// W_init, bytes.
    w_init: f64,
    /// The committed rate R_c, the rate in use R, the stage, and U.
    cur_rate: f64,
    rate: f64,
    stage: u32,
    u: f64,
    /// The previous record of each hop, once there is one.
    prev: Option<IntHeader>,
    /// snd_nxt at the last commitment (0: none yet); the last ACK's cumulative byte and snd_nxt.
    last_update_seq: u64,
    ack_seq: u64,
    snd_nxt: u64,
}

impl Protocol for Hpcc {
    const NAMES: &'static [&'static str] = &["hpcc"];
    const TRANSPORTS: &'static [TransportKind] = &[TransportKind::Roce];
    const ROUTER_ASSISTED: bool = true;
    type Config = HpccConfig;
    fn check(cfg: &HpccConfig) -> Result<(), String> {
        if !(cfg.hpcc_eta > 0.0 && cfg.hpcc_eta <= 1.0) {
            return Err(format!("`hpcc_eta` must be in (0, 1], got {}", cfg.hpcc_eta));
        }
        if cfg.hpcc_min_rate.0 .0 == 0 {
            return Err("`hpcc_min_rate` must be positive".into());
        }
        if cfg.hpcc_base_rtt.is_some_and(|d| d.0 == Nanos::ZERO) {
            return Err("`hpcc_base_rtt` must be positive".into());
        }
        Ok(())
    }
    fn new(cfg: &HpccConfig, info: &FlowInfo) -> Self {
        let line = info.nic_rate.0 as f64;
        let t = cfg.hpcc_base_rtt.map_or(info.base_rtt, |d| d.0).max(Nanos::from_nanos(1));
        let t_s = t.as_secs_f64();
        Hpcc {
            eta: cfg.hpcc_eta,
            max_stage: cfg.max_stage,
            rai: cfg.hpcc_rate_ai.map_or(line * 0.0004, |r| r.0 .0 as f64),
            min_rate: (cfg.hpcc_min_rate.0 .0 as f64).min(line),
            line,
            t_s,
            t_ns: t.as_nanos(),
            w_init: line * t_s / 8.0,
            cur_rate: line,
            rate: line,
            stage: 0,
            u: 1.0,
            prev: None,
            last_update_seq: 0,
            ack_seq: 0,
            snd_nxt: 0,
        }
    }
    fn port(_cfg: &HpccConfig, link: &PortInfo) -> Option<Box<dyn PortControl>> {
        Some(Box::new(HpccPort { rate: rate_code(link.capacity).unwrap_or(0), stamps: !link.host_nic }))
    }
    fn check_port(_cfg: &HpccConfig, link: &PortInfo) -> Result<(), String> {
        if link.host_nic {
            return Ok(()); // hosts stamp no telemetry
        }
        match rate_code(link.capacity) {
            Some(_) => Ok(()),
            None => Err(format!(
                "HPCC's telemetry codes a link's rate in 3 bits ({} Gbps), and this link runs at {} bps",
                RATE_CODES_GBPS.map(|g| g.to_string()).join(", "),
                link.capacity.0
            )),
        }
    }
}

impl Hpcc {
    /// The window that goes with rate `r`, bytes (at least one byte: the sender always has one
    /// packet out).
    fn window(&self, r: f64) -> u64 {
        (self.w_init * r / self.line).max(1.0) as u64
    }

    /// The rate in use, bits per second (for tests and traces).
    pub fn rate(&self) -> f64 {
        self.rate
    }
    /// U, the moving average of the most utilized hop's utilization.
    pub fn utilization(&self) -> f64 {
        self.u
    }

    /// An acknowledgement's telemetry `int`: the rate and window, committed when it covers the
    /// data sent at the last commitment.
    fn on_telemetry(&mut self, st: &mut CcState, int: &IntHeader) {
        let Some(prev) = self.prev.filter(|p| p.nhop == int.nhop) else {
            // The first record of the path (or a path of another length): kept for the next.
            self.prev = Some(*int);
            self.last_update_seq = self.snd_nxt;
            return;
        };
        let full = self.ack_seq > self.last_update_seq;
        let (mut top, mut dt) = (0.0f64, 0u64);
        for i in 0..int.nhop as usize {
            let (h, p) = (&int.hops[i], &prev.hops[i]);
            let tau = h.time_since(p);
            if tau == 0 {
                continue;
            }
            let b = h.rate_bps();
            let tx_rate = h.bytes_since(p) as f64 * 8.0 / (tau as f64 * 1e-9);
            let u = tx_rate / b + h.qlen_bytes().min(p.qlen_bytes()) as f64 * 8.0 / (b * self.t_s);
            if u > top {
                top = u;
                dt = tau;
            }
        }
        self.prev = Some(*int);
        if dt == 0 {
            return;
        }
        let dt = dt.min(self.t_ns) as f64;
        let t = self.t_ns as f64;
        self.u = (self.u * (t - dt) + top * dt) / t;
        let k = self.u / self.eta;
        let (new_rate, new_stage) = if k >= 1.0 || self.stage >= self.max_stage {
            (self.cur_rate / k + self.rai, 0)
        } else {
            (self.cur_rate + self.rai, self.stage + 1)
        };
        self.rate = new_rate.clamp(self.min_rate, self.line);
        st.cwnd_bytes = self.window(self.rate);
        if full {
            self.cur_rate = self.rate;
            self.stage = new_stage;
            self.last_update_seq = self.snd_nxt;
        }
    }
}

/// The window a flow starts with.
impl TransportPolicy for Hpcc {
    fn init(&mut self, st: &mut CcState) {
        st.cwnd_bytes = self.window(self.rate);
    }
}

impl CongestionControl for Hpcc {
    fn on_ack(&mut self, _st: &mut CcState, ack: &AckSample) {
        self.ack_seq = ack.snd_una;
        self.snd_nxt = ack.snd_nxt;
    }
    fn on_feedback(&mut self, st: &mut CcState, hdr: &RouterHeader) {
        self.on_telemetry(st, &IntHeader::read(hdr));
    }
    fn pacing_rate(&self) -> Option<BitsPerSec> {
        Some(BitsPerSec(self.rate as u64))
    }
    fn stamp(&mut self, ctx: &SendContext, hdr: &mut RouterHeader) -> bool {
        if ctx.kind != PacketKind::Data {
            return false;
        }
        *hdr = RouterHeader { wire_bytes: HEADER_BYTES, ..RouterHeader::default() };
        true
    }
}

/// The switch side: appends the port's record to each data packet's header. No state but
/// the port's rate code.
#[derive(Debug)]
struct HpccPort {
    rate: u8,
    /// Switch ports stamp a record; a host's NIC does not (the HPCC fork's and htsim's
    /// switches stamp, their hosts do not), so five records cover the six ports of a path
    /// between pods of a three-level fat-tree, the last hop into the receiver included.
    stamps: bool,
}

impl PortControl for HpccPort {
    fn on_packet(&mut self, v: &PortView, kind: PacketKind, _wire_bytes: u32, hdr: &mut RouterHeader) {
        if kind == PacketKind::Data && self.stamps {
            IntHeader::push(hdr, Hop::new(v.now, v.tx_bytes, v.queue_bytes, self.rate));
        }
    }
    fn on_tick(&mut self, _v: &PortView) -> Option<Nanos> {
        None
    }
    fn interval(&self) -> Nanos {
        Nanos::from_secs(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GBPS: u64 = 1_000_000_000;

    fn hpcc() -> (Hpcc, CcState) {
        let info = FlowInfo { nic_rate: BitsPerSec(100 * GBPS), base_rtt: Nanos::from_micros(10), ..Default::default() };
        let mut h = Hpcc::new(&HpccConfig::default(), &info);
        let mut st = CcState { cwnd_bytes: u64::MAX / 2, ssthresh_bytes: u64::MAX / 2, mss_bytes: 1000 };
        h.init(&mut st);
        (h, st)
    }

    fn header(hops: &[Hop]) -> RouterHeader {
        let mut h = RouterHeader { wire_bytes: HEADER_BYTES, ..Default::default() };
        for hop in hops {
            IntHeader::push(&mut h, *hop);
        }
        h
    }

    fn ack(h: &mut Hpcc, st: &mut CcState, snd_una: u64, snd_nxt: u64, hops: &[Hop]) {
        h.on_ack(st, &AckSample { snd_una, snd_nxt, ..Default::default() });
        h.on_feedback(st, &header(hops));
    }

    #[test]
    fn records_pack_as_the_fork_packs_them_and_wrap() {
        let hop = Hop::new(Nanos::from_nanos((1 << 24) + 5), 128 * ((1 << 20) + 3), 80 * 7, 5);
        assert_eq!((hop.time, hop.bytes, hop.qlen, hop.rate), (5, 3, 7, 5));
        assert_eq!(Hop::unpack(hop.pack()), hop);
        let later = Hop::new(Nanos::from_nanos((2 << 24) + 2), 128 * ((2 << 20) + 1), 0, 5);
        assert_eq!(later.time_since(&hop), (1 << 24) - 3, "the time wraps");
        assert_eq!(later.bytes_since(&hop), 128 * ((1 << 20) - 2), "the bytes wrap");
        let mut h = RouterHeader::default();
        for i in 0..7 {
            IntHeader::push(&mut h, Hop { time: i, ..Default::default() });
        }
        let int = IntHeader::read(&h);
        assert_eq!(int.nhop, 5, "five hops at most");
        assert_eq!(int.hops[4].time, 4);
        assert_eq!(rate_code(BitsPerSec(100 * GBPS)), Some(5));
        assert_eq!(rate_code(BitsPerSec(13 * GBPS)), None);
    }

    #[test]
    fn the_window_starts_at_the_base_bdp_and_follows_the_rate() {
        let (h, st) = hpcc();
        // 100 Gbps x 10 us = 125,000 B.
        assert_eq!(st.cwnd_bytes, 125_000);
        assert_eq!(h.pacing_rate(), Some(BitsPerSec(100 * GBPS)));
    }

    #[test]
    fn a_congested_hop_sets_the_rate_to_bring_it_to_eta() {
        let (mut h, mut st) = hpcc();
        let t0 = Nanos::from_micros(100);
        // First record: kept.
        ack(&mut h, &mut st, 1000, 20_000, &[Hop::new(t0, 0, 125_040, 5)]);
        assert_eq!(h.rate(), 100e9);
        // 10 us later the hop sent 125,000 B (its line rate) and still holds 125,000 B (one
        // BDP; the smaller of the two queues counts): u = 1 + 1 = 2 over tau = T, so U = 2 and
        // k = 2 / 0.95.
        let t1 = t0 + Nanos::from_micros(10);
        ack(&mut h, &mut st, 21_000, 40_000, &[Hop::new(t1, 125_056, 125_040, 5)]);
        let tx: f64 = 125_056.0 / 128.0;
        let u = tx.floor() * 128.0 * 8.0 / 10e-6 / 100e9 + (125_040.0 / 80.0f64).floor() * 80.0 * 8.0 / (100e9 * 10e-6);
        let want = 100e9 / (u / 0.95) + 100e9 * 0.0004;
        assert!((h.rate() - want).abs() < 1.0, "rate {} against {want}", h.rate());
        assert!((h.utilization() - u).abs() < 1e-9);
        assert_eq!(st.cwnd_bytes, (125_000.0 * want / 100e9) as u64);
    }

    #[test]
    fn an_idle_path_adds_max_stage_steps_then_multiplies() {
        let info = FlowInfo { nic_rate: BitsPerSec(100 * GBPS), base_rtt: Nanos::from_micros(10), ..Default::default() };
        let mut h = Hpcc::new(&HpccConfig { max_stage: 5, ..Default::default() }, &info);
        let mut st = CcState { cwnd_bytes: u64::MAX / 2, ssthresh_bytes: u64::MAX / 2, mss_bytes: 1000 };
        h.init(&mut st);
        let mut t = Nanos::from_micros(100);
        ack(&mut h, &mut st, 1000, 2000, &[Hop::new(t, 0, 0, 5)]);
        // First bring the rate down: a hop at twice its rate for a full T (u = 2).
        t += Nanos::from_micros(10);
        ack(&mut h, &mut st, 3000, 4000, &[Hop::new(t, 250_112, 0, 5)]);
        let low = h.rate();
        let u0 = 250_112.0 * 8.0 / 10e-6 / 100e9;
        assert!((low - (100e9 / (u0 / 0.95) + 40e6)).abs() < 1e3, "{low}");
        // Then a hop at 10% of its rate, each ACK past the last commitment (a full update):
        // U = 0.1 < eta, so max_stage (5) additive steps of R_AI, then R_c / k.
        let mut bytes = 250_112;
        let mut rates = vec![];
        for k in 1..=6u64 {
            t += Nanos::from_micros(10);
            bytes += 12_544;
            ack(&mut h, &mut st, 10_000 * k, 10_000 * k + 5000, &[Hop::new(t, bytes, 0, 5)]);
            rates.push(h.rate());
        }
        for (i, r) in rates[..5].iter().enumerate() {
            assert!((r - (low + (i + 1) as f64 * 40e6)).abs() < 1e3, "step {i}: {rates:?}");
        }
        let u = 12_544.0 * 8.0 / 10e-6 / 100e9;
        let want = ((low + 5.0 * 40e6) / (u / 0.95) + 40e6).min(100e9);
        assert!((rates[5] - want).abs() < 1e3, "{} against {want}", rates[5]);
    }

    #[test]
    fn a_fast_reaction_does_not_commit_the_rate() {
        let (mut h, mut st) = hpcc();
        let t0 = Nanos::from_micros(100);
        ack(&mut h, &mut st, 1000, 50_000, &[Hop::new(t0, 0, 0, 5)]);
        // An ACK below the last commitment (50,000): the rate reacts, R_c stays.
        ack(&mut h, &mut st, 2000, 51_000, &[Hop::new(t0 + Nanos::from_micros(10), 250_000, 0, 5)]);
        assert!(h.rate() < 60e9);
        assert_eq!(h.cur_rate, 100e9);
        // An ACK past it commits.
        ack(&mut h, &mut st, 50_001, 52_000, &[Hop::new(t0 + Nanos::from_micros(20), 500_000, 0, 5)]);
        assert_eq!(h.cur_rate, h.rate());
    }

    #[test]
    fn the_switch_side_appends_its_record_to_data_packets_only() {
        let mut port = Hpcc::port(&HpccConfig::default(), &PortInfo { capacity: BitsPerSec(100 * GBPS), delay: Nanos::ZERO, host_nic: false }).unwrap();
        let mut hdr = header(&[]);
        let v = PortView { now: Nanos::from_nanos(777), queue_pkts: 3, queue_bytes: 3 * 1048, tx_bytes: 128 * 9 };
        port.on_packet(&v, PacketKind::Data, 1090, &mut hdr);
        port.on_packet(&v, PacketKind::Ack, 90, &mut hdr);
        let int = IntHeader::read(&hdr);
        assert_eq!(int.nhop, 1);
        assert_eq!(int.hops[0], Hop { time: 777, bytes: 9, qlen: 3 * 1048 / 80, rate: 5 });
        let e = Hpcc::check_port(&HpccConfig::default(), &PortInfo { capacity: BitsPerSec(13 * GBPS), delay: Nanos::ZERO, host_nic: false });
        assert!(e.unwrap_err().contains("13000000000 bps"));
    }

    #[test]
    fn a_hosts_nic_stamps_no_record_and_may_run_at_any_rate() {
        let nic = PortInfo { capacity: BitsPerSec(13 * GBPS), delay: Nanos::ZERO, host_nic: true };
        assert!(Hpcc::check_port(&HpccConfig::default(), &nic).is_ok());
        let mut port = Hpcc::port(&HpccConfig::default(), &nic).unwrap();
        let mut hdr = header(&[]);
        let v = PortView { now: Nanos::from_nanos(777), queue_pkts: 3, queue_bytes: 3 * 1048, tx_bytes: 128 * 9 };
        port.on_packet(&v, PacketKind::Data, 1090, &mut hdr);
        assert_eq!(IntHeader::read(&hdr).nhop, 0);
    }
}
