//! The frame that carries a chunk of a message on a connection (docs/schedtcp.md, "Wire
//! format").
//!
//! ```text
//!  0       4   5   6       8               16              24      28              36      40
//!  +-------+---+---+-------+---------------+---------------+-------+---------------+-------+------
//!  | magic |ver|flg| zero  |  message id   |    offset     |  len  |  total size   | crc32 | chunk
//!  +-------+---+---+-------+---------------+---------------+-------+---------------+-------+------
//! ```
//!
//! All integers big-endian. `magic` is `FCSQ`, `ver` 1, `flg` and `zero` are 0. The chunk is
//! bytes `offset .. offset + len` of message `message id`, whose size is `total size`; `crc32`
//! (IEEE) covers the first 36 bytes of the header and the chunk. The decoder trusts no length:
//! a chunk longer than [`Limits::max_chunk`], a message larger than [`Limits::max_message`], a
//! range past the message's end (or one whose end overflows) is an error before any byte of
//! the chunk is read, and nothing is allocated from a declared size.

use std::fmt;

pub const MAGIC: [u8; 4] = *b"FCSQ";
pub const VERSION: u8 = 1;
pub const HEADER_BYTES: usize = 40;

/// What the decoder accepts.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The longest chunk, bytes.
    pub max_chunk: u32,
    /// The largest message, bytes.
    pub max_message: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { max_chunk: 1 << 20, max_message: 1 << 40 }
    }
}

/// A decoded frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    pub message: u64,
    pub offset: u64,
    pub total: u64,
    pub chunk: Vec<u8>,
}

/// Why bytes are not a frame. Errors found after the header has been read name the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameError {
    BadMagic([u8; 4]),
    BadVersion(u8),
    BadFlags { flags: u8, reserved: u16 },
    ChunkTooLong { message: u64, len: u32, max: u32 },
    MessageTooLarge { message: u64, total: u64, max: u64 },
    BeyondMessage { message: u64, offset: u64, len: u32, total: u64 },
    EmptyChunk { message: u64 },
    Checksum { message: u64, offset: u64 },
}

impl FrameError {
    /// The message the frame claimed to belong to, when the header got that far.
    pub fn message(&self) -> Option<u64> {
        match *self {
            FrameError::BadMagic(_) | FrameError::BadVersion(_) | FrameError::BadFlags { .. } => None,
            FrameError::ChunkTooLong { message, .. }
            | FrameError::MessageTooLarge { message, .. }
            | FrameError::BeyondMessage { message, .. }
            | FrameError::EmptyChunk { message }
            | FrameError::Checksum { message, .. } => Some(message),
        }
    }
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::BadMagic(m) => {
                write!(f, "not a fctlab scheduling frame (magic {m:02x?}, expected {MAGIC:02x?})")
            }
            FrameError::BadVersion(v) => write!(f, "frame version {v}, this build speaks version {VERSION}"),
            FrameError::BadFlags { flags, reserved } => {
                write!(f, "unknown frame flags {flags:#04x} / reserved bits {reserved:#06x}")
            }
            FrameError::ChunkTooLong { message, len, max } => {
                write!(f, "message {message}: chunk of {len} B, the limit is {max} B")
            }
            FrameError::MessageTooLarge { message, total, max } => {
                write!(f, "message {message}: size {total} B, the limit is {max} B")
            }
            FrameError::BeyondMessage { message, offset, len, total } => {
                write!(f, "message {message}: chunk {offset}+{len} B lies beyond its size {total} B")
            }
            FrameError::EmptyChunk { message } => write!(f, "message {message}: empty chunk of a non-empty message"),
            FrameError::Checksum { message, offset } => {
                write!(f, "message {message}: checksum mismatch in the chunk at offset {offset}")
            }
        }
    }
}

impl std::error::Error for FrameError {}

/// The header of the frame carrying `chunk_len` bytes at `offset` of message `message` of
/// `total` bytes, with the checksum of `chunk`.
pub fn encode(message: u64, offset: u64, total: u64, chunk: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&MAGIC);
    out.push(VERSION);
    out.push(0);
    out.extend_from_slice(&0u16.to_be_bytes());
    out.extend_from_slice(&message.to_be_bytes());
    out.extend_from_slice(&offset.to_be_bytes());
    out.extend_from_slice(&(chunk.len() as u32).to_be_bytes());
    out.extend_from_slice(&total.to_be_bytes());
    let mut h = crc32fast::Hasher::new();
    h.update(&out[start..start + 36]);
    h.update(chunk);
    out.extend_from_slice(&h.finalize().to_be_bytes());
    out.extend_from_slice(chunk);
}

