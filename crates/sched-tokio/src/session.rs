//! The session layer: what opens every connection before any frame (docs/schedtcp.md, "Wire
//! format").
//!
//! A sender opens a *session* on a connection of its own (the control connection): a random
//! 16-byte session id and the sizes of every message it will send (its flow table). The
//! receiver accepts or refuses it with a reply. Each message's connection then *joins* the
//! session by its id before its frames; a frame's message id is the message's index in the
//! session's table. So message ids are scoped to their session: one receiver serves any
//! number of senders, one after another or at once, and bytes from a connection that did not
//! join an open session, or naming a message the session did not announce, are refused
//! without touching any delivery.
//!
//! Every connection starts with the receiver's *challenge*: a fresh random nonce. With a
//! pre-shared [`Key`], an open carries HMAC-SHA256(key, nonce | the open's bytes) and a join
//! HMAC-SHA256(key, nonce | the join's preamble): the receiver refuses either without a valid
//! MAC, and a join copied from another connection fails, its nonce being another one.
//!
//! ```text
//! challenge (receiver, every connection, first), 24 bytes:
//!  "FCSC" | ver | flags (bit 0: a key is required) | zero u16 | nonce (16 bytes)
//! preamble (sender, every connection), 24 bytes:
//!  0       4   5    6       8                                24
//!  +-------+---+----+-------+---------------------------------+
//!  | magic |ver|kind| zero  |           session id            |
//!  +-------+---+----+-------+---------------------------------+
//! open (kind 1) continues:  count u32 | count x size u64 | crc32 of everything before it | mac (32)
//! join (kind 2) continues:  mac (32); frames follow (see `frame`)
//! mac: HMAC-SHA256(key, nonce | every byte of the open or join before the mac); zeros without a key
//! reply to an open, 8 bytes + reason:  "FCSR" | ver | status (0 accepted, 1 refused) | reason length u16 | reason
//! control connection after the reply, sender to receiver: b'h' (heartbeat, every second), b'c' (close)
//! ```
//!
//! All integers big-endian. Nothing is allocated from a declared count before it is checked
//! against the receiver's limit.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use std::fmt;
use std::io::Read;

pub const MAGIC: [u8; 4] = *b"FCSS";
pub const REPLY_MAGIC: [u8; 4] = *b"FCSR";
pub const CHALLENGE_MAGIC: [u8; 4] = *b"FCSC";
pub const VERSION: u8 = 3;
pub const CHALLENGE_BYTES: usize = 24;
pub const NONCE_BYTES: usize = 16;
pub const MAC_BYTES: usize = 32;
/// The challenge's flag saying the receiver checks MACs.
pub const FLAG_KEY_REQUIRED: u8 = 1;
pub const PREAMBLE_BYTES: usize = 24;
pub const REPLY_BYTES: usize = 8;
pub const KIND_OPEN: u8 = 1;
pub const KIND_JOIN: u8 = 2;
/// Control bytes after an accepted open.
pub const HEARTBEAT: u8 = b'h';
pub const CLOSE: u8 = b'c';

/// `N` bytes from the system's random source (the kernel's; the std hasher's random keys
/// when that cannot be read).
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    if std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b)).is_err() {
        use std::hash::{BuildHasher, Hasher};
        for (k, part) in b.chunks_mut(8).enumerate() {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_usize(k);
            h.write_u128(
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos(),
            );
            part.copy_from_slice(&h.finish().to_be_bytes()[..part.len()]);
        }
    }
    b
}

/// The pre-shared key of a receiver and its senders. Its secret is kept as HMAC uses it: as
/// given up to the hash's 64-byte block, hashed with SHA-256 beyond (RFC 2104), so the type
/// is small and `Copy` and the MACs are those of the secret itself.
#[derive(Copy, Clone, PartialEq, Eq)]
pub struct Key {
    bytes: [u8; 64],
    len: u8,
}

impl Key {
    /// The fewest bytes a secret may have.
    pub const MIN_BYTES: usize = 16;

