//! Block tables over numbered fingerprints: `NumberedTables` of `index/memory.py` (the reference) in
//! compiled code, so that a look-up of a document's few fingerprints costs no NumPy calls.
//!
//! Every block of the layout has a bucket per block value holding entry numbers in ascending order,
//! the main tables' rows (numbers below `n_sorted`, tombstoned ones included until a rebuild) and then
//! the live entries put since (the reference's recent tables and buffer, which a query reads whole).
//! A merge only moves `n_sorted`: an entry killed before its merge has left its buckets already, so it
//! never enters the main tables, as in the reference.

use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyTuple};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

/// Blocks up to this many bits index their buckets directly; wider ones look them up in a hash map.
const DIRECT_BITS: u32 = 16;
/// The main tables are rebuilt once this many of their rows are dead (and a `COMPACT_DIVISOR`th of them).
const COMPACT_MIN: usize = 64;
/// Rows of the main tables that must be dead for a rebuild: 1 / this (the reference's 0.25).
const COMPACT_DIVISOR: usize = 4;
/// Queries (or entries put) from this many on are handled without the GIL (below, releasing it costs
/// more than it gives).
const DETACH_QUERIES: usize = 64;

/// A full bucket grows by 1 / this of its length (at least `MIN_GROWTH` entries).
const GROWTH_DIVISOR: usize = 8;
const MIN_GROWTH: usize = 4;

/// How many queries ahead of the one answered a batch asks the caches for each level of a query's reads.
const AHEAD: usize = 1;
/// Cache lines of a bucket (and candidates' fingerprints: as many lines' worth of numbers) asked for.
const PREFETCH_LINES: usize = 4;

