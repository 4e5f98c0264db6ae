//! RED (Floyd and Jacobson 1993) in two variants: the classic algorithm with ns-3's defaults,
//! and ns-2.35's `REDQueue` (`red_variant = "ns2"`, [`super::red_ns2`]), which runs its
//! estimator on every arrival, also on one the full buffer then drops.

use super::red_ns2::{Ns2RedConfig, Ns2RedState};
use super::{BufferLimit, keys_as, Buffer, Discipline, KeyError, LinkInfo, QueueView, Verdict};
use crate::packet::{flags, PacketMeta};
use fctlab_engine::{Nanos, Rng};
use serde::Deserialize;

/// RED parameters (Floyd and Jacobson 1993), thresholds in packets, or in bytes with `bytes`
/// (the average then follows the bytes waiting: DCQCN's and HPCC's Kmin and Kmax).
///
/// With `ns2` set, the port runs ns-2.35's `REDQueue` with the parameters in [`Ns2RedConfig`]
/// instead, and the other fields are ignored.
#[derive(Clone, Debug, PartialEq)]
pub struct RedConfig {
    pub min_threshold_pkts: f64,
    pub max_threshold_pkts: f64,
    /// Marking/drop probability at `max_threshold_pkts`.
    pub max_p: f64,
    /// Weight of the EWMA of the queue length.
    pub weight: f64,
    /// Mark ECN-capable packets instead of dropping them.
    pub ecn: bool,
    /// Gentle RED: probability rises from max_p to 1 between max and twice max.
    pub gentle: bool,
    /// The thresholds (the fields named `_pkts`) and the average are in bytes.
    pub bytes: bool,
    /// ns-2.35's RED instead of the classic algorithm.
    pub ns2: Option<Ns2RedConfig>,
    /// The thresholds are a port of this rate's (bits per second): a port of another rate
    /// scales them by its rate over this one, as DCQCN deployments set Kmin and Kmax per link
    /// speed (the HPCC ns-3 fork's `KMIN_MAP`/`KMAX_MAP`). None: every port as given.
    pub threshold_rate_bps: Option<u64>,
}