    /// A key from a secret (surrounding ASCII whitespace, such as a key file's last newline,
    /// is not part of it). Err: fewer than [`Key::MIN_BYTES`] bytes remain.
    pub fn new(secret: &[u8]) -> Result<Key, String> {
        let start = secret.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(secret.len());
        let end = secret.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(start, |e| e + 1);
        let secret = &secret[start..end];
        if secret.is_empty() {
            return Err(format!("empty (a key has at least {} bytes)", Key::MIN_BYTES));
        }
        if secret.len() < Key::MIN_BYTES {
            return Err(format!("{} bytes, a key has at least {}", secret.len(), Key::MIN_BYTES));
        }
        let mut bytes = [0u8; 64];
        let len = if secret.len() > 64 {
            bytes[..32].copy_from_slice(&Sha256::digest(secret));
            32
        } else {
            bytes[..secret.len()].copy_from_slice(secret);
            secret.len()
        };
        Ok(Key { bytes, len: len as u8 })
    }

    fn mac(&self) -> Hmac<Sha256> {
        Hmac::<Sha256>::new_from_slice(&self.bytes[..self.len as usize]).expect("HMAC takes any key length")
    }

    /// A MAC computed piece by piece (as a message table is read), starting with `nonce`.
    pub fn start(&self, nonce: &[u8; NONCE_BYTES]) -> MacState {
        let mut m = self.mac();
        m.update(nonce);
        MacState(m)
    }

    /// HMAC-SHA256 of `nonce` and `message`.
    pub fn sign(&self, nonce: &[u8; NONCE_BYTES], message: &[u8]) -> [u8; MAC_BYTES] {
        let mut m = self.mac();
        m.update(nonce);
        m.update(message);
        m.finalize().into_bytes().into()
    }

    /// Whether `tag` is the MAC of `nonce` and `message`, compared in constant time.
    pub fn verify(&self, nonce: &[u8; NONCE_BYTES], message: &[u8], tag: &[u8]) -> bool {
        let mut m = self.mac();
        m.update(nonce);
        m.update(message);
        m.verify_slice(tag).is_ok()
    }
}

/// A MAC being computed (see [`Key::start`]).
pub struct MacState(Hmac<Sha256>);

impl MacState {
    pub fn update(&mut self, b: &[u8]) {
        self.0.update(b);
    }

    /// Whether `tag` is the MAC of everything given, compared in constant time.
    pub fn verify(self, tag: &[u8]) -> bool {
        self.0.verify_slice(tag).is_ok()
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key(..)")
    }
}

/// What the receiver says first on every connection.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Challenge {
    pub nonce: [u8; NONCE_BYTES],
    pub key_required: bool,
}

impl Challenge {
    pub fn fresh(key_required: bool) -> Challenge {
        Challenge { nonce: random_bytes(), key_required }
    }

    pub fn encode(&self) -> [u8; CHALLENGE_BYTES] {
        let mut b = [0u8; CHALLENGE_BYTES];
        b[0..4].copy_from_slice(&CHALLENGE_MAGIC);
        b[4] = VERSION;
        b[5] = if self.key_required { FLAG_KEY_REQUIRED } else { 0 };
        b[8..24].copy_from_slice(&self.nonce);
        b
    }

    pub fn parse(b: &[u8; CHALLENGE_BYTES]) -> Result<Challenge, SessionError> {
        if b[0..4] != CHALLENGE_MAGIC {
            return Err(SessionError::BadReply(format!(
                "not a fctlab scheduling receiver (it said {:02x?} first)",
                &b[0..4]
            )));
        }
        if b[4] != VERSION {
            return Err(SessionError::BadReply(format!(
                "session protocol version {}, this build speaks version {VERSION}",
                b[4]
            )));
        }
        if b[5] & !FLAG_KEY_REQUIRED != 0 || b[6] != 0 || b[7] != 0 {
            return Err(SessionError::BadReply(format!("unknown challenge flags {:#04x}", b[5])));
        }
        Ok(Challenge { nonce: b[8..24].try_into().expect("16 bytes"), key_required: b[5] & FLAG_KEY_REQUIRED != 0 })
    }
}

/// Appends the MAC of `msg` (everything written so far) under `key` for `nonce`: zeros
/// without a key.
fn append_mac(msg: &mut Vec<u8>, key: Option<&Key>, nonce: &[u8; NONCE_BYTES]) {
    let tag = key.map_or([0u8; MAC_BYTES], |k| k.sign(nonce, msg));
    msg.extend_from_slice(&tag);
}

/// A session's id: 16 random bytes, shown as 32 hex digits.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(pub [u8; 16]);

