//! ns-2.35's RED (`REDQueue`, queue/red.cc) on one port: the estimator, the automatic
//! parameters and the hit spacing exactly as ns-2 computes them. Run by [`super::Red`] with
//! `red_variant = "ns2"`.

use super::{BufferLimit, Verdict};
use fctlab_engine::{BitsPerSec, Nanos, Rng};

/// ns-2.35's `Queue/RED` parameters (`tcl/lib/ns-default.tcl`). `Default` gives ns-default.tcl's
/// values: byte mode, automatic thresholds and weight, `linterm_ 10`, `wait_`, `mark_p_ 0.1`
/// with `use_mark_p_`, `gentle_`, no `setbit_`.
#[derive(Clone, Debug, PartialEq)]
pub struct Ns2RedConfig {
    /// `thresh_`, in the queue's unit (mean packets of `mean_pktsize` bytes in byte mode,
    /// packets otherwise); `None` is ns-2's 0: automatic (red.cc `initialize_params`).
    pub min_threshold: Option<f64>,
    /// `maxthresh_`, same unit; `None`: 3 × the minimum threshold.
    pub max_threshold: Option<f64>,
    /// `q_weight_`; `None` is ns-2's -1: from the link's rate and delay.
    pub weight: Option<f64>,
    /// `1 / linterm_`.
    pub max_p: f64,
    /// `mark_p_` (with `use_mark_p_ true`): an ECN-capable packet hit while the probability
    /// before the count correction exceeds it is dropped, not marked.
    pub mark_p: f64,
    /// `wait_`: the wider spacing between hits.
    pub wait: bool,
    /// `bytes_` and `queue_in_bytes_`: average and thresholds in bytes, probability scaled by
    /// the packet's size.
    pub bytes: bool,
    /// `mean_pktsize_`, bytes.
    pub mean_pktsize: u32,
    /// `targetdelay_`, for the automatic thresholds.
    pub target_delay: Nanos,
    /// `gentle_`.
    pub gentle: bool,
    /// `setbit_`: mark ECN-capable packets instead of dropping them.
    pub ecn: bool,
}

impl Default for Ns2RedConfig {
    fn default() -> Self {
        Ns2RedConfig {
            min_threshold: None,
            max_threshold: None,
            weight: None,
            max_p: 1.0 / 10.0,
            mark_p: 0.1,
            wait: true,
            bytes: true,
            mean_pktsize: 500,
            target_delay: Nanos::from_millis(5),
            gentle: true,
            ecn: false,
        }
    }
}

/// ns-2.35's `REDQueue` (queue/red.cc) on one port, with its parameters as `initialize_params`
/// and `reset` derive them for the port's link. Adaptive and cautious RED, `drop_front_` and
/// `drop_rand_` are not modelled (their ns-default.tcl values are off); `use_mark_p_` is on.
#[derive(Clone, Debug)]
pub struct Ns2RedState {
    /// `th_min_pkts` / `th_max_pkts`: the thresholds in mean packets (byte mode) or packets.
    pub th_min_pkts: f64,
    pub th_max_pkts: f64,
    /// `th_min` / `th_max`: the thresholds in the queue's unit (bytes in byte mode).
    pub th_min: f64,
    pub th_max: f64,
    /// `q_w`.
    pub q_w: f64,
    /// `cur_max_p` (1 / linterm_).
    pub max_p: f64,
    v_a: f64,
    v_b: f64,
    v_c: f64,
    v_d: f64,
    mark_p: f64,
    mean_pktsize: u32,
    bytes: bool,
    wait: bool,
    gentle: bool,
    setbit: bool,
    /// The link's rate, for the number of packets the idle-time decay assumes.
    rate_bps: u64,
    /// `v_ave`: the average queue, bytes in byte mode.
    ave: f64,
    count: i64,
    count_bytes: i64,
    /// `old`: the previous arrival was also above the minimum threshold with a queue.
    old: bool,
    rng: Rng,
}