/// Ask the caches for the line holding `at` (a hint: no fault, no effect on results).
#[inline(always)]
fn prefetch<T>(at: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing into the program and cannot fault; SSE is part of x86_64
    unsafe {
        std::arch::x86_64::_mm_prefetch(at as *const T as *const i8, std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// A bucket's entry numbers, ascending: the first few inline (as many as fit the room of a Vec's pointer
/// and capacity), more on the heap.
type Bucket = SmallVec<[u32; 4]>;

/// The buckets of one block, each holding entry numbers in ascending order.
enum Buckets {
    Direct(Vec<Bucket>),
    Hashed(FxHashMap<u64, Bucket>),
}

/// One block of the layout: where its bits are, and its buckets.
struct Block {
    shift: u32,
    mask: u64,
    /// every width in a hash map: for small, short-lived tables, whose direct buckets would cost more
    /// to make than all their look-ups
    hashed: bool,
    buckets: Buckets,
}

impl Block {
    fn new(width: u32, shift: u32, hashed: bool) -> Self {
        let mask = if width >= 64 { u64::MAX } else { (1u64 << width) - 1 };
        Block { shift, mask, hashed, buckets: Self::empty(width, hashed) }
    }

    fn empty(width: u32, hashed: bool) -> Buckets {
        if width <= DIRECT_BITS && !hashed {
            Buckets::Direct(vec![Bucket::new(); 1usize << width])
        } else {
            Buckets::Hashed(FxHashMap::default())
        }
    }

    fn width(&self) -> u32 {
        self.mask.count_ones()
    }

    fn key(&self, fp: u64) -> u64 {
        (fp >> self.shift) & self.mask
    }

    /// The numbers under `fp`'s value of this block.
    fn bucket(&self, fp: u64) -> &[u32] {
        let key = self.key(fp);
        match &self.buckets {
            Buckets::Direct(b) => &b[key as usize],
            Buckets::Hashed(m) => m.get(&key).map_or(&[], Bucket::as_slice),
        }
    }

    /// Append `num` (above every number held) under `fp`'s value; the bucket's size then.
    fn push(&mut self, fp: u64, num: u32) -> usize {
        let key = self.key(fp);
        let bucket = match &mut self.buckets {
            Buckets::Direct(b) => &mut b[key as usize],
            Buckets::Hashed(m) => m.entry(key).or_default(),
        };
        if bucket.len() == bucket.capacity() {
            // an eighth more, not twice as much: a store's buckets grow one entry at a time for good,
            // and doubling would leave a third of their memory unused on average
            bucket.reserve_exact((bucket.len() / GROWTH_DIVISOR).max(MIN_GROWTH));
        }
        bucket.push(num);
        bucket.len()
    }

    /// Take `num` out of `fp`'s bucket (it is among the last ones, those put since the merge).
    fn remove(&mut self, fp: u64, num: u32) {
        let key = self.key(fp);
        let bucket = match &mut self.buckets {
            Buckets::Direct(b) => &mut b[key as usize],
            Buckets::Hashed(m) => match m.get_mut(&key) {
                Some(b) => b,
                None => return,
            },
        };
        if let Ok(at) = bucket.binary_search(&num) {
            bucket.remove(at);
        }
        if let Buckets::Hashed(m) = &mut self.buckets {
            if m.get(&key).is_some_and(|v| v.is_empty()) {
                m.remove(&key);
            }
        }
    }

    /// Buckets of the given entries only (`nums` ascending), each sized to its content.
    fn fill(&mut self, fps: &[u64], nums: &[u32]) {
        self.buckets = Self::empty(self.width(), self.hashed);
        match &mut self.buckets {
            Buckets::Direct(b) => {
                let mut counts = vec![0usize; b.len()];
                for &num in nums {
                    counts[((fps[num as usize] >> self.shift) & self.mask) as usize] += 1;
                }
                for (bucket, &c) in b.iter_mut().zip(&counts) {
                    bucket.reserve_exact(c);
                }
            }
            Buckets::Hashed(m) => m.reserve(nums.len()),
        }
        for &num in nums {
            self.push(fps[num as usize], num);
        }
        if let Buckets::Hashed(m) = &mut self.buckets {
            m.shrink_to_fit();
        }
    }

    /// Sizes of the non-empty buckets in ascending order of block value.
    fn sizes(&self, out: &mut Vec<i64>) {
        match &self.buckets {
            Buckets::Direct(b) => out.extend(b.iter().filter(|v| !v.is_empty()).map(|v| v.len() as i64)),
            Buckets::Hashed(m) => {
                let mut keyed: Vec<(u64, usize)> =
                    m.iter().filter(|(_, v)| !v.is_empty()).map(|(&k, v)| (k, v.len())).collect();
                keyed.sort_unstable();
                out.extend(keyed.into_iter().map(|(_, len)| len as i64));
            }
        }
    }

    fn nbytes(&self) -> usize {
        let held = std::mem::size_of::<Bucket>();
        let heap = |v: &Bucket| if v.spilled() { 4 * v.capacity() } else { 0 };
        match &self.buckets {
            Buckets::Direct(b) => b.iter().map(|v| held + heap(v)).sum(),
            Buckets::Hashed(m) => m.capacity() * (8 + held + 1) + m.values().map(heap).sum::<usize>(),
        }
    }
}

/// The state of `NumberedTables`: fingerprints and liveness by number, and the block tables.
pub struct Tables {
    blocks: Vec<Block>,
    fps: Vec<u64>,
    alive: Vec<bool>,
    /// numbers below this are the main tables' rows (read under the budget)
    n_sorted: usize,
    /// rows ever put into the main tables since the last rebuild (kills do not lower it)
    in_tables: usize,
    dead_in_tables: usize,
    /// live entries numbered `n_sorted` or above
    live_newer: usize,
    merge_min: usize,
    /// the most entries a bucket held right after an entry was put into it (puts only, ever)
    largest_put: usize,
}

/// The blocks of the layout of `widths` (most significant block first), with no entries; an error for
/// widths that are not positive or do not add up to 64 bits.
fn blocks_of(widths: &[u32], hashed: bool) -> Result<Vec<Block>, String> {
    if widths.is_empty() || widths.contains(&0) || widths.iter().map(|&w| u64::from(w)).sum::<u64>() != 64 {
        return Err(format!("block widths must be positive and add up to 64 bits, got {widths:?}"));
    }
    let mut used = 0;
    Ok(widths
        .iter()
        .map(|&w| {
            used += w;
            Block::new(w, 64 - used, hashed)
        })
        .collect())
}

impl Tables {
    /// Tables of the layout of `widths` (most significant block first) holding the live ones of `fps`;
    /// `hashed` keeps every block's buckets in a hash map (small tables: see [`Block`]).
    pub fn new(
        widths: &[u32], fps: Vec<u64>, alive: Vec<bool>, merge_min: usize, hashed: bool,
    ) -> Result<Self, String> {
        let blocks = blocks_of(widths, hashed)?;
        if alive.len() != fps.len() {
            return Err(format!("{} fingerprints but {} alive flags", fps.len(), alive.len()));
        }
        if fps.len() > 1usize << 32 {
            return Err("entry numbers must fit 32 bits".to_owned());
        }
        let mut tables = Tables {
            blocks, fps, alive, n_sorted: 0, in_tables: 0, dead_in_tables: 0, live_newer: 0, merge_min,
            largest_put: 0,
        };
        tables.rebuild();
        Ok(tables)
    }

    /// One above the highest number ever put.
    pub fn n(&self) -> usize {
        self.fps.len()
    }

    /// Add entries `nums[i] -> fps[i]`, every number at least [`Tables::n`]; for a number given twice
    /// the last fingerprint counts (as NumPy's assignment does).
    pub fn put(&mut self, nums: &[i64], fps: &[u64]) -> Result<(), String> {
        if nums.len() != fps.len() {
            return Err(format!("{} numbers but {} fingerprints", nums.len(), fps.len()));
        }
        let (Some(&lo), Some(&hi)) = (nums.iter().min(), nums.iter().max()) else {
            return Ok(());
        };
        let n = self.n();
        if lo < n as i64 {
            return Err(format!("entry numbers must grow: {lo} < {n}"));
        }
        if hi > u32::MAX as i64 {
            return Err(format!("entry numbers must fit 32 bits: {hi}"));
        }
        let top = hi as usize + 1;
        self.fps.resize(top, 0);
        self.alive.resize(top, false);
        if !self.blocks.iter().any(|b| b.hashed) {
            for stage in 0..2 {
                for &fp in fps {
                    self.prefetch(fp, None, stage); // the buckets' reads overlap, as a batch's queries' do
                }
            }
        }
        if nums.windows(2).all(|w| w[0] < w[1]) {
            for (&num, &fp) in nums.iter().zip(fps) {
                self.append(num as u32, fp);
            }
        } else {
            let mut order: Vec<usize> = (0..nums.len()).collect();
            order.sort_by_key(|&i| nums[i]); // stable: of equal numbers, the last given comes last
            for (j, &i) in order.iter().enumerate() {
                if order.get(j + 1).is_none_or(|&next| nums[next] != nums[i]) {
                    self.append(nums[i] as u32, fps[i]);
                }
            }
        }
        if top - self.n_sorted >= self.merge_min.max(self.in_tables / 256) {
            self.merge();
        }
        Ok(())
    }

    /// One new live entry, above every number held.
    fn append(&mut self, num: u32, fp: u64) {
        self.fps[num as usize] = fp;
        self.alive[num as usize] = true;
        for block in &mut self.blocks {
            self.largest_put = self.largest_put.max(block.push(fp, num));
        }
        self.live_newer += 1;
    }

    /// Tombstone entry `num`; true when the main tables should now be rebuilt ([`Tables::rebuild`]).
    pub fn kill(&mut self, num: i64) -> bool {
        if num < 0 || num as usize >= self.n() || !self.alive[num as usize] {
            return false;
        }
        let at = num as usize;
        self.alive[at] = false;
        if at < self.n_sorted {
            self.dead_in_tables += 1;
            self.should_rebuild()
        } else {
            let fp = self.fps[at];
            for block in &mut self.blocks {
                block.remove(fp, num as u32);
            }
            self.live_newer -= 1;
            false
        }
    }

    /// Whether enough of the main tables' rows are dead for a rebuild.
    pub fn should_rebuild(&self) -> bool {
        self.dead_in_tables >= COMPACT_MIN && self.dead_in_tables * COMPACT_DIVISOR >= self.in_tables
    }

    /// Main tables of the live entries only, everything put in them.
    pub fn rebuild(&mut self) {
        let live: Vec<u32> = (0..self.n()).filter(|&i| self.alive[i]).map(|i| i as u32).collect();
        for block in &mut self.blocks {
            block.fill(&self.fps, &live);
        }
        self.n_sorted = self.n();
        self.in_tables = live.len();
        self.dead_in_tables = 0;
        self.live_newer = 0;
    }

    /// The live entries put since the last merge into the main tables.
    pub fn merge(&mut self) {
        self.in_tables += self.live_newer;
        self.live_newer = 0;
        self.n_sorted = self.n();
    }

    /// The numbers of `block`'s bucket of `fp` that a query reads: of the main tables' rows only the last
    /// `budget` (dead ones included), then every entry put since.
    fn candidates<'a>(&self, block: &'a Block, fp: u64, budget: Option<usize>) -> &'a [u32] {
        let bucket = block.bucket(fp);
        let start = match budget {
            Some(b) if b < bucket.len() => {
                // most buckets hold nothing put since the last merge: no search for where that starts
                let main = match bucket.last() {
                    Some(&last) if (last as usize) >= self.n_sorted => {
                        bucket.partition_point(|&num| (num as usize) < self.n_sorted)
                    }
                    _ => bucket.len(),
                };
                main.saturating_sub(b)
            }
            _ => 0,
        };
        &bucket[start..]
    }

    /// (number, distance) of the live entries within `k` of `fp`, each number once, ascending.
    fn query_into(&self, fp: u64, k: i64, budget: Option<usize>, found: &mut Vec<(u32, u8)>) {
        found.clear();
        for block in &self.blocks {
            for &num in self.candidates(block, fp, budget) {
                let d = (self.fps[num as usize] ^ fp).count_ones();
                if i64::from(d) <= k && self.alive[num as usize] {
                    found.push((num, d as u8));
                }
            }
        }
        // an entry may share several blocks with the query: each number once
        found.sort_unstable_by_key(|&(num, _)| num);
        found.dedup_by_key(|&mut (num, _)| num);
    }

    /// Ask the caches for what the query of `fp` will read, one level of indirection per `stage`: the
    /// buckets' headers (0), their numbers (1), the candidates' fingerprints (2). A batch asks for a
    /// query's a few queries before answering it, so that its reads from memory overlap.
    fn prefetch(&self, fp: u64, budget: Option<usize>, stage: usize) {
        for block in &self.blocks {
            match stage {
                0 => {
                    if let Buckets::Direct(b) = &block.buckets {
                        prefetch(&b[block.key(fp) as usize]);
                    }
                }
                1 => {
                    let bucket = block.bucket(fp);
                    for line in bucket.iter().step_by(16).rev().take(PREFETCH_LINES) {
                        prefetch(line);
                    }
                }
                _ => {
                    for &num in self.candidates(block, fp, budget).iter().rev().take(16 * PREFETCH_LINES) {
                        prefetch(&self.fps[num as usize]);
                    }
                }
            }
        }
    }

    /// `query_many` of the reference: (query index, number, distance) of the matches of every query,
    /// ordered by query then number, as little-endian int64, int64 and uint8 bytes.
    pub fn query_many(&self, fps: &[u64], k: i64, budget: Option<usize>) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
        let (mut qs, mut nums, mut dists) = (Vec::new(), Vec::new(), Vec::new());
        self.query_each(fps, k, budget, |q, num, d| {
            qs.extend_from_slice(&(q as i64).to_le_bytes());
            nums.extend_from_slice(&i64::from(num).to_le_bytes());
            dists.push(d);
        });
        (qs, nums, dists)
    }

    /// [`Tables::query_many`] as vectors of numbers (for a few queries, whose answers become lists).
    pub fn query_vecs(&self, fps: &[u64], k: i64, budget: Option<usize>) -> (Vec<i64>, Vec<i64>, Vec<i64>) {
        let (mut qs, mut nums, mut dists) = (Vec::new(), Vec::new(), Vec::new());
        self.query_each(fps, k, budget, |q, num, d| {
            qs.push(q as i64);
            nums.push(i64::from(num));
            dists.push(i64::from(d));
        });
        (qs, nums, dists)
    }

    /// Each match of each query in turn, as (query index, number, distance), ordered by query then number.
    fn query_each(&self, fps: &[u64], k: i64, budget: Option<usize>, mut each: impl FnMut(usize, u32, u8)) {
        let mut found = Vec::new();
        for (q, &fp) in fps.iter().enumerate() {
            for stage in 0..3 {
                if let Some(&ahead) = fps.get(q + (3 - stage) * AHEAD) {
                    self.prefetch(ahead, budget, stage);
                }
            }
            self.query_into(fp, k, budget, &mut found);
            for &(num, d) in &found {
                each(q, num, d);
            }
        }
    }

    /// Entries under each of `fp`'s block values: the main tables' rows (dead ones included until a
    /// rebuild) and the live entries put since.
    pub fn bucket_sizes(&self, fp: u64) -> Vec<usize> {
        self.blocks.iter().map(|b| b.bucket(fp).len()).collect()
    }

    /// Whether any live entry lies within `k` of any of `fps`: [`Tables::query_vecs`] found anything,
    /// without its answer made (it stops at the first).
    pub fn any_within(&self, fps: &[u64], k: i64, budget: Option<usize>) -> bool {
        fps.iter().any(|&fp| {
            self.blocks.iter().any(|block| {
                self.candidates(block, fp, budget).iter().any(|&num| {
                    i64::from((self.fps[num as usize] ^ fp).count_ones()) <= k && self.alive[num as usize]
                })
            })
        })
    }

    /// The most entries a bucket held right after a put into it, over every put so far (0 for none).
    pub fn largest_put(&self) -> usize {
        self.largest_put
    }

    /// The most entries under any block value of any of `fps` (0 for none): `bucket_sizes`' largest.
    pub fn largest_bucket(&self, fps: &[u64]) -> usize {
        fps.iter().flat_map(|&fp| self.blocks.iter().map(move |b| b.bucket(fp).len())).max().unwrap_or(0)
    }

    /// Entries of every non-empty bucket of every block, block by block in ascending value (after a merge).
    pub fn all_bucket_sizes(&mut self) -> Vec<i64> {
        self.merge();
        let mut out = Vec::new();
        for block in &self.blocks {
            block.sizes(&mut out);
        }
        out
    }

    /// Bytes held: fingerprints, flags and buckets.
    pub fn nbytes(&self) -> usize {
        8 * self.fps.capacity() + self.alive.capacity() + self.blocks.iter().map(Block::nbytes).sum::<usize>()
    }

    /// (fingerprint, alive) by number up to [`Tables::n`], as little-endian uint64 and bool bytes.
    pub fn arrays(&self) -> (Vec<u8>, Vec<u8>) {
        let fps = self.fps.iter().flat_map(|fp| fp.to_le_bytes()).collect();
        let alive = self.alive.iter().map(|&a| u8::from(a)).collect();
        (fps, alive)
    }
}

