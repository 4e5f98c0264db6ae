//! A message put together from chunks that may come in any order and any size: its bytes in
//! blocks allocated as their first byte arrives, with a bit per byte of which have, so that
//! what an incomplete message holds is bounded by its size ([`reserved_for`]), never by how
//! its chunks were cut.

/// A message's bytes arrive in blocks of this size, each allocated when its first byte comes.
const BLOCK_BYTES: u64 = 64 * 1024;
/// Bookkeeping reserved per block (its pointer, header and allocation) and per message.
const BLOCK_OVERHEAD_BYTES: u64 = 128;
const MESSAGE_OVERHEAD_BYTES: u64 = 256;

/// Bytes reserved for an incomplete message of `size` bytes: its blocks, a bit per byte of
/// which have arrived, and the bookkeeping. However its chunks come (one byte each, out of
/// order), it never holds more.
pub fn reserved_for(size: u64) -> u64 {
    size + size.div_ceil(8) + size.div_ceil(BLOCK_BYTES) * BLOCK_OVERHEAD_BYTES + MESSAGE_OVERHEAD_BYTES
}

/// One block of an incomplete message: its bytes and which have arrived.
struct Block {
    data: Vec<u8>,
    seen: Vec<u64>,
}

/// The words of a bitmap that bits `a..b` touch, each with its mask.
fn words(a: usize, b: usize) -> impl Iterator<Item = (usize, u64)> {
    let mut i = a;
    std::iter::from_fn(move || {
        if i >= b {
            return None;
        }
        let w = i / 64;
        let (lo, hi) = (i % 64, (b - w * 64).min(64));
        i = w * 64 + hi;
        Some((w, if hi - lo == 64 { u64::MAX } else { ((1u64 << (hi - lo)) - 1) << lo }))
    })
}

/// An incomplete message: the chunks that have arrived, in blocks.
pub(crate) struct Partial {
    size: u64,
    pub(crate) got: u64,
    pub(crate) reserved: u64,
    blocks: Vec<Option<Box<Block>>>,
}

impl Partial {
    pub(crate) fn new(size: u64) -> Partial {
        Partial {
            size,
            got: 0,
            reserved: reserved_for(size),
            blocks: (0..size.div_ceil(BLOCK_BYTES)).map(|_| None).collect(),
        }
    }

    /// Files `chunk` at `offset` (within the message: the frame's checks); false when it
    /// overlaps bytes already here.
    pub(crate) fn put(&mut self, offset: u64, chunk: &[u8]) -> bool {
        // Check every block first: an overlap changes nothing.
        let mut at = offset;
        let end = offset + chunk.len() as u64;
        while at < end {
            let k = (at / BLOCK_BYTES) as usize;
            let base = k as u64 * BLOCK_BYTES;
            let upto = end.min(base + BLOCK_BYTES);
            if let Some(b) = &self.blocks[k] {
                if words((at - base) as usize, (upto - base) as usize).any(|(w, m)| b.seen[w] & m != 0) {
                    return false;
                }
            }
            at = upto;
        }
        let mut at = offset;
        while at < end {
            let k = (at / BLOCK_BYTES) as usize;
            let base = k as u64 * BLOCK_BYTES;
            let upto = end.min(base + BLOCK_BYTES);
            let len = (self.size - base).min(BLOCK_BYTES) as usize;
            let b = self.blocks[k].get_or_insert_with(|| {
                Box::new(Block { data: Vec::with_capacity(len), seen: vec![0; len.div_ceil(64)] })
            });
            let (a, z) = ((at - base) as usize, (upto - base) as usize);
            words(a, z).for_each(|(w, m)| b.seen[w] |= m);
            // Bytes in order extend the block; a chunk past its end first fills the gap with
            // zeros (overwritten when the gap's bytes come).
            let bytes = &chunk[(at - offset) as usize..(upto - offset) as usize];
            if a >= b.data.len() {
                b.data.resize(a, 0);
                b.data.extend_from_slice(bytes);
            } else {
                let inside = (b.data.len() - a).min(bytes.len());
                b.data[a..a + inside].copy_from_slice(&bytes[..inside]);
                b.data.extend_from_slice(&bytes[inside..]);
            }
            at = upto;
        }
        self.got += chunk.len() as u64;
        true
    }

    pub(crate) fn assemble(self) -> Vec<u8> {
        let mut data = Vec::with_capacity(self.size as usize);
        for b in self.blocks.into_iter().flatten() {
            data.extend_from_slice(&b.data);
        }
        data
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Heap bytes a partial message holds: its block table, blocks, their bytes and bitmaps.
    fn held(p: &Partial) -> u64 {
        let blocks = p.blocks.capacity() * std::mem::size_of::<Option<Box<Block>>>();
        let each: usize = p
            .blocks
            .iter()
            .flatten()
            .map(|b| std::mem::size_of::<Block>() + b.data.capacity() + 8 * b.seen.capacity())
            .sum();
        (blocks + each) as u64
    }

    #[test]
    fn one_byte_chunks_in_any_order_hold_no_more_than_reserved() {
        let size = 300_000u64;
        let data = crate::pattern(1, size as usize);
        // In order, backwards, and odd offsets then even ones.
        let orders: [Box<dyn Fn() -> Vec<u64>>; 3] = [
            Box::new(|| (0..size).collect()),
            Box::new(|| (0..size).rev().collect()),
            Box::new(|| (0..size).filter(|i| i % 2 == 1).chain((0..size).filter(|i| i % 2 == 0)).collect()),
        ];
        for order in orders {
            let mut p = Partial::new(size);
            for at in order() {
                assert!(p.put(at, &data[at as usize..at as usize + 1]));
                assert!(held(&p) + std::mem::size_of::<Partial>() as u64 <= p.reserved);
            }
            assert_eq!(p.got, size);
            // 1.13 bytes of memory per byte, however it came (not ~95 B per one-byte chunk).
            assert!(p.reserved as f64 <= 1.13 * size as f64, "{}", p.reserved);
            assert!(!p.put(7, &data[7..9]), "an overlap is refused");
            assert_eq!(p.assemble(), data);
        }
    }

    #[test]
    fn chunks_across_blocks_and_overlaps() {
        let size = 3 * BLOCK_BYTES + 5;
        let data = crate::pattern(2, size as usize);
        let mut p = Partial::new(size);
        let cut = |a: u64, b: u64| &data[a as usize..b as usize];
        assert!(p.put(BLOCK_BYTES - 10, cut(BLOCK_BYTES - 10, 2 * BLOCK_BYTES + 3)));
        assert!(!p.put(2 * BLOCK_BYTES, cut(2 * BLOCK_BYTES, 2 * BLOCK_BYTES + 4)));
        assert!(!p.put(0, cut(0, BLOCK_BYTES - 9)));
        assert!(p.put(0, cut(0, BLOCK_BYTES - 10)));
        assert!(p.put(2 * BLOCK_BYTES + 3, cut(2 * BLOCK_BYTES + 3, size)));
        assert_eq!(p.got, size);
        assert_eq!(p.assemble(), data);
        assert_eq!(words(3, 3).count(), 0);
        assert_eq!(words(60, 70).collect::<Vec<_>>(), vec![(0, 0xF << 60), (1, 0x3F)]);
        assert_eq!(words(64, 128).collect::<Vec<_>>(), vec![(1, u64::MAX)]);
    }
}