impl Default for RedConfig {
    fn default() -> Self {
        // ns-3's RedQueueDisc defaults: MinTh 5, MaxTh 15, LInterm 50 (max_p 0.02), QW 0.002, Gentle.
        RedConfig {
            min_threshold_pkts: 5.0,
            max_threshold_pkts: 15.0,
            max_p: 0.02,
            weight: 0.002,
            ecn: false,
            gentle: true,
            bytes: false,
            ns2: None,
            threshold_rate_bps: None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct RedState {
    cfg: RedConfig,
    avg: f64,
    count: i64,
    rng: Rng,
    /// Transmission time of a typical (full-size) packet, for the idle-time decay.
    typical_tx: Nanos,
}

impl RedState {
    fn on_arrival(&mut self, q_pkts: u32, q_bytes: u64, idle_for: Nanos) -> Verdict {
        let c = &self.cfg;
        if q_pkts == 0 && idle_for > Nanos::ZERO {
            let m = idle_for.as_nanos() as f64 / self.typical_tx.as_nanos().max(1) as f64;
            self.avg *= (1.0 - c.weight).powf(m);
        }
        let sample = if c.bytes { q_bytes as f64 } else { q_pkts as f64 };
        self.avg = (1.0 - c.weight) * self.avg + c.weight * sample;
        let avg = self.avg;
        let pb = if avg < c.min_threshold_pkts {
            self.count = -1;
            return Verdict::Accept;
        } else if avg < c.max_threshold_pkts {
            c.max_p * (avg - c.min_threshold_pkts) / (c.max_threshold_pkts - c.min_threshold_pkts)
        } else if c.gentle && avg < 2.0 * c.max_threshold_pkts {
            c.max_p + (1.0 - c.max_p) * (avg - c.max_threshold_pkts) / c.max_threshold_pkts
        } else {
            self.count = 0;
            return if c.ecn { Verdict::Mark } else { Verdict::Drop };
        };
        self.count += 1;
        let denom = 1.0 - self.count as f64 * pb;
        let pa = if denom <= 0.0 { 1.0 } else { (pb / denom).min(1.0) };
        if self.rng.uniform() < pa {
            self.count = 0;
            if c.ecn {
                Verdict::Mark
            } else {
                Verdict::Drop
            }
        } else {
            Verdict::Accept
        }
    }
}

/// RED on one port: the classic algorithm or ns-2's.
#[derive(Clone, Debug)]
pub enum Red {
    Classic(Box<RedState>),
    Ns2(Box<Ns2RedState>),
}

impl Red {
    /// ns-2's RED state, if the port runs that variant.
    pub fn ns2(&self) -> Option<&Ns2RedState> {
        match self {
            Red::Ns2(r) => Some(r),
            Red::Classic(_) => None,
        }
    }
}

/// `cfg` for a port of `rate_bps`: its thresholds scaled by that rate over
/// `threshold_rate_bps`, when given.
fn scaled_to(cfg: &RedConfig, rate_bps: u64) -> RedConfig {
    let mut c = cfg.clone();
    if let Some(r) = cfg.threshold_rate_bps.filter(|&r| r > 0) {
        let f = rate_bps as f64 / r as f64;
        c.min_threshold_pkts *= f;
        c.max_threshold_pkts *= f;
    }
    c
}

/// The keys RED reads.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Keys {
    red_min_threshold: Option<Buffer>,
    red_max_threshold: Option<Buffer>,
    red_max_p: Option<f64>,
    red_weight: Option<f64>,
    red_ecn: Option<bool>,
    red_gentle: Option<bool>,
    red_variant: Option<String>,
    red_mark_p: Option<f64>,
    red_wait: Option<bool>,
    red_bytes: Option<bool>,
    red_threshold_rate: Option<String>,
}

/// The keys only ns-2's RED takes.
const NS2_KEYS: [&str; 3] = ["red_mark_p", "red_wait", "red_bytes"];

fn check_p_w(max_p: f64, weight: f64) -> Result<(), KeyError> {
    if !(0.0..=1.0).contains(&max_p) {
        return Err(KeyError::new("red_max_p", format!("must be a probability in [0, 1], got {max_p}")));
    }
    if !(weight > 0.0 && weight <= 1.0) {
        return Err(KeyError::new("red_weight", format!("must be in (0, 1], got {weight}")));
    }
    Ok(())
}

impl Discipline for Red {
    const NAME: &'static str = "red";
    type Config = RedConfig;
    const KEYS: &'static [&'static str] = &[
        "red_min_threshold",
        "red_max_threshold",
        "red_max_p",
        "red_weight",
        "red_ecn",
        "red_gentle",
        "red_variant",
        "red_mark_p",
        "red_wait",
        "red_bytes",
        "red_threshold_rate",
    ];
    const DROP_UNMARKABLE: bool = true;

    fn parse(keys: toml::Table) -> Result<RedConfig, KeyError> {
        let given: Vec<String> = keys.keys().cloned().collect();
        let k: Keys = keys_as(keys)?;
        let d = RedConfig::default();
        let ns2 = match k.red_variant.as_deref().unwrap_or("classic") {
            "classic" => false,
            "ns2" => true,
            other => return Err(KeyError::new("red_variant", format!("expected \"classic\" or \"ns2\", got \"{other}\""))),
        };
        if ns2 && k.red_threshold_rate.is_some() {
            return Err(KeyError::new("red_threshold_rate", "only used with red_variant = \"classic\" (ns-2's RED sets its thresholds per queue)"));
        }
        let threshold_rate_bps = match k.red_threshold_rate.as_deref() {
            None => None,
            Some(s) => Some(fctlab_engine::parse::parse_rate(s).map_err(|m| KeyError::new("red_threshold_rate", m))?.0),
        };
        if ns2 {
            let cfg = ns2_config(&k)?;
            check_p_w(cfg.max_p, cfg.weight.unwrap_or(1.0))?;
            return Ok(RedConfig { ns2: Some(cfg), ..d });
        }
        if let Some(key) = NS2_KEYS.iter().find(|n| given.iter().any(|g| g == *n)) {
            return Err(KeyError::new(key, "only used with red_variant = \"ns2\" (red_variant is \"classic\")"));
        }
        // Both thresholds in packets, or both in bytes (the average then in bytes too).
        let unit = |b: Option<Buffer>, key: &str| -> Result<Option<(f64, bool)>, KeyError> {
            match b.map(|b| b.0) {
                None => Ok(None),
                Some(BufferLimit::Packets(n)) => Ok(Some((n as f64, false))),
                Some(BufferLimit::Bytes(n)) => Ok(Some((n as f64, true))),
                Some(BufferLimit::Unlimited) => {
                    Err(KeyError::new(key, "RED thresholds are in packets (\"5pkt\") or bytes (\"5KB\")"))
                }
            }
        };
        let (lo, hi) = (unit(k.red_min_threshold, "red_min_threshold")?, unit(k.red_max_threshold, "red_max_threshold")?);
        let bytes = match (lo, hi) {
            (Some((_, a)), Some((_, b))) if a != b => {
                return Err(KeyError::new("red_max_threshold", "must be in the unit of red_min_threshold (both packets or both bytes)"))
            }
            (Some((_, true)), _) | (_, Some((_, true))) if lo.is_none() || hi.is_none() => {
                return Err(KeyError::new(
                    if lo.is_none() { "red_min_threshold" } else { "red_max_threshold" },
                    "RED thresholds in bytes need both red_min_threshold and red_max_threshold",
                ))
            }
            (Some((_, b)), _) => b,
            _ => false,
        };
        let cfg = RedConfig {
            min_threshold_pkts: lo.map_or(d.min_threshold_pkts, |(v, _)| v),
            max_threshold_pkts: hi.map_or(d.max_threshold_pkts, |(v, _)| v),
            max_p: k.red_max_p.unwrap_or(d.max_p),
            weight: k.red_weight.unwrap_or(d.weight),
            ecn: k.red_ecn.unwrap_or(false),
            gentle: k.red_gentle.unwrap_or(d.gentle),
            bytes,
            ns2: None,
            threshold_rate_bps,
        };
        if cfg.min_threshold_pkts >= cfg.max_threshold_pkts {
            return Err(KeyError::new("red_max_threshold", "must be above red_min_threshold"));
        }
        check_p_w(cfg.max_p, cfg.weight)?;
        Ok(cfg)
    }

    /// Classic RED: `variant = "classic"` and its thresholds, `max_p`, `weight`, `gentle`, `ecn`;
    /// ns-2's REDQueue: `variant = "ns2"` and ns-2's own names (`thresh`, `maxthresh`,
    /// `q_weight` (null: automatic), `max_p`, `mark_p`, `wait`, `bytes`, `mean_pktsize`,
    /// `target_delay_s`, `gentle`, `ecn`).
    fn describe(c: &RedConfig) -> serde_json::Map<String, serde_json::Value> {
        use serde_json::json;
        let mut v = match &c.ns2 {
            None if c.bytes => json!({
                "variant": "classic",
                "min_threshold_bytes": c.min_threshold_pkts,
                "max_threshold_bytes": c.max_threshold_pkts,
                "max_p": c.max_p,
                "weight": c.weight,
                "gentle": c.gentle,
                "ecn": c.ecn,
            }),
            None => json!({
                "variant": "classic",
                "min_threshold_pkts": c.min_threshold_pkts,
                "max_threshold_pkts": c.max_threshold_pkts,
                "max_p": c.max_p,
                "weight": c.weight,
                "gentle": c.gentle,
                "ecn": c.ecn,
            }),
            Some(n) => json!({
                "variant": "ns2",
                "thresh": n.min_threshold,
                "maxthresh": n.max_threshold,
                "q_weight": n.weight,
                "max_p": n.max_p,
                "mark_p": n.mark_p,
                "wait": n.wait,
                "bytes": n.bytes,
                "mean_pktsize": n.mean_pktsize,
                "target_delay_s": n.target_delay.as_secs_f64(),
                "gentle": n.gentle,
                "ecn": n.ecn,
            }),
        };
        if let (Some(r), serde_json::Value::Object(m)) = (c.threshold_rate_bps, &mut v) {
            // (Only when given: every plan without it reads as before.)
            m.insert("threshold_rate_bps".into(), json!(r));
        }
        match v {
            serde_json::Value::Object(m) => m,
            _ => unreachable!("a json! object"),
        }
    }
    fn new(cfg: &RedConfig, link: &LinkInfo, rng: Rng) -> Red {
        match &cfg.ns2 {
            Some(n) => Red::Ns2(Box::new(Ns2RedState::new(n, rng, link.rate, link.delay))),
            None => Red::Classic(Box::new(RedState {
                cfg: scaled_to(cfg, link.rate.0),
                avg: 0.0,
                count: -1,
                rng,
                typical_tx: link.rate.tx_time(1500),
            })),
        }
    }

    #[inline]
    fn on_arrival(&mut self, q: &QueueView, meta: &PacketMeta) -> Verdict {
        match self {
            Red::Classic(r) => r.on_arrival(q.waiting_pkts, q.waiting_bytes, q.idle_for()),
            Red::Ns2(r) => r.on_arrival(q.waiting_pkts, q.waiting_bytes, meta.wire_bytes as u32, meta.has(flags::ECT), q.idle_for(), q.full),
        }
    }

    /// ns-2's RED decides for every arrival, also one the full buffer drops; the classic one
    /// is asked only about packets that fit.
    fn own_admission(&self) -> bool {
        matches!(self, Red::Ns2(_))
    }

    fn ns2_full(&self, limit: BufferLimit, pkts: u32, bytes: u64, _wire: u64) -> bool {
        match self {
            // red.cc 714: drop when N or more wait.
            Red::Classic(_) => limit.reached(pkts, bytes),
            Red::Ns2(r) => r.limit_reached(limit, pkts, bytes),
        }
    }

    fn average(&self) -> Option<f64> {
        match self {
            Red::Classic(r) => Some(r.avg),
            Red::Ns2(r) => Some(r.average()),
        }
    }
}

/// ns-2.35's RED: ns-default.tcl's `Queue/RED` values, overridden by the keys given. A
/// threshold `"Npkt"` is ns-2's `thresh_ N`: N mean packets of `mean_pktsize_` (500) bytes in
/// byte mode, N packets with `red_bytes = false`; a byte threshold is taken as it is (byte
/// mode only).
fn ns2_config(k: &Keys) -> Result<Ns2RedConfig, KeyError> {
    let d = Ns2RedConfig::default();
    let bytes = k.red_bytes.unwrap_or(d.bytes);
    let threshold = |b: Option<Buffer>, key: &str| -> Result<Option<f64>, KeyError> {
        let t = match b.map(|b| b.0) {
            None => return Ok(None),
            Some(BufferLimit::Packets(n)) => n as f64,
            Some(BufferLimit::Bytes(b)) if bytes => b as f64 / d.mean_pktsize as f64,
            Some(BufferLimit::Bytes(_)) => {
                return Err(KeyError::new(key, "with red_bytes = false RED thresholds are in packets, e.g. \"5pkt\""))
            }
            Some(BufferLimit::Unlimited) => {
                return Err(KeyError::new(key, "RED thresholds are in packets (\"5pkt\") or bytes (\"30KB\")"))
            }
        };
        if t <= 0.0 {
            return Err(KeyError::new(key, "must be above zero (leave it out for ns-2's automatic threshold)"));
        }
        Ok(Some(t))
    };
    let min_threshold = threshold(k.red_min_threshold, "red_min_threshold")?;
    let max_threshold = threshold(k.red_max_threshold, "red_max_threshold")?;
    if let (Some(lo), Some(hi)) = (min_threshold, max_threshold) {
        if hi < lo {
            return Err(KeyError::new("red_max_threshold", "must not be below red_min_threshold"));
        }
    }
    let mark_p = k.red_mark_p.unwrap_or(d.mark_p);
    // Above 1 is allowed, as in ns-2: every hit on an ECN-capable packet is then a mark.
    if !(mark_p >= 0.0 && mark_p.is_finite()) {
        return Err(KeyError::new("red_mark_p", format!("must be a number >= 0 (above 1: always mark), got {mark_p}")));
    }
    Ok(Ns2RedConfig {
        min_threshold,
        max_threshold,
        weight: k.red_weight,
        max_p: k.red_max_p.unwrap_or(d.max_p),
        mark_p,
        wait: k.red_wait.unwrap_or(d.wait),
        bytes,
        gentle: k.red_gentle.unwrap_or(d.gentle),
        ecn: k.red_ecn.unwrap_or(d.ecn),
        ..d
    })
}


#[cfg(test)]
mod tests {
    use super::*;
    use fctlab_engine::BitsPerSec;