/// The low 64 bits of an int, unsigned or signed or wider (`fp & MASK64` of the Python side), read at
/// once: no failed conversion (an error object made and dropped) for a signed one.
pub(crate) fn low64(item: &Bound<'_, PyAny>) -> PyResult<u64> {
    // SAFETY: a valid object pointer while `item` is borrowed; the call only reads it
    let v = unsafe { pyo3::ffi::PyLong_AsUnsignedLongLongMask(item.as_ptr()) };
    if v == u64::MAX {
        if let Some(err) = PyErr::take(item.py()) {
            return Err(err);
        }
    }
    Ok(v)
}

/// The low 64 bits of each int of a Python sequence ([`low64`] of each, without a list).
fn low_bits(seq: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
    let mut out = Vec::with_capacity(seq.len().unwrap_or(0));
    for item in seq.try_iter()? {
        out.push(low64(&item?)?);
    }
    Ok(out)
}

/// A NumPy array (or other buffer) of `T` as a vector.
fn read<T: pyo3::buffer::Element + Copy>(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Vec<T>> {
    PyBuffer::<T>::get(obj)?.to_vec(py)
}

/// `NumberedTables` of `index/memory.py` in compiled code; `CompiledNumberedTables` there wraps it
/// (arrays in and out as buffers and bytes). Calls from several threads wait for each other: a lock is
/// only ever held by code that does not take the GIL, so a thread holding the GIL may wait for it.
#[pyclass(frozen, module = "fingerprint_indexer.fingerprint._core")]
pub struct BlockTables {
    tables: RwLock<Tables>,
}

impl BlockTables {
    fn read(&self) -> RwLockReadGuard<'_, Tables> {
        self.tables.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Tables> {
        self.tables.write().unwrap_or_else(PoisonError::into_inner)
    }
}

#[pymethods]
impl BlockTables {
    /// Tables of the blocks of `widths` over `fps` (uint64 by number) whose `alive` (uint8) are set.
    #[new]
    #[pyo3(signature = (widths, fps, alive, merge_min, hashed=false))]
    fn new(
        py: Python<'_>, widths: Vec<u32>, fps: &Bound<'_, PyAny>, alive: &Bound<'_, PyAny>, merge_min: usize,
        hashed: bool,
    ) -> PyResult<Self> {
        let fps: Vec<u64> = read(py, fps)?;
        let alive: Vec<bool> = read::<u8>(py, alive)?.into_iter().map(|a| a != 0).collect();
        let tables =
            py.detach(|| Tables::new(&widths, fps, alive, merge_min, hashed)).map_err(PyValueError::new_err)?;
        Ok(BlockTables { tables: RwLock::new(tables) })
    }

    #[getter]
    fn n(&self) -> usize {
        self.read().n()
    }

    /// Add entries `nums[i] -> fps[i]` (int64 and uint64 buffers); every number must be at least `n`.
    fn put(&self, py: Python<'_>, nums: &Bound<'_, PyAny>, fps: &Bound<'_, PyAny>) -> PyResult<()> {
        let nums: Vec<i64> = read(py, nums)?;
        let fps: Vec<u64> = read(py, fps)?;
        let done = if nums.len() >= DETACH_QUERIES {
            py.detach(|| self.write().put(&nums, &fps))
        } else {
            self.write().put(&nums, &fps)
        };
        done.map_err(PyValueError::new_err)
    }

    /// `put` of sequences of ints: for the few entries of one document, which need no arrays made.
    fn put_ints(&self, nums: Vec<i64>, fps: Vec<u64>) -> PyResult<()> {
        self.write().put(&nums, &fps).map_err(PyValueError::new_err)
    }

    /// `put` of the entries `first`, `first + 1` ... of `fps` (ints, unsigned or signed: their low 64
    /// bits): the consecutive numbers of one document, without a sequence of them made.
    fn put_run(&self, first: i64, fps: &Bound<'_, PyAny>) -> PyResult<()> {
        let fps = low_bits(fps)?;
        let nums: Vec<i64> = (first..first + fps.len() as i64).collect();
        self.write().put(&nums, &fps).map_err(PyValueError::new_err)
    }

    /// Whether `query_ints` would find any entry (ints, unsigned or signed: their low 64 bits), in one
    /// call that makes no answer.
    #[pyo3(signature = (fps, k, budget = None))]
    fn any_within(&self, fps: &Bound<'_, PyAny>, k: i64, budget: Option<usize>) -> PyResult<bool> {
        let fps = low_bits(fps)?;
        Ok(self.read().any_within(&fps, k, budget))
    }

    /// `query_many` of a sequence of ints, answered as three lists of ints: for the few queries of one
    /// document, which need no arrays made and find few matches.
    /// The ints may be unsigned or signed (their low 64 bits are asked); a batch's many queries are
    /// answered without the GIL.
    #[pyo3(signature = (fps, k, budget = None))]
    fn query_ints(
        &self, py: Python<'_>, fps: &Bound<'_, PyAny>, k: i64, budget: Option<usize>,
    ) -> PyResult<(Vec<i64>, Vec<i64>, Vec<i64>)> {
        let fps = low_bits(fps)?;
        Ok(if fps.len() >= DETACH_QUERIES {
            py.detach(|| self.read().query_vecs(&fps, k, budget))
        } else {
            self.read().query_vecs(&fps, k, budget)
        })
    }

    /// Tombstone entry `num` (a rebuild, without the GIL, once a quarter of the main rows are dead).
    fn kill(&self, py: Python<'_>, num: i64) {
        if self.write().kill(num) {
            py.detach(|| {
                let mut tables = self.write();
                if tables.should_rebuild() {
                    tables.rebuild();
                }
            });
        }
    }

    /// `(query index, number, distance)` as int64, int64 and uint8 bytes of the live entries within `k`
    /// of each of `fps` (a uint64 buffer), reading at most `budget` rows of each main bucket.
    #[pyo3(signature = (fps, k, budget = None))]
    fn query_many<'py>(
        &self, py: Python<'py>, fps: &Bound<'py, PyAny>, k: i64, budget: Option<usize>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let fps: Vec<u64> = read(py, fps)?;
        let (qs, nums, dists) = if fps.len() >= DETACH_QUERIES {
            py.detach(|| self.read().query_many(&fps, k, budget))
        } else {
            self.read().query_many(&fps, k, budget)
        };
        (PyByteArray::new(py, &qs), PyByteArray::new(py, &nums), PyByteArray::new(py, &dists)).into_pyobject(py)
    }

    /// Entries under each of `fp`'s block values (tombstoned main rows included until a rebuild).
    fn bucket_sizes(&self, fp: u64) -> Vec<usize> {
        self.read().bucket_sizes(fp)
    }

    /// The most entries a bucket held right after an entry was put into it, over every put so far.
    #[getter]
    fn largest_put(&self) -> usize {
        self.read().largest_put()
    }

    /// The most entries under any block value of any of `fps` (0 for none), in one call.
    fn largest_bucket(&self, fps: Vec<u64>) -> usize {
        self.read().largest_bucket(&fps)
    }

    /// Entries of every non-empty bucket of every block (after a merge), as int64 bytes.
    fn all_bucket_sizes<'py>(&self, py: Python<'py>) -> Bound<'py, PyByteArray> {
        let sizes = py.detach(|| self.write().all_bucket_sizes());
        let raw: Vec<u8> = sizes.iter().flat_map(|s| s.to_le_bytes()).collect();
        PyByteArray::new(py, &raw)
    }

    /// `(fingerprints, alive)` by number as uint64 and bool bytes: what the tables are rebuilt from.
    fn arrays<'py>(&self, py: Python<'py>) -> (Bound<'py, PyByteArray>, Bound<'py, PyByteArray>) {
        let (fps, alive) = py.detach(|| self.read().arrays());
        (PyByteArray::new(py, &fps), PyByteArray::new(py, &alive))
    }

    /// Merge the entries put since the last merge into the main tables.
    fn flush(&self) {
        self.write().merge();
    }

    fn nbytes(&self) -> usize {
        self.read().nbytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_takes_the_room_of_a_vec() {
        assert_eq!(std::mem::size_of::<Bucket>(), std::mem::size_of::<Vec<u32>>());
        let mut b = Bucket::new();
        b.extend([1, 2, 3, 4]);
        assert!(!b.spilled());
        b.push(5);
        assert!(b.spilled() && b.as_slice() == [1, 2, 3, 4, 5]);
    }

    fn pairs(t: &Tables, fps: &[u64], k: i64, budget: Option<usize>) -> Vec<(i64, i64, u8)> {
        let (qs, nums, dists) = t.query_many(fps, k, budget);
        let word = |b: &[u8], i: usize| i64::from_le_bytes(b[8 * i..8 * i + 8].try_into().unwrap());
        (0..dists.len()).map(|i| (word(&qs, i), word(&nums, i), dists[i])).collect()
    }

    #[test]
    fn finds_each_live_match_once() {
        let mut t = Tables::new(&[16, 16, 16, 16], vec![0, 1, 3, u64::MAX], vec![true, true, false, true], 4, false)
            .unwrap();
        assert_eq!(pairs(&t, &[0, 7], 1, None), vec![(0, 0, 0), (0, 1, 1)]);
        t.put(&[6, 5], &[0b11, 0b111]).unwrap(); // unordered, a hole at 4
        assert_eq!(t.n(), 7);
        assert_eq!(pairs(&t, &[0], 3, None), vec![(0, 0, 0), (0, 1, 1), (0, 5, 3), (0, 6, 2)]);
        t.kill(5);
        assert_eq!(t.bucket_sizes(0), vec![3, 3, 3, 1]); // 5 left its buckets, 2 was never in them
        assert_eq!(pairs(&t, &[1], 3, Some(1)), vec![(0, 1, 0), (0, 6, 1)]); // 0 is past the budget
        assert!(t.put(&[3], &[0]).is_err());
    }

    #[test]
    fn wide_blocks_hash_their_buckets() {
        let t = Tables::new(&[8, 24, 16, 16], vec![1 << 40, 1 << 40 | 1], vec![true, true], 4, false).unwrap();
        assert_eq!(pairs(&t, &[1 << 40], 1, None), vec![(0, 0, 0), (0, 1, 1)]);
        let mut t = t;
        assert_eq!(t.all_bucket_sizes(), vec![2, 2, 2, 1, 1]);
    }
}