impl SessionId {
    /// A fresh id from the system's random source (the kernel's; the std hasher's random keys
    /// when that cannot be read).
    pub fn random() -> SessionId {
        SessionId(random_bytes())
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

/// What a connection's first 24 bytes say.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Preamble {
    Open(SessionId),
    Join(SessionId),
}

/// Why bytes are not a session's preamble, open or reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionError {
    /// A frame where the preamble belongs: a sender without sessions.
    FrameFirst,
    BadMagic([u8; 4]),
    BadVersion(u8),
    BadKind(u8),
    BadReserved(u16),
    TooManyMessages {
        count: u32,
        max: u32,
    },
    Checksum,
    BadReply(String),
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionError::FrameFirst => write!(
                f,
                "a frame before any session preamble (a sender of protocol version 1, which had no sessions: update it)"
            ),
            SessionError::BadMagic(m) => {
                write!(f, "not a fctlab scheduling connection (magic {m:02x?}, expected {MAGIC:02x?})")
            }
            SessionError::BadVersion(v) => {
                write!(f, "session protocol version {v}, this build speaks version {VERSION}")
            }
            SessionError::BadKind(k) => write!(f, "unknown connection kind {k} (1 opens a session, 2 joins one)"),
            SessionError::BadReserved(r) => write!(f, "reserved preamble bits {r:#06x} set"),
            SessionError::TooManyMessages { count, max } => {
                write!(f, "a session of {count} messages, the limit is {max}")
            }
            SessionError::Checksum => write!(f, "checksum mismatch in the session's message table"),
            SessionError::BadReply(s) => write!(f, "the receiver's reply: {s}"),
        }
    }
}

impl std::error::Error for SessionError {}

fn preamble(kind: u8, id: SessionId, out: &mut Vec<u8>) {
    out.extend_from_slice(&MAGIC);
    out.push(VERSION);
    out.push(kind);
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&id.0);
}

/// A message's connection joining session `id`: the preamble and its MAC for the receiver's
/// `nonce` (zeros without a key).
pub fn encode_join(id: SessionId, key: Option<&Key>, nonce: &[u8; NONCE_BYTES]) -> Vec<u8> {
    let mut v = Vec::with_capacity(PREAMBLE_BYTES + MAC_BYTES);
    preamble(KIND_JOIN, id, &mut v);
    append_mac(&mut v, key, nonce);
    v
}

/// The control connection's opening: session `id` announcing messages of these sizes, and
/// its MAC for the receiver's `nonce` (zeros without a key).
pub fn encode_open(id: SessionId, sizes: &[u64], key: Option<&Key>, nonce: &[u8; NONCE_BYTES]) -> Vec<u8> {
    let mut v = Vec::with_capacity(PREAMBLE_BYTES + 8 + 8 * sizes.len() + MAC_BYTES);
    preamble(KIND_OPEN, id, &mut v);
    v.extend_from_slice(&(sizes.len() as u32).to_be_bytes());
    for s in sizes {
        v.extend_from_slice(&s.to_be_bytes());
    }
    let crc = crc32fast::hash(&v);
    v.extend_from_slice(&crc.to_be_bytes());
    append_mac(&mut v, key, nonce);
    v
}

/// Parses a connection's first 24 bytes.
pub fn parse_preamble(b: &[u8; PREAMBLE_BYTES]) -> Result<Preamble, SessionError> {
    let magic: [u8; 4] = b[0..4].try_into().expect("4 bytes");
    if magic == crate::frame::MAGIC {
        return Err(SessionError::FrameFirst);
    }
    if magic != MAGIC {
        return Err(SessionError::BadMagic(magic));
    }
    if b[4] != VERSION {
        return Err(SessionError::BadVersion(b[4]));
    }
    let reserved = u16::from_be_bytes([b[6], b[7]]);
    if reserved != 0 {
        return Err(SessionError::BadReserved(reserved));
    }
    let id = SessionId(b[8..24].try_into().expect("16 bytes"));
    match b[5] {
        KIND_OPEN => Ok(Preamble::Open(id)),
        KIND_JOIN => Ok(Preamble::Join(id)),
        k => Err(SessionError::BadKind(k)),
    }
}

/// The message count that follows an open's preamble, checked against `max` before anything
/// is read or allocated for the table.
pub fn parse_count(b: [u8; 4], max: u32) -> Result<u32, SessionError> {
    let count = u32::from_be_bytes(b);
    if count > max {
        return Err(SessionError::TooManyMessages { count, max });
    }
    Ok(count)
}