impl Ns2RedState {
    /// red.cc `command("link")`, `initialize_params` (lines 172-224) and `reset` (268-333).
    pub fn new(c: &Ns2RedConfig, rng: Rng, rate: BitsPerSec, delay: Nanos) -> Ns2RedState {
        // The packet time constant: mean-size packets per second on the link (red.cc 280).
        let ptc = rate.as_f64() / (8.0 * c.mean_pktsize as f64);
        let q_w = match c.weight {
            Some(w) => w,
            None => {
                // q_weight_ -1 (red.cc 189-194).
                let mut rtt = 3.0 * (delay.as_secs_f64() + 1.0 / ptc);
                if rtt < 0.1 {
                    rtt = 0.1;
                }
                1.0 - (-1.0 / (10.0 * rtt * ptc)).exp()
            }
        };
        let mut th_min_pkts = c.min_threshold.unwrap_or(0.0);
        if th_min_pkts == 0.0 {
            // thresh_ 0 (red.cc 201-208): half the queue that drains in targetdelay_, at least 5.
            th_min_pkts = 5.0;
            let targetqueue = c.target_delay.as_secs_f64() * ptc;
            if th_min_pkts < targetqueue / 2.0 {
                th_min_pkts = targetqueue / 2.0;
            }
        }
        let mut th_max_pkts = c.max_threshold.unwrap_or(0.0);
        if th_max_pkts == 0.0 {
            th_max_pkts = 3.0 * th_min_pkts; // red.cc 209-210
        }
        // red.cc 289-297: in byte mode the thresholds count mean_pktsize_ bytes each.
        let (th_min, th_max) = if c.bytes {
            (th_min_pkts * c.mean_pktsize as f64, th_max_pkts * c.mean_pktsize as f64)
        } else {
            (th_min_pkts, th_max_pkts)
        };
        let mut th_diff = th_max - th_min;
        if th_diff == 0.0 {
            th_diff = 1.0; // red.cc 305-312
        }
        let max_p = c.max_p;
        let (v_c, v_d) = if c.gentle { ((1.0 - max_p) / th_max, 2.0 * max_p - 1.0) } else { (0.0, 0.0) };
        Ns2RedState {
            th_min_pkts,
            th_max_pkts,
            th_min,
            th_max,
            q_w,
            max_p,
            v_a: 1.0 / th_diff,
            v_b: -th_min / th_diff,
            v_c,
            v_d,
            mark_p: c.mark_p,
            mean_pktsize: c.mean_pktsize.max(1),
            bytes: c.bytes,
            wait: c.wait,
            gentle: c.gentle,
            setbit: c.ecn,
            rate_bps: rate.0,
            ave: 0.0,
            count: 0,
            count_bytes: 0,
            old: false,
            rng,
        }
    }

    /// red.cc 687 and 714: whether a queue of `q_pkts` / `q_bytes` waiting has reached ns-2's
    /// `limit_` (`queue-limit`): packets, or in byte mode `limit_ × mean_pktsize_` bytes. A
    /// byte buffer is compared with the bytes waiting.
    #[inline]
    pub fn limit_reached(&self, limit: BufferLimit, q_pkts: u32, q_bytes: u64) -> bool {
        match limit {
            BufferLimit::Packets(n) if self.bytes => q_bytes >= n as u64 * self.mean_pktsize as u64,
            BufferLimit::Packets(n) => q_pkts >= n,
            BufferLimit::Bytes(b) => q_bytes >= b,
            BufferLimit::Unlimited => false,
        }
    }

    /// red.cc `enque` (627-766) for a packet of `size` bytes (ECN-capable: `ect`) arriving to a
    /// queue holding `q_pkts` / `q_bytes` (waiting, not the one on the wire), empty for
    /// `idle_for` since the transmitter went idle. `full`: the buffer has no room (the port's
    /// test); the packet is then dropped after the estimator ran ("forced" drop).
    pub fn on_arrival(
        &mut self,
        q_pkts: u32,
        q_bytes: u64,
        size: u32,
        ect: bool,
        idle_for: Nanos,
        full: bool,
    ) -> Verdict {
        // red.cc 637-652: an idle period counts as m arrivals to an empty queue, m = ptc × idle
        // time (ptc from mean_pktsize_; idle_pktsize_ is used only by cautious_ 3).
        let mut m: u64 = 0;
        if idle_for > Nanos::ZERO {
            let per_sec = 8 * self.mean_pktsize as u128 * 1_000_000_000;
            m = (idle_for.as_nanos() as u128 * self.rate_bps as u128 / per_sec).min(u64::MAX as u128) as u64;
        }
        // red.cc 658 and estimator (386-405).
        let qlen = if self.bytes { q_bytes as f64 } else { q_pkts as f64 };
        let keep = 1.0 - self.q_w;
        let mut ave = self.ave;
        if m < 4096 {
            for _ in 0..m {
                ave *= keep;
            }
        } else {
            ave *= keep.powf(m as f64);
        }
        ave *= keep;
        ave += self.q_w * qlen;
        self.ave = ave;
        // red.cc 673-674.
        self.count += 1;
        self.count_bytes += size as i64;
        let mut verdict = Verdict::Accept;
        // red.cc 691: no early hits unless the average is at least th_min and more than one
        // packet (byte mode: more than one byte) waits. With use_mark_p_ the "forced" drop
        // above max_th (692-695) is skipped: the probability is capped at 1 instead.
        if ave >= self.th_min && qlen > 1.0 {
            if !self.old {
                // 696-705: first arrival above th_min: restart the count, no hit.
                self.count = 1;
                self.count_bytes = size as i64;
                self.old = true;
            } else {
                verdict = self.drop_early(size, ect);
            }
        } else {
            self.old = false; // 709-713
        }
        if full {
            // 714-716 and 753-763: drop the arriving packet (drop_tail_), reset the count.
            self.count = 0;
            self.count_bytes = 0;
            return Verdict::Drop;
        }
        verdict
    }