    fn classic(cfg: RedConfig, rng: Rng) -> RedState {
        let link = LinkInfo { rate: BitsPerSec(10_000_000_000), delay: Nanos::from_nanos(1000) };
        match Red::new(&cfg, &link, rng) {
            Red::Classic(r) => *r,
            Red::Ns2(_) => unreachable!(),
        }
    }

    #[test]
    fn red_never_acts_below_min_and_always_above_twice_max() {
        let cfg = RedConfig { weight: 1.0, ..Default::default() };
        let mut q = classic(cfg, Rng::stream(1, 1));
        // With weight 1 the average is the queue length: below min_threshold (5) no arrival
        // is ever dropped, beyond twice max_threshold (30, gentle RED) every one is.
        for qlen in 0..5 {
            for _ in 0..1000 {
                assert_eq!(q.on_arrival(qlen, 0, Nanos::ZERO), Verdict::Accept, "queue {qlen}");
            }
        }
        for qlen in 31..200 {
            for _ in 0..200 {
                assert_eq!(q.on_arrival(qlen, 0, Nanos::ZERO), Verdict::Drop, "queue {qlen}");
            }
        }
    }

    #[test]
    fn red_drop_fraction_between_thresholds() {
        // avg fixed at 10 (weight 1): pb = 0.02 * 5/10 = 0.01; with the count correction the
        // drops are spaced about uniformly, about one per 1/pb * ~0.5..1 arrivals.
        let cfg = RedConfig { weight: 1.0, gentle: false, ..Default::default() };
        let mut q = classic(cfg, Rng::stream(3, 9));
        let n = 100_000;
        let drops = (0..n).filter(|_| q.on_arrival(10, 0, Nanos::ZERO) == Verdict::Drop).count();
        let frac = drops as f64 / n as f64;
        assert!(frac > 0.01 && frac < 0.03, "drop fraction {frac}");
    }

