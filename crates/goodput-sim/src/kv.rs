//! The paged KV cache: a pool of fixed-size blocks with a prefix cache.
//!
//! Blocks hold [`BLOCK_SIZE`] tokens. A full block of prompt tokens is
//! identified by a hash chain over its content ([`block_hashes`]); once
//! computed it is registered in the prefix cache, and a later prompt that
//! starts with the same blocks reuses them instead of recomputing them.
//! A block whose last user releases it goes back to the free list but keeps
//! its cached content until it is reused: free blocks are evicted least
//! recently used first (blocks that hold no cached prefix are reused before
//! any cached one).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

/// A hash map for the engine's integer keys (request ids, block hashes).
///
/// The std map's SipHash was half of a virtual-time run's CPU (a forecast
/// looks up every scheduled sequence and every cached block each step);
/// one multiply-and-rotate per key is enough for keys that are counters or
/// already hashes. The engine never iterates its maps, so the hasher
/// changes speed only, never a result.
pub type IntMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<IntHasher>>;

/// The hasher of [`IntMap`]: Fx-style multiply-and-rotate per 8 bytes.
#[derive(Debug, Default, Clone, Copy)]
pub struct IntHasher(u64);

impl Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

/// Tokens per KV-cache block (vLLM's default).
pub const BLOCK_SIZE: usize = 16;

/// Index of a block in the pool.
pub type BlockId = u32;

const NIL: u32 = u32::MAX;

/// Number of blocks that hold `tokens` tokens.
pub fn blocks_for(tokens: usize) -> usize {
    tokens.div_ceil(BLOCK_SIZE)
}

/// The hash chain of the full blocks of `tokens`: block `i`'s hash covers its
/// own tokens and the hash of block `i - 1`, so equal hashes mean equal
/// prefixes. A trailing partial block gets no hash.
pub fn block_hashes(tokens: &[u32]) -> Vec<u64> {
    let mut parent = 0x9e37_79b9_7f4a_7c15_u64;
    tokens
        .chunks_exact(BLOCK_SIZE)
        .map(|block| {
            // SipHash with fixed keys: the same on every run and platform.
            let mut h = std::hash::DefaultHasher::new();
            parent.hash(&mut h);
            block.hash(&mut h);
            parent = h.finish();
            parent
        })
        .collect()
}

/// The block pool and its prefix cache.
#[derive(Debug, Clone)]
pub struct BlockPool {
    ref_count: Vec<u32>,
    hash_of: Vec<Option<u64>>,
    cached: IntMap<u64, BlockId>,
    // Free list: an intrusive doubly linked list, least recently freed first.
    prev: Vec<u32>,
    next: Vec<u32>,
    head: u32,
    tail: u32,
    free: usize,
}

impl BlockPool {
    /// A pool of `num_blocks` free, empty blocks (at most `u32::MAX - 1`).
    pub fn new(num_blocks: usize) -> Self {
        let n = num_blocks.min(NIL as usize - 1);
        let mut pool = BlockPool {
            ref_count: vec![0; n],
            hash_of: vec![None; n],
            cached: IntMap::default(),
            prev: vec![NIL; n],
            next: vec![NIL; n],
            head: NIL,
            tail: NIL,
            free: 0,
        };
        for b in 0..n as u32 {
            pool.push_back(b);
        }
        pool
    }

    /// Blocks in the pool.
    pub fn num_blocks(&self) -> usize {
        self.ref_count.len()
    }

    /// Blocks no sequence holds (free or holding evictable cached content).
    pub fn free_blocks(&self) -> usize {
        self.free
    }

    /// Share of blocks in use by some sequence, 0–1.
    pub fn usage(&self) -> f64 {
        if self.num_blocks() == 0 {
            return 0.0;
        }
        (self.num_blocks() - self.free) as f64 / self.num_blocks() as f64
    }

    /// How many leading hashes of `hashes` are cached.
    pub fn cached_prefix(&self, hashes: &[u64]) -> usize {
        hashes
            .iter()
            .take_while(|h| self.cached.contains_key(h))
            .count()
    }

    /// Whether `fresh` new blocks can be allocated after taking the cached
    /// blocks of `hits` (some of which may sit in the free list).
    pub fn can_allocate(&self, hits: &[u64], fresh: usize) -> bool {
        let hits_in_free_list = hits
            .iter()
            .filter_map(|h| self.cached.get(h))
            .filter(|&&b| self.ref_count[b as usize] == 0)
            .count();
        self.free >= hits_in_free_list + fresh
    }