    /// `v_ave`: the average queue (bytes in byte mode).
    pub fn average(&self) -> f64 {
        self.ave
    }

    #[cfg(test)]
    fn red_avg_for_test(&self) -> f64 {
        self.ave
    }

    /// red.cc `calculate_p_new` (435-459).
    fn p_new(&self) -> f64 {
        let ave = self.ave;
        let mut p = if self.gentle && ave >= self.th_max {
            self.v_c * ave + self.v_d
        } else if !self.gentle && ave >= self.th_max {
            1.0
        } else {
            let p = self.v_a * ave + self.v_b;
            p * self.max_p
        };
        if p > 1.0 {
            p = 1.0;
        }
        p
    }

    /// red.cc `modify_p` (477-505).
    fn modify_p(&self, mut p: f64, size: u32) -> f64 {
        let count1 = if self.bytes { (self.count_bytes / self.mean_pktsize as i64) as f64 } else { self.count as f64 };
        if self.wait {
            if count1 * p < 1.0 {
                p = 0.0;
            } else if count1 * p < 2.0 {
                p /= 2.0 - count1 * p;
            } else {
                p = 1.0;
            }
        } else if count1 * p < 1.0 {
            p /= 1.0 - count1 * p;
        } else {
            p = 1.0;
        }
        if self.bytes && p < 1.0 {
            p = (p * size as f64) / self.mean_pktsize as f64;
        }
        if p > 1.0 {
            p = 1.0;
        }
        p
    }