    fn parse(text: &str) -> Result<RedConfig, KeyError> {
        Red::parse(toml::from_str(text).unwrap())
    }

    #[test]
    fn thresholds_in_bytes_mark_on_the_bytes_waiting() {
        // DCQCN's marking: instantaneous queue (weight 1), Kmin 5 KB, Kmax 200 KB, Pmax 1%.
        let cfg = parse("red_min_threshold = \"5KB\"\nred_max_threshold = \"200KB\"\nred_max_p = 0.01\nred_weight = 1.0\nred_gentle = false\nred_ecn = true").unwrap();
        assert!(cfg.bytes);
        assert_eq!((cfg.min_threshold_pkts, cfg.max_threshold_pkts), (5000.0, 200_000.0));
        let mut q = classic(cfg, Rng::stream(1, 2));
        // Three packets of 1,000 B wait: below Kmin in bytes, though above 5 in no unit.
        assert!((0..1000).all(|_| q.on_arrival(3, 3000, Nanos::ZERO) == Verdict::Accept));
        // 200,001 B: above Kmax, every arrival is marked.
        assert!((0..1000).all(|_| q.on_arrival(3, 200_001, Nanos::ZERO) == Verdict::Mark));
        // Half-way: pb = 0.005, marks about one arrival in 100 to 200.
        let n = 100_000;
        let marks = (0..n).filter(|_| q.on_arrival(100, 102_500, Nanos::ZERO) == Verdict::Mark).count();
        let frac = marks as f64 / n as f64;
        assert!(frac > 0.005 && frac < 0.012, "mark fraction {frac}");
    }