/// Checks an open's table: `head` is the preamble and count (28 bytes), `table` the sizes,
/// `crc` the last 4 bytes.
pub fn parse_table(head: &[u8], table: &[u8], crc: [u8; 4]) -> Result<Vec<u64>, SessionError> {
    let mut h = crc32fast::Hasher::new();
    h.update(head);
    h.update(table);
    if h.finalize() != u32::from_be_bytes(crc) {
        return Err(SessionError::Checksum);
    }
    Ok(table.chunks_exact(8).map(|c| u64::from_be_bytes(c.try_into().expect("8 bytes"))).collect())
}

/// The receiver's reply to an open: accepted (`None`) or refused with a reason.
pub fn encode_reply(refusal: Option<&str>) -> Vec<u8> {
    let reason = refusal.unwrap_or("").as_bytes();
    let reason = &reason[..reason.len().min(u16::MAX as usize)];
    let mut v = Vec::with_capacity(REPLY_BYTES + reason.len());
    v.extend_from_slice(&REPLY_MAGIC);
    v.push(VERSION);
    v.push(u8::from(refusal.is_some()));
    v.extend_from_slice(&(reason.len() as u16).to_be_bytes());
    v.extend_from_slice(reason);
    v
}

/// Parses a reply's 8 bytes: Ok(reason length) when refused with a reason to read, Ok(None)
/// when accepted.
pub fn parse_reply(b: &[u8; REPLY_BYTES]) -> Result<Option<usize>, SessionError> {
    if b[0..4] != REPLY_MAGIC {
        return Err(SessionError::BadReply(format!(
            "not a fctlab scheduling receiver (it answered {:02x?})",
            &b[0..4]
        )));
    }
    if b[4] != VERSION {
        return Err(SessionError::BadReply(format!("version {}, this build speaks version {VERSION}", b[4])));
    }
    let len = u16::from_be_bytes([b[6], b[7]]) as usize;
    match b[5] {
        0 => Ok(None),
        1 => Ok(Some(len)),
        s => Err(SessionError::BadReply(format!("unknown status {s}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const NONCE: [u8; NONCE_BYTES] = [5; NONCE_BYTES];

    /// An open without its MAC.
    fn open(id: SessionId, sizes: &[u64]) -> Vec<u8> {
        let mut v = encode_open(id, sizes, None, &NONCE);
        v.truncate(v.len() - MAC_BYTES);
        v
    }

    #[test]
    fn open_and_join_round_trip() {
        let id = SessionId::random();
        assert_ne!(id, SessionId::random());
        let open = open(id, &[0, 5, 1 << 40]);
        assert_eq!(parse_preamble(open[..24].try_into().unwrap()), Ok(Preamble::Open(id)));
        assert_eq!(parse_count(open[24..28].try_into().unwrap(), 10), Ok(3));
        let crc: [u8; 4] = open[open.len() - 4..].try_into().unwrap();
        assert_eq!(parse_table(&open[..28], &open[28..open.len() - 4], crc), Ok(vec![0, 5, 1 << 40]));
        let join = encode_join(id, None, &NONCE);
        assert_eq!(join.len(), PREAMBLE_BYTES + MAC_BYTES);
        assert_eq!(parse_preamble(join[..24].try_into().unwrap()), Ok(Preamble::Join(id)));
        assert_eq!(id.to_string().len(), 32);
        assert_eq!(parse_reply(encode_reply(None)[..8].try_into().unwrap()), Ok(None));
        let r = encode_reply(Some("busy"));
        assert_eq!(parse_reply(r[..8].try_into().unwrap()), Ok(Some(4)));
        assert_eq!(&r[8..], b"busy");
    }

    #[test]
    fn each_bad_field_is_named() {
        let id = SessionId([7; 16]);
        let good = encode_join(id, None, &NONCE)[..PREAMBLE_BYTES].to_vec();
        let p = |b: &[u8]| parse_preamble(b.try_into().unwrap());
        let mut f = Vec::new();
        crate::frame::encode(0, 0, 4, b"abcd", &mut f);
        assert_eq!(p(&f[..24]), Err(SessionError::FrameFirst));
        assert!(SessionError::FrameFirst.to_string().contains("version 1"));
        let mut b = good.clone();
        b[0] = b'X';
        assert!(matches!(p(&b), Err(SessionError::BadMagic(_))));
        let mut b = good.clone();
        b[4] = 1;
        assert_eq!(p(&b), Err(SessionError::BadVersion(1)));
        let mut b = good.clone();
        b[5] = 9;
        assert_eq!(p(&b), Err(SessionError::BadKind(9)));
        let mut b = good.clone();
        b[7] = 1;
        assert_eq!(p(&b), Err(SessionError::BadReserved(1)));
        assert_eq!(
            parse_count(u32::MAX.to_be_bytes(), 1000),
            Err(SessionError::TooManyMessages { count: u32::MAX, max: 1000 })
        );
        let mut open = open(id, &[1, 2]);
        open[30] ^= 1;
        let crc: [u8; 4] = open[open.len() - 4..].try_into().unwrap();
        assert_eq!(parse_table(&open[..28], &open[28..open.len() - 4], crc), Err(SessionError::Checksum));
        assert!(parse_reply(b"HTTP/1.1").is_err());
    }

    #[test]
    fn macs_bind_the_key_the_nonce_and_every_byte() {
        let key = Key::new(b"  a secret of some length\n").unwrap();
        assert_eq!(key, Key::new(b"a secret of some length").unwrap());
        assert!(Key::new(b" \n").unwrap_err().contains("empty"));
        assert!(Key::new(b"short").unwrap_err().contains("5 bytes, a key has at least 16"));
        // A secret beyond HMAC's block is hashed, as HMAC itself would.
        let long = [7u8; 100];
        let direct = Hmac::<Sha256>::new_from_slice(&long).unwrap().chain_update(NONCE).chain_update(b"m").finalize();
        assert_eq!(Key::new(&long).unwrap().sign(&NONCE, b"m"), <[u8; 32]>::from(direct.into_bytes()));
        let id = SessionId([9; 16]);
        let join = encode_join(id, Some(&key), &NONCE);
        let (body, tag) = join.split_at(PREAMBLE_BYTES);
        assert!(key.verify(&NONCE, body, tag));
        // Another nonce (a join replayed on another connection), another key, another byte.
        assert!(!key.verify(&[6; NONCE_BYTES], body, tag));
        assert!(!Key::new(b"another secret of some length").unwrap().verify(&NONCE, body, tag));
        let mut other = body.to_vec();
        other[10] ^= 1;
        assert!(!key.verify(&NONCE, &other, tag));
        let open = encode_open(id, &[1, 2, 3], Some(&key), &NONCE);
        let (body, tag) = open.split_at(open.len() - MAC_BYTES);
        let mut m = key.start(&NONCE);
        m.update(&body[..20]);
        m.update(&body[20..]);
        assert!(m.verify(tag));
        assert_eq!(&encode_open(id, &[1, 2, 3], None, &NONCE)[open.len() - MAC_BYTES..], &[0u8; MAC_BYTES]);
        let c = Challenge::fresh(true);
        assert_eq!(Challenge::parse(&c.encode()), Ok(c));
        assert_ne!(Challenge::fresh(false).nonce, Challenge::fresh(false).nonce);
        let mut b = c.encode();
        b[4] = 2;
        assert!(Challenge::parse(&b).unwrap_err().to_string().contains("version 2"));
        assert!(Challenge::parse(b"HTTP/1.1 400 Bad Request").is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

        /// Arbitrary bytes never panic the preamble, count or reply parsers.
        #[test]
        fn parsers_survive_any_input(b in proptest::collection::vec(any::<u8>(), 24..=24)) {
            let _ = parse_preamble(b[..].try_into().unwrap());
            let _ = parse_count(b[..4].try_into().unwrap(), 1 << 20);
            let _ = parse_reply(b[..8].try_into().unwrap());
            let _ = parse_table(&b[..4], &b[4..20], b[20..24].try_into().unwrap());
        }

        /// Any one changed byte of an open is refused or leaves the session id and table as sent.
        #[test]
        fn a_corrupted_open_is_refused(sizes in proptest::collection::vec(any::<u64>(), 0..8), at in 0usize..100, flip in 1u8..=255) {
            let id = SessionId([3; 16]);
            let mut open = open(id, &sizes);
            let at = at % open.len();
            open[at] ^= flip;
            let ok = parse_preamble(open[..24].try_into().unwrap()).ok()
                .and_then(|p| parse_count(open[24..28].try_into().unwrap(), 1 << 20).ok().map(|n| (p, n)))
                .filter(|(_, n)| 28 + 8 * *n as usize + 4 == open.len())
                .and_then(|(p, _)| {
                    let crc: [u8; 4] = open[open.len() - 4..].try_into().unwrap();
                    parse_table(&open[..28], &open[28..open.len() - 4], crc).ok().map(|t| (p, t))
                });
            prop_assert!(ok.is_none(), "byte {} ^ {:#x} accepted", at, flip);
        }
    }
}