/// A frame's header, checked against the limits (the chunk not yet read).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub message: u64,
    pub offset: u64,
    pub len: u32,
    pub total: u64,
    crc: u32,
    raw: [u8; 36],
}

fn be64(b: &[u8]) -> u64 {
    u64::from_be_bytes(b.try_into().expect("8 bytes"))
}

/// Parses and checks a header from its 40 bytes.
pub fn parse_header(b: &[u8; HEADER_BYTES], limits: &Limits) -> Result<Header, FrameError> {
    let magic: [u8; 4] = b[0..4].try_into().expect("4 bytes");
    if magic != MAGIC {
        return Err(FrameError::BadMagic(magic));
    }
    if b[4] != VERSION {
        return Err(FrameError::BadVersion(b[4]));
    }
    let reserved = u16::from_be_bytes([b[6], b[7]]);
    if b[5] != 0 || reserved != 0 {
        return Err(FrameError::BadFlags { flags: b[5], reserved });
    }
    let message = be64(&b[8..16]);
    let offset = be64(&b[16..24]);
    let len = u32::from_be_bytes(b[24..28].try_into().expect("4 bytes"));
    let total = be64(&b[28..36]);
    if total > limits.max_message {
        return Err(FrameError::MessageTooLarge { message, total, max: limits.max_message });
    }
    if len > limits.max_chunk {
        return Err(FrameError::ChunkTooLong { message, len, max: limits.max_chunk });
    }
    match offset.checked_add(len as u64) {
        Some(end) if end <= total => {}
        _ => return Err(FrameError::BeyondMessage { message, offset, len, total }),
    }
    if len == 0 && total > 0 {
        return Err(FrameError::EmptyChunk { message });
    }
    let crc = u32::from_be_bytes(b[36..40].try_into().expect("4 bytes"));
    Ok(Header { message, offset, len, total, crc, raw: b[0..36].try_into().expect("36 bytes") })
}

impl Header {
    /// Checks `chunk` (exactly `len` bytes) against the header's checksum.
    pub fn verify(&self, chunk: &[u8]) -> Result<(), FrameError> {
        let mut h = crc32fast::Hasher::new();
        h.update(&self.raw);
        h.update(chunk);
        if h.finalize() == self.crc {
            Ok(())
        } else {
            Err(FrameError::Checksum { message: self.message, offset: self.offset })
        }
    }
}