/// Every pair `(i, j)`, `i < j`, of `fps` within Hamming distance `k`, with its distance, sorted by
/// `(i, j)`: for each block of `widths` (high bits first), the fingerprints sorted by the block's value,
/// each run of equal values paired within itself; a pair is kept by the first block it shares, so it
/// comes out once. The work follows the candidate pairs, as `index.pairs.near_pairs_reference`'s.
pub fn near_pairs(fps: &[u64], k: i64, widths: &[u32]) -> Result<Vec<(u32, u32, u8)>, String> {
    let blocks = blocks_of(widths, true)?;
    let mut out = Vec::new();
    let mut order: Vec<(u64, u32)> = Vec::with_capacity(fps.len());
    for (b, block) in blocks.iter().enumerate() {
        order.clear();
        order.extend(fps.iter().enumerate().map(|(i, &fp)| (block.key(fp), i as u32)));
        order.sort_unstable();
        let earlier = &blocks[..b];
        let mut start = 0;
        while start < order.len() {
            let key = order[start].0;
            let end = start + order[start..].iter().take_while(|e| e.0 == key).count();
            for p in start..end {
                let a = order[p].1;
                for &(_, c) in &order[p + 1..end] {
                    let xor = fps[a as usize] ^ fps[c as usize];
                    let d = xor.count_ones();
                    if i64::from(d) <= k && earlier.iter().all(|e| e.key(xor) != 0) {
                        out.push((a.min(c), a.max(c), d as u8));
                    }
                }
            }
            start = end;
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// [`near_pairs`] of a uint64 buffer, without the GIL: `(i, j, distance)` as int64, int64 and uint8
/// bytes.
#[pyfunction]
#[pyo3(name = "near_pairs")]
pub fn near_pairs_py<'py>(
    py: Python<'py>, fps: &Bound<'py, PyAny>, k: i64, widths: Vec<u32>,
) -> PyResult<Bound<'py, PyTuple>> {
    let fps: Vec<u64> = read(py, fps)?;
    if fps.len() > u32::MAX as usize {
        return Err(PyValueError::new_err("at most 2^32 fingerprints"));
    }
    let pairs = py.detach(|| near_pairs(&fps, k, &widths)).map_err(PyValueError::new_err)?;
    let (mut is, mut js, mut ds) =
        (Vec::with_capacity(8 * pairs.len()), Vec::with_capacity(8 * pairs.len()), Vec::with_capacity(pairs.len()));
    for (i, j, d) in pairs {
        is.extend_from_slice(&i64::from(i).to_le_bytes());
        js.extend_from_slice(&i64::from(j).to_le_bytes());
        ds.push(d);
    }
    (PyByteArray::new(py, &is), PyByteArray::new(py, &js), PyByteArray::new(py, &ds)).into_pyobject(py)
}