    /// red.cc `drop_early` (514-571).
    fn drop_early(&mut self, size: u32, ect: bool) -> Verdict {
        let p1 = self.p_new();
        let p = self.modify_p(p1, size);
        let u = self.rng.uniform();
        if u <= p {
            self.count = 0;
            self.count_bytes = 0;
            // 561-568: mark only while the probability is below mark_p_ (`v_prob1 < mark_p`
            // in ns-2.35 as released and as Debian ships it; DCTCP patches change it to `<=`,
            // so that mark_p_ 1 marks at probability 1 too: here such a hit is a drop).
            if self.setbit && ect && p1 < self.mark_p {
                Verdict::Mark
            } else {
                Verdict::Drop
            }
        } else {
            Verdict::Accept
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns2(cfg: Ns2RedConfig, rate_bps: u64) -> Ns2RedState {
        Ns2RedState::new(&cfg, Rng::stream(5, 7), BitsPerSec(rate_bps), Nanos::from_micros(10))
    }

    #[test]
    fn ns2_red_automatic_thresholds_and_weight() {
        // ns-2.35 prints thresh 625, maxthresh 1875, q_weight 3.99999199996e-06 for
        // `duplex-link 1Gb 10us RED`: ptc = 1e9 / (8 × 500) = 250,000 mean packets/s.
        let r = ns2(Ns2RedConfig::default(), 1_000_000_000);
        assert_eq!((r.th_min_pkts, r.th_max_pkts), (625.0, 1875.0));
        // Byte mode: thresholds in bytes, 625 × 500 (about 300 packets of 1040 bytes).
        assert_eq!((r.th_min, r.th_max), (312_500.0, 937_500.0));
        assert!((r.q_w - 3.99999199996e-06).abs() < 1e-16, "{}", r.q_w);
        assert_eq!(r.max_p, 0.1);
        // On a slow link the minimum threshold stays at 5 mean packets.
        let slow = ns2(Ns2RedConfig::default(), 1_500_000);
        assert_eq!((slow.th_min_pkts, slow.th_max_pkts, slow.th_min), (5.0, 15.0, 2500.0));
        // Explicit values win; a given minimum alone gives a maximum of three times it.
        let given =
            ns2(Ns2RedConfig { min_threshold: Some(20.0), weight: Some(0.002), ..Default::default() }, 1_000_000_000);
        assert_eq!((given.th_min_pkts, given.th_max_pkts, given.q_w), (20.0, 60.0, 0.002));
    }

    /// Packet mode, average = queue (weight 1), thresholds 5 and 15, max_p 0.1.
    fn ns2_pkts(wait: bool, gentle: bool, ecn: bool) -> Ns2RedState {
        let cfg = Ns2RedConfig {
            min_threshold: Some(5.0),
            max_threshold: Some(15.0),
            weight: Some(1.0),
            bytes: false,
            wait,
            gentle,
            ecn,
            ..Default::default()
        };
        ns2(cfg, 1_000_000_000)
    }

    fn gaps(r: &mut Ns2RedState, qlen: u32, n: usize) -> Vec<usize> {
        let mut last = None;
        let mut out = Vec::new();
        for i in 0..n {
            if r.on_arrival(qlen, 0, 1040, false, Nanos::ZERO, false) == Verdict::Drop {
                if let Some(l) = last {
                    out.push(i - l);
                }
                last = Some(i);
            }
        }
        out
    }

    #[test]
    fn ns2_red_wait_spaces_hits() {
        // Queue 10: p_b = 0.1 × 5/10 = 0.05. With wait_ no hit until count × p_b reaches 1
        // (20 arrivals), a certain hit at 2 (40 arrivals).
        let g = gaps(&mut ns2_pkts(true, true, false), 10, 100_000);
        assert!(g.len() > 1000);
        assert!(g.iter().all(|&x| (20..=40).contains(&x)), "{:?}", &g[..20]);
        // Without wait_ hits come after 1 to 20 arrivals (p_b / (1 - count × p_b)).
        let g = gaps(&mut ns2_pkts(false, true, false), 10, 100_000);
        assert!(g.iter().all(|&x| (1..=20).contains(&x)));
        assert!(g.iter().any(|&x| x < 20 / 2));
    }

    #[test]
    fn ns2_red_mark_p_turns_marks_into_drops() {
        // setbit_: between the thresholds (p_b <= mark_p_ 0.1) hits on ECN-capable packets
        // are marks; in the gentle region (p_b > 0.1) they are drops.
        let mut r = ns2_pkts(true, true, true);
        let v: Vec<Verdict> = (0..10_000).map(|_| r.on_arrival(10, 0, 1040, true, Nanos::ZERO, false)).collect();
        assert!(v.contains(&Verdict::Mark) && !v.contains(&Verdict::Drop));
        let v: Vec<Verdict> = (0..10_000).map(|_| r.on_arrival(20, 0, 1040, true, Nanos::ZERO, false)).collect();
        assert!(v.contains(&Verdict::Drop) && !v.contains(&Verdict::Mark));
        // A packet that is not ECN-capable is dropped in both regions.
        let v: Vec<Verdict> = (0..10_000).map(|_| r.on_arrival(10, 0, 1040, false, Nanos::ZERO, false)).collect();
        assert!(v.contains(&Verdict::Drop) && !v.contains(&Verdict::Mark));
        // With mark_p_ 1 the gentle region marks (its probability stays below 1) ...
        let cfg = Ns2RedConfig { mark_p: 1.0, ..Default::default() };
        let mut r = ns2(
            Ns2RedConfig {
                min_threshold: Some(5.0),
                max_threshold: Some(15.0),
                weight: Some(1.0),
                bytes: false,
                ecn: true,
                ..cfg
            },
            1_000_000_000,
        );
        let v: Vec<Verdict> = (0..10_000).map(|_| r.on_arrival(25, 0, 1040, true, Nanos::ZERO, false)).collect();
        assert!(v.contains(&Verdict::Mark) && !v.contains(&Verdict::Drop));
        // ... but at probability 1 (twice max_th and above) ns-2.35's `v_prob1 < mark_p_` fails: drops.
        let v: Vec<Verdict> = (0..1_000).map(|_| r.on_arrival(40, 0, 1040, true, Nanos::ZERO, false)).collect();
        assert!(v.iter().all(|&x| x == Verdict::Drop));
    }

    #[test]
    fn ns2_red_never_hits_with_at_most_one_packet_waiting() {
        // Average far above 2 × max_th, but red.cc 691 needs qlen > 1: in packet mode more
        // than one packet waiting, in byte mode more than one byte.
        let mut r = ns2_pkts(true, true, false);
        r.ave = 1000.0;
        r.q_w = 0.0; // keep the average
        for q in [0, 1] {
            assert!(
                (0..1000).all(|_| r.on_arrival(q, 1040 * q as u64, 1040, false, Nanos::ZERO, false) == Verdict::Accept)
            );
        }
        assert!((0..1000).any(|_| r.on_arrival(2, 2080, 1040, false, Nanos::ZERO, false) == Verdict::Drop));
        let mut b = ns2(
            Ns2RedConfig {
                min_threshold: Some(5.0),
                max_threshold: Some(15.0),
                weight: Some(0.0),
                ..Default::default()
            },
            1_000_000_000,
        );
        b.ave = 1e6;
        assert!((0..1000).all(|_| b.on_arrival(0, 0, 1040, false, Nanos::ZERO, false) == Verdict::Accept));
        assert!((0..1000).any(|_| b.on_arrival(1, 1040, 1040, false, Nanos::ZERO, false) == Verdict::Drop));
    }

    #[test]
    fn ns2_red_byte_mode() {
        // Average and thresholds in bytes: 5 and 15 mean packets are 2500 and 7500 bytes.
        let mut r = ns2(
            Ns2RedConfig {
                min_threshold: Some(5.0),
                max_threshold: Some(15.0),
                weight: Some(1.0),
                ..Default::default()
            },
            1_000_000_000,
        );
        assert_eq!((r.th_min, r.th_max), (2500.0, 7500.0));
        r.on_arrival(4, 4160, 1040, false, Nanos::ZERO, false);
        assert_eq!(r.red_avg_for_test(), 4160.0);
        // modify_p: count = count_bytes / mean_pktsize (integer division), and the probability
        // scales with the packet's size: p_b 0.05 after 10 packets of 1040 bytes (count 20)
        // gives 0.05 / (2 - 1) × 1040 / 500.
        r.count_bytes = 10_400;
        assert!((r.modify_p(0.05, 1040) - 0.05 * 1040.0 / 500.0).abs() < 1e-15);
        r.count_bytes = 10_399; // count 20 still (10399 / 500 = 20)
        assert!((r.modify_p(0.05, 40) - 0.05 * 40.0 / 500.0).abs() < 1e-15);
        r.count_bytes = 9_999; // count 19: still waiting
        assert_eq!(r.modify_p(0.05, 1040), 0.0);
        // Small packets are hit far less often than large ones at the same average.
        let hits = |size: u32| {
            let mut r = ns2(
                Ns2RedConfig {
                    min_threshold: Some(5.0),
                    max_threshold: Some(15.0),
                    weight: Some(1.0),
                    ..Default::default()
                },
                1_000_000_000,
            );
            (0..100_000).filter(|_| r.on_arrival(5, 5000, size, false, Nanos::ZERO, false) == Verdict::Drop).count()
        };
        let (small, large) = (hits(40), hits(1040));
        assert!(large > 10 * small.max(1), "{small} {large}");
    }

    #[test]
    fn ns2_red_idle_decay_and_forced_drop() {
        // weight 0.5; after 1 ms idle at 1 Gbps, m = 1e-3 × 250,000 = 250 empty arrivals.
        let mut r = ns2(Ns2RedConfig { weight: Some(0.5), bytes: false, ..Default::default() }, 1_000_000_000);
        r.ave = 1.0;
        r.on_arrival(0, 0, 1040, false, Nanos::from_millis(1), false);
        assert_eq!(r.ave, 0.5f64.powi(251));
        r.ave = 1.0;
        r.on_arrival(0, 0, 1040, false, Nanos::from_nanos(3_999), false); // less than one mean packet time
        assert_eq!(r.ave, 0.5);
        // A full buffer drops after the estimator ran, and restarts the count.
        let mut r = ns2_pkts(true, true, false);
        r.on_arrival(3, 0, 1040, false, Nanos::ZERO, false);
        assert_eq!(r.on_arrival(3, 0, 1040, false, Nanos::ZERO, true), Verdict::Drop);
        assert_eq!((r.ave, r.count, r.count_bytes), (3.0, 0, 0));
    }
}