/// Decodes one frame from the front of `buf`: `Ok(None)` when `buf` holds less than a whole
/// frame (reading more may complete it), else the frame and the bytes it took.
pub fn decode(buf: &[u8], limits: &Limits) -> Result<Option<(Frame, usize)>, FrameError> {
    let Some(head) = buf.get(..HEADER_BYTES) else { return Ok(None) };
    let h = parse_header(head.try_into().expect("header bytes"), limits)?;
    let end = HEADER_BYTES + h.len as usize;
    let Some(chunk) = buf.get(HEADER_BYTES..end) else { return Ok(None) };
    h.verify(chunk)?;
    Ok(Some((Frame { message: h.message, offset: h.offset, total: h.total, chunk: chunk.to_vec() }, end)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn frame(message: u64, offset: u64, total: u64, chunk: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        encode(message, offset, total, chunk, &mut v);
        v
    }

    #[test]
    fn round_trip_and_partial_input() {
        let f = frame(7, 100, 1000, b"hello");
        assert_eq!(f.len(), HEADER_BYTES + 5);
        let l = Limits::default();
        let (got, used) = decode(&f, &l).unwrap().unwrap();
        assert_eq!((got.message, got.offset, got.total, &got.chunk[..], used), (7, 100, 1000, &b"hello"[..], f.len()));
        for cut in 0..f.len() {
            assert_eq!(decode(&f[..cut], &l), Ok(None), "cut at {cut}");
        }
        // An empty message is one empty chunk.
        assert!(decode(&frame(1, 0, 0, b""), &l).unwrap().is_some());
    }

    #[test]
    fn each_bad_field_is_named() {
        let l = Limits { max_chunk: 16, max_message: 1 << 20 };
        let good = frame(3, 0, 10, b"abcd");
        let mut f = good.clone();
        f[0] = b'X';
        assert!(matches!(decode(&f, &l), Err(FrameError::BadMagic(_))));
        let mut f = good.clone();
        f[4] = 9;
        assert_eq!(decode(&f, &l), Err(FrameError::BadVersion(9)));
        let mut f = good.clone();
        f[5] = 1;
        assert!(matches!(decode(&f, &l), Err(FrameError::BadFlags { flags: 1, .. })));
        // A length past the limit is refused before the chunk is read.
        let mut f = good[..HEADER_BYTES].to_vec();
        f[24..28].copy_from_slice(&u32::MAX.to_be_bytes());
        assert_eq!(decode(&f, &l), Err(FrameError::ChunkTooLong { message: 3, len: u32::MAX, max: 16 }));
        let mut f = good.clone();
        f[28..36].copy_from_slice(&u64::MAX.to_be_bytes());
        assert!(matches!(decode(&f, &l), Err(FrameError::MessageTooLarge { message: 3, .. })));
        // offset + len overflowing u64, and a chunk past the end.
        let l2 = Limits { max_chunk: 16, max_message: u64::MAX };
        let mut f = good.clone();
        f[16..24].copy_from_slice(&(u64::MAX - 1).to_be_bytes());
        f[28..36].copy_from_slice(&u64::MAX.to_be_bytes());
        assert!(matches!(decode(&f, &l2), Err(FrameError::BeyondMessage { message: 3, .. })));
        assert!(matches!(
            decode(&frame(3, 8, 10, b"abcd"), &l),
            Err(FrameError::BeyondMessage { offset: 8, len: 4, total: 10, .. })
        ));
        assert_eq!(decode(&frame(3, 0, 10, b""), &l), Err(FrameError::EmptyChunk { message: 3 }));
        // One flipped bit in the chunk, or in a header field that passed its checks.
        let mut f = good.clone();
        f[HEADER_BYTES + 1] ^= 4;
        assert_eq!(decode(&f, &l), Err(FrameError::Checksum { message: 3, offset: 0 }));
        let mut f = good.clone();
        f[15] ^= 1;
        assert_eq!(decode(&f, &l), Err(FrameError::Checksum { message: 2, offset: 0 }));
        assert!(FrameError::Checksum { message: 2, offset: 0 }.to_string().contains("message 2"));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

        /// Arbitrary bytes never panic the decoder; whatever it accepts is within the limits,
        /// and it never claims more bytes than it was given.
        #[test]
        fn decoder_survives_any_input(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let l = Limits { max_chunk: 64, max_message: 1 << 16 };
            if let Ok(Some((f, used))) = decode(&bytes, &l) {
                prop_assert!(used <= bytes.len());
                prop_assert!(f.chunk.len() <= 64 && f.total <= 1 << 16 && f.offset + f.chunk.len() as u64 <= f.total);
            }
        }

        /// Valid frames with any one byte changed are either refused or decode to a frame whose
        /// fields were not changed... except where the change hit a field the checksum covers,
        /// which is then refused: a corrupted chunk is never delivered.
        #[test]
        fn corruption_is_caught(msg in any::<u64>(), off in 0u64..1000, chunk in proptest::collection::vec(any::<u8>(), 1..64),
                                at in 0usize..104, flip in 1u8..=255) {
            let total = off + chunk.len() as u64 + 5;
            let mut f = frame(msg, off, total, &chunk);
            let at = at % f.len();
            f[at] ^= flip;
            let l = Limits { max_chunk: 64, max_message: u64::MAX };
            prop_assert!(!matches!(decode(&f, &l), Ok(Some(_))), "a corrupted frame (byte {} ^ {:#x}) was accepted", at, flip);
        }

        /// A stream of frames cut anywhere decodes to the same frames.
        #[test]
        fn streams_decode_whatever_the_cuts(chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..32), 1..8),
                                            cut in 1usize..64) {
            let mut stream = Vec::new();
            let mut off = 0u64;
            let total: u64 = chunks.iter().map(|c| c.len() as u64).sum();
            for c in &chunks {
                encode(9, off, total, c, &mut stream);
                off += c.len() as u64;
            }
            let l = Limits::default();
            let (mut buf, mut got) = (Vec::new(), Vec::new());
            for piece in stream.chunks(cut) {
                buf.extend_from_slice(piece);
                while let Some((f, used)) = decode(&buf, &l).unwrap() {
                    got.push(f.chunk);
                    buf.drain(..used);
                }
            }
            prop_assert!(buf.is_empty());
            prop_assert_eq!(got, chunks);
        }
    }
}
