//! SCHED_TCP over real sockets: the policies of `fctlab-sched` choosing which message fills
//! each chunk written to a pool of plain TCP connections (tokio).
//!
//! As in the paper's implementation (Ayesta, Bertaux, Carvin, IFIP Networking 2015, section
//! 6.1), the sender keeps the connections plain TCP would have: one per message, opened when
//! the message is sent and carrying exactly that message's size in chunk payload before it is
//! closed (its *virtual queue*). Which message's bytes fill a chunk is the policy's choice,
//! made when the connection's socket has room for another chunk (`write` returned); a chunk
//! in the kernel's send buffer cannot be preempted, so smaller chunks and send buffers
//! preempt sooner at the cost of more frame headers (docs/schedtcp.md, "Over real sockets").
//!
//! Every connection begins with the receiver's challenge, a fresh nonce. A sender first opens
//! a *session* ([`session`]): a random id and every message's size, on a connection of its
//! own that then carries heartbeats until the sender closes it; with a pre-shared [`Key`] the
//! open carries an HMAC-SHA256 of the nonce and the table, and each join one of its own
//! connection's nonce and the session id, so only holders of the key open or join. Each
//! message's connection joins the session by its id, and a frame's message id is its index
//! in the session's table, so one receiver serves any number of senders, one after another
//! or at once. The receiver reassembles messages from any connection of their session and
//! delivers each one whole, in completion order. It answers every completed message with a
//! completion notice (the message's index, 8 bytes) on the connection its last chunk came on,
//! so the sender measures each message's transfer time from its `send` to that notice: the
//! same definition as the simulator's (start to the acknowledgement of the last byte).
//!
//! Faults are per message and never fatal to the others: a frame that fails its checks (see
//! [`frame`]) ends its connection and fails the message it names; a connection that ends in
//! the middle of a frame fails that frame's message; messages still incomplete when their
//! session ends (closed by the sender, its heartbeats stopped, or the receiver stopped) fail
//! with how much arrived. Bytes that belong to no open session's announced message are
//! refused and counted and change no delivery. Memory is bounded per session and in all
//! ([`RecvConfig::max_buffered_bytes`], [`RecvConfig::max_total_buffered_bytes`],
//! back-pressure beyond them; [`RecvConfig::max_table_bytes`]), however small the chunks;
//! connections are capped in all and per session, and the oldest not yet in a session (else
//! one of the session holding the most) is closed to make room, also when descriptors run
//! out; an idle session is closed when a new one needs its room.

pub mod frame;
mod reassembly;
mod receiver;
mod sender;
pub mod session;

pub use reassembly::reserved_for;
pub use receiver::{Counters, Delivery, Receiver, RecvConfig, TABLE_BYTES_PER_MESSAGE};
pub use sender::{SendConfig, SendReport, Sender};
pub use session::{Key, SessionId};

/// Bytes of a completion notice: the message id, big-endian.
pub const NOTICE_BYTES: usize = 8;

/// The test content of message `id`: `len` bytes of a xorshift stream seeded by the id, so a
/// receiver can check every byte of a workload's messages without being told them.
pub fn pattern(id: u64, len: usize) -> Vec<u8> {
    let mut x = id.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
