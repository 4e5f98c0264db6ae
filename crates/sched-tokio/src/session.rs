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
//! ```text
//! preamble (every connection), 24 bytes:
//!  0       4   5    6       8                                24
//!  +-------+---+----+-------+---------------------------------+
//!  | magic |ver|kind| zero  |           session id            |
//!  +-------+---+----+-------+---------------------------------+
//! open (kind 1) continues:  count u32 | count x size u64 | crc32 of everything before it
//! join (kind 2): frames follow (see `frame`)
//! reply to an open, 8 bytes + reason:  "FCSR" | ver | status (0 accepted, 1 refused) | reason length u16 | reason
//! control connection after the reply, sender to receiver: b'h' (heartbeat, every second), b'c' (close)
//! ```
//!
//! All integers big-endian. Nothing is allocated from a declared count before it is checked
//! against the receiver's limit.

use std::fmt;
use std::io::Read;

pub const MAGIC: [u8; 4] = *b"FCSS";
pub const REPLY_MAGIC: [u8; 4] = *b"FCSR";
pub const VERSION: u8 = 2;
pub const PREAMBLE_BYTES: usize = 24;
pub const REPLY_BYTES: usize = 8;
pub const KIND_OPEN: u8 = 1;
pub const KIND_JOIN: u8 = 2;
/// Control bytes after an accepted open.
pub const HEARTBEAT: u8 = b'h';
pub const CLOSE: u8 = b'c';

/// A session's id: 16 random bytes, shown as 32 hex digits.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(pub [u8; 16]);

impl SessionId {
    /// A fresh id from the system's random source (the kernel's; the std hasher's random keys
    /// when that cannot be read).
    pub fn random() -> SessionId {
        let mut b = [0u8; 16];
        if std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b)).is_err() {
            use std::hash::{BuildHasher, Hasher};
            for (k, half) in b.chunks_mut(8).enumerate() {
                let mut h = std::collections::hash_map::RandomState::new().build_hasher();
                h.write_usize(k);
                h.write_u128(
                    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos(),
                );
                half.copy_from_slice(&h.finish().to_be_bytes());
            }
        }
        SessionId(b)
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

/// The preamble of a message's connection joining session `id`.
pub fn encode_join(id: SessionId) -> Vec<u8> {
    let mut v = Vec::with_capacity(PREAMBLE_BYTES);
    preamble(KIND_JOIN, id, &mut v);
    v
}

/// The control connection's opening: session `id` announcing messages of these sizes.
pub fn encode_open(id: SessionId, sizes: &[u64]) -> Vec<u8> {
    let mut v = Vec::with_capacity(PREAMBLE_BYTES + 8 + 8 * sizes.len());
    preamble(KIND_OPEN, id, &mut v);
    v.extend_from_slice(&(sizes.len() as u32).to_be_bytes());
    for s in sizes {
        v.extend_from_slice(&s.to_be_bytes());
    }
    let crc = crc32fast::hash(&v);
    v.extend_from_slice(&crc.to_be_bytes());
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

    #[test]
    fn open_and_join_round_trip() {
        let id = SessionId::random();
        assert_ne!(id, SessionId::random());
        let open = encode_open(id, &[0, 5, 1 << 40]);
        assert_eq!(parse_preamble(open[..24].try_into().unwrap()), Ok(Preamble::Open(id)));
        assert_eq!(parse_count(open[24..28].try_into().unwrap(), 10), Ok(3));
        let crc: [u8; 4] = open[open.len() - 4..].try_into().unwrap();
        assert_eq!(parse_table(&open[..28], &open[28..open.len() - 4], crc), Ok(vec![0, 5, 1 << 40]));
        assert_eq!(parse_preamble(encode_join(id)[..].try_into().unwrap()), Ok(Preamble::Join(id)));
        assert_eq!(id.to_string().len(), 32);
        assert_eq!(parse_reply(encode_reply(None)[..8].try_into().unwrap()), Ok(None));
        let r = encode_reply(Some("busy"));
        assert_eq!(parse_reply(r[..8].try_into().unwrap()), Ok(Some(4)));
        assert_eq!(&r[8..], b"busy");
    }

    #[test]
    fn each_bad_field_is_named() {
        let id = SessionId([7; 16]);
        let good = encode_join(id);
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
        let mut open = encode_open(id, &[1, 2]);
        open[30] ^= 1;
        let crc: [u8; 4] = open[open.len() - 4..].try_into().unwrap();
        assert_eq!(parse_table(&open[..28], &open[28..open.len() - 4], crc), Err(SessionError::Checksum));
        assert!(parse_reply(b"HTTP/1.1").is_err());
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
            let mut open = encode_open(id, &sizes);
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
