//! TCP parameters shared by every connection of a run (the `[transport]` table).

use fctlab_engine::Nanos;

#[derive(Copy, Clone, Debug, PartialEq)]
pub struct TcpConfig {
    /// Maximum segment size: payload bytes per data packet.
    pub mss_bytes: u32,
    /// IP + TCP header bytes added to every packet on the wire (data and ACK).
    pub header_bytes: u32,
    /// Initial congestion window in segments.
    pub initial_cwnd_segments: u32,
    pub min_rto: Nanos,
    pub initial_rto: Nanos,
    pub max_rto: Nanos,
    /// Acknowledge every second full segment (or after `delayed_ack_timeout`).
    pub delayed_ack: bool,
    pub delayed_ack_timeout: Nanos,
    /// Selective acknowledgements and scoreboard-based loss recovery (RFC 2018, RFC 6675).
    pub sack: bool,
    /// ECN-capable transport: data packets carry ECT, the sender reacts to ECE.
    pub ecn: bool,
    /// Open each connection with SYN / SYN-ACK before sending data.
    pub handshake: bool,
    /// Receiver window: bytes the sender may have outstanding.
    pub rwnd_bytes: u64,
    /// Duplicate ACKs (or segments SACKed) that trigger fast retransmit.
    pub dupthresh: u32,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss_bytes: 1460,
            header_bytes: 40,
            initial_cwnd_segments: 10,
            min_rto: Nanos::from_millis(200),
            initial_rto: Nanos::from_secs(1),
            max_rto: Nanos::from_secs(60),
            delayed_ack: false,
            delayed_ack_timeout: Nanos::from_millis(40),
            sack: true,
            ecn: false,
            handshake: false,
            rwnd_bytes: 4 << 20,
            dupthresh: 3,
        }
    }
}