    /// Take a reference to the cached block holding `hash`.
    pub fn take_cached(&mut self, hash: u64) -> Option<BlockId> {
        let b = *self.cached.get(&hash)?;
        if self.ref_count[b as usize] == 0 {
            self.unlink(b);
        }
        self.ref_count[b as usize] += 1;
        Some(b)
    }

    /// Allocate a block, evicting the least recently used free one.
    pub fn allocate(&mut self) -> Option<BlockId> {
        let b = self.head;
        if b == NIL {
            return None;
        }
        self.unlink(b);
        if let Some(h) = self.hash_of[b as usize].take() {
            if self.cached.get(&h) == Some(&b) {
                self.cached.remove(&h);
            }
        }
        self.ref_count[b as usize] = 1;
        Some(b)
    }

    /// Record that block `b` now holds the computed prefix `hash`.
    pub fn register(&mut self, b: BlockId, hash: u64) {
        if self.hash_of[b as usize].is_some() || self.cached.contains_key(&hash) {
            return;
        }
        self.cached.insert(hash, b);
        self.hash_of[b as usize] = Some(hash);
    }

    /// Release a sequence's blocks, last block first, so that a sequence's
    /// tail is evicted before its head.
    pub fn release(&mut self, blocks: &[BlockId]) {
        for &b in blocks.iter().rev() {
            let rc = &mut self.ref_count[b as usize];
            *rc = rc.saturating_sub(1);
            if *rc == 0 {
                if self.hash_of[b as usize].is_some() {
                    self.push_back(b);
                } else {
                    self.push_front(b);
                }
            }
        }
    }

    fn unlink(&mut self, b: BlockId) {
        let (p, n) = (self.prev[b as usize], self.next[b as usize]);
        if p == NIL {
            self.head = n;
        } else {
            self.next[p as usize] = n;
        }
        if n == NIL {
            self.tail = p;
        } else {
            self.prev[n as usize] = p;
        }
        self.prev[b as usize] = NIL;
        self.next[b as usize] = NIL;
        self.free -= 1;
    }

    fn push_back(&mut self, b: BlockId) {
        self.prev[b as usize] = self.tail;
        self.next[b as usize] = NIL;
        if self.tail == NIL {
            self.head = b;
        } else {
            self.next[self.tail as usize] = b;
        }
        self.tail = b;
        self.free += 1;
    }

    fn push_front(&mut self, b: BlockId) {
        self.next[b as usize] = self.head;
        self.prev[b as usize] = NIL;
        if self.head == NIL {
            self.tail = b;
        } else {
            self.prev[self.head as usize] = b;
        }
        self.head = b;
        self.free += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_chain_depends_on_the_whole_prefix() {
        let a: Vec<u32> = (0..48).collect();
        let mut b = a.clone();
        b[0] = 999;
        let (ha, hb) = (block_hashes(&a), block_hashes(&b));
        assert_eq!(ha.len(), 3);
        assert!(ha.iter().zip(&hb).all(|(x, y)| x != y));
        assert_eq!(block_hashes(&a[..40]), ha[..2].to_vec());
    }

    #[test]
    fn cached_blocks_survive_release_until_evicted_lru() {
        let mut pool = BlockPool::new(4);
        let hashes = block_hashes(&(0..32).collect::<Vec<u32>>());
        let blocks: Vec<_> = (0..2).map(|_| pool.allocate().unwrap()).collect();
        pool.register(blocks[0], hashes[0]);
        pool.register(blocks[1], hashes[1]);
        pool.release(&blocks);
        assert_eq!(pool.free_blocks(), 4);
        assert_eq!(pool.cached_prefix(&hashes), 2);
        // Two uncached blocks are reused first; the cache survives.
        let x = [pool.allocate().unwrap(), pool.allocate().unwrap()];
        assert_eq!(pool.cached_prefix(&hashes), 2);
        // The next allocation evicts the least recently freed cached block:
        // release runs last block first, so block 1 entered the LRU first.
        pool.allocate().unwrap();
        assert_eq!(pool.cached_prefix(&hashes), 1);
        assert!(pool.can_allocate(&hashes[..1], 0));
        assert!(!pool.can_allocate(&hashes[..1], 1));
        assert_eq!(pool.take_cached(hashes[0]), Some(blocks[0]));
        assert_eq!(pool.free_blocks(), 0);
        pool.release(&x);
        assert_eq!(pool.usage(), 0.5);
    }
}
