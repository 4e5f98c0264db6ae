//! Receiver-driven flows (the `homa` transport): the sender sends up to what its receiver has
//! granted and sends again what the receiver asks for, as its protocol's `TransportPolicy`
//! reports them after each header from the receiver. Its own timeout only introduces the
//! message again (`timers.rs`): finding losses is the receiver's job.

use super::TcpSender;
use fctlab_engine::Nanos;
use fctlab_net::Packet;

impl TcpSender {
    /// Receiver-driven flows: the latest grant, and the range the receiver asked for again.
    #[cold]
    pub(super) fn follow_receiver(&mut self, now: Nanos, out: &mut Vec<Packet>) {
        self.granted = self.cc.send_limit().unwrap_or(u64::MAX);
        if let Some((start, end)) = self.cc.take_resend() {
            let (mut seq, end) = (start, end.min(self.snd_max));
            while seq < end {
                let len = (end - seq).min(self.st.mss_bytes);
                self.retransmit(now, seq, len, out);
                seq += len;
            }
        }
    }
}