    #[test]
    fn thresholds_given_for_a_rate_scale_with_each_ports_rate() {
        // The HPCC fork's Kmin/Kmax at 100 Gbps, 400 KB and 1,600 KB: four times that at 400 Gbps.
        let keys = "red_min_threshold = \"400KB\"\nred_max_threshold = \"1600KB\"\nred_threshold_rate = \"100Gbps\"";
        let cfg = parse(keys).unwrap();
        assert_eq!(cfg.threshold_rate_bps, Some(100_000_000_000));
        let at = |gbps: u64| {
            let link = LinkInfo { rate: BitsPerSec(gbps * 1_000_000_000), delay: Nanos::ZERO };
            match Red::new(&cfg, &link, Rng::stream(1, 3)) {
                Red::Classic(r) => (r.cfg.min_threshold_pkts, r.cfg.max_threshold_pkts),
                Red::Ns2(_) => unreachable!(),
            }
        };
        assert_eq!(at(100), (400_000.0, 1_600_000.0));
        assert_eq!(at(400), (1_600_000.0, 6_400_000.0));
        assert_eq!(at(25), (100_000.0, 400_000.0));
        let e = parse("red_threshold_rate = \"fast\"").unwrap_err();
        assert_eq!(e.key, "red_threshold_rate");
        let e = parse("red_variant = \"ns2\"\nred_threshold_rate = \"10Gbps\"").unwrap_err();
        assert!(e.message.contains("classic"), "{}", e.message);
    }

    #[test]
    fn thresholds_in_two_units_are_refused() {
        let e = parse("red_min_threshold = \"5pkt\"\nred_max_threshold = \"200KB\"").unwrap_err();
        assert_eq!(e.key, "red_max_threshold");
        assert!(e.message.contains("both packets or both bytes"), "{}", e.message);
        let e = parse("red_min_threshold = \"5KB\"").unwrap_err();
        assert!(e.message.contains("need both"), "{}", e.message);
    }
}
