//! Running work on rayon threads with a chosen thread count, fork-safely.
//!
//! Rayon's global pool is the default (its size follows `RAYON_NUM_THREADS`).
//! A forked child inherits the parent's pool bookkeeping but not its threads,
//! so work sent to it would wait forever (the problem tokenizers documents in
//! `utils/parallelism.rs`). We remember which process first used the global
//! pool; any other process (a forked child) gets a pool of its own instead.

use std::sync::{Arc, Mutex, OnceLock};

use rayon::prelude::*;
use rayon::{ThreadPool, ThreadPoolBuilder};

use crate::{Error, Result};

/// The process that started rayon's global pool, once it has.
static GLOBAL_OWNER: OnceLock<u32> = OnceLock::new();
/// A pool for a forked child, with the child's pid.
static CHILD_POOL: Mutex<Option<(u32, Arc<ThreadPool>)>> = Mutex::new(None);
/// The pid that built the pools, and pools of a chosen size, the most
/// recently used last: a caller that asks for `threads=n` chunk after chunk
/// reuses one pool instead of starting and stopping `n` threads for each
/// chunk. (No process has pid 0: the first call takes the empty list over.)
static SIZED_POOLS: Mutex<(u32, Vec<SizedPool>)> = Mutex::new((0, Vec::new()));
/// A kept pool and its number of threads.
type SizedPool = (usize, Arc<ThreadPool>);
/// How many sizes [`SIZED_POOLS`] keeps: the older ones' threads stop.
const KEPT_SIZES: usize = 4;

/// Runs `f` on a rayon pool: `threads` workers, or the default pool for `None`.
///
/// # Errors
/// [`Error::InvalidParameter`] for `Some(0)`; [`Error::ThreadPool`] when the
/// threads cannot be started.
pub fn install<R, F>(threads: Option<usize>, f: F) -> Result<R>
where
    R: Send,
    F: FnOnce() -> R + Send,
{
    let pid = std::process::id();
    match threads {
        Some(0) => Err(Error::invalid("threads", "at least 1 (or None for all cores)", 0)),
        Some(n) => Ok(sized_pool(n, pid)?.install(f)),
        // Parallel iterators called outside any pool run on the global one.
        None => Ok(match default_pool(pid)? {
            None => f(),
            Some(pool) => pool.install(f),
        }),
    }
}

/// The pool work with no chosen size runs on: `None` for rayon's global
/// pool (started if it was not) in the process that first used it, a pool
/// of the child's own in a forked child.
fn default_pool(pid: u32) -> Result<Option<Arc<ThreadPool>>> {
    if *GLOBAL_OWNER.get_or_init(|| pid) == pid {
        global_ready()?;
        return Ok(None);
    }
    child_pool(pid).map(Some)
}

/// Runs many pieces of work on one pool: `threads` workers (built once), or
/// the default pool for `None` (see [`install`]).
pub struct Pool {
    own: Option<ThreadPool>,
}

impl Pool {
    /// # Errors
    /// As [`install`].
    pub fn new(threads: Option<usize>) -> Result<Pool> {
        match threads {
            Some(0) => Err(Error::invalid("threads", "at least 1 (or None for all cores)", 0)),
            Some(n) => Ok(Pool { own: Some(build(n)?) }),
            None => Ok(Pool { own: None }),
        }
    }

    /// How many threads the pool has.
    pub fn threads(&self) -> usize {
        self.own.as_ref().map_or_else(rayon::current_num_threads, ThreadPool::current_num_threads)
    }

    /// Runs `f` on the pool.
    ///
    /// # Errors
    /// As [`install`].
    pub fn install<R: Send, F: FnOnce() -> R + Send>(&self, f: F) -> Result<R> {
        match &self.own {
            Some(pool) => Ok(pool.install(f)),
            None => install(None, f),
        }
    }

    /// Runs `f` on one of the pool's threads, the caller going on at once
    /// (work no one waits for, such as a hint to the OS).
    ///
    /// # Errors
    /// As [`install`].
    pub fn spawn<F: FnOnce() + Send + 'static>(&self, f: F) -> Result<()> {
        match &self.own {
            Some(pool) => pool.spawn(f),
            None => match default_pool(std::process::id())? {
                None => rayon::spawn(f),
                Some(pool) => pool.spawn(f),
            },
        }
        Ok(())
    }

    /// Runs `f` on one of the pool's threads, the caller waiting: one
    /// thread's work that should be no thread of its own. ([`Self::install`]
    /// on the global pool runs `f` on the caller, whose parallel iterators
    /// then go to the pool.)
    ///
    /// # Errors
    /// As [`install`].
    pub fn run_on_worker<R: Send, F: FnOnce() -> R + Send>(&self, f: F) -> Result<R> {
        self.install(|| if rayon::current_thread_index().is_some() { f() } else { rayon::scope(|_| f()) })
    }
}

/// `parts` end to end, copied side by side on the current rayon pool: one
/// thread copying a block's parsed parts (and taking the page faults of
/// the new vector) would hold up the thread that hands blocks on, with the
/// pool idle. A refused allocation unwinds as `crate::mem` says.
pub fn concat<T: Copy + Send + Sync>(parts: &[&[T]]) -> Vec<T> {
    concat_with(parts, |_, v| v)
}

/// [`concat`], each value of part `p` written as `f(p, value)`: the join
/// and a change of each part's values (packed offsets moved by the text
/// before them) in one pass.
pub fn concat_with<T: Copy + Send + Sync>(parts: &[&[T]], f: impl Fn(usize, T) -> T + Sync) -> Vec<T> {
    let total = parts.iter().map(|p| p.len()).sum();
    let mut out = crate::mem::work_vec(total);
    let mut rest = &mut out.spare_capacity_mut()[..total];
    let mut slots = Vec::with_capacity(parts.len());
    for part in parts {
        let (slot, tail) = std::mem::take(&mut rest).split_at_mut(part.len());
        slots.push(slot);
        rest = tail;
    }
    slots.into_par_iter().zip(parts.par_iter()).enumerate().with_min_len(4).for_each(|(p, (slot, part))| {
        for (to, &from) in slot.iter_mut().zip(part.iter()) {
            to.write(f(p, from));
        }
    });
    // SAFETY: the slots cover out[..total] exactly, and each was written whole above.
    unsafe { out.set_len(total) };
    out
}

/// The most threads a pool may have: 4 per core, and at least 1024. More
/// is a mistake (`threads=100000`), not a plan: each is an OS thread with
/// its own stack, and the work cannot use them.
pub fn max_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    cores.saturating_mul(4).max(1024)
}

/// Starts rayon's global pool now, if nothing has: rayon starts it on
/// first use and panics when its threads cannot be started (a process at
/// its memory or thread limit); here that is an error to report instead.
fn global_ready() -> Result<()> {
    static READY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if READY.load(std::sync::atomic::Ordering::Acquire) {
        return Ok(());
    }
    // Named, so that a per-thread profile tells its workers from Python's threads.
    match ThreadPoolBuilder::new().thread_name(|i| format!("rsimhash-g{i}")).build_global() {
        Ok(()) => {}
        // Started already (by rayon itself, or another library): fine.
        Err(e) if e.to_string().contains("already") => {}
        Err(e) => return Err(Error::ThreadPool { threads: 0, reason: format!("{e} (out of memory, or at the process's thread limit)") }),
    }
    READY.store(true, std::sync::atomic::Ordering::Release);
    Ok(())
}

fn build(threads: usize) -> Result<ThreadPool> {
    if threads > max_threads() {
        return Err(Error::InvalidParameter {
            name: "threads",
            expected: "at most 4 per core (at least 1024), or None for all cores",
            found: format!("{threads} (the most here is {})", max_threads()),
        });
    }
    ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("rsimhash-{i}"))
        .build()
        .map_err(|e| Error::ThreadPool { threads, reason: e.to_string() })
}

/// The kept pool of `threads` workers, built if there is none. Pools built
/// by another process (the parent of a fork) have no threads here: they are
/// forgotten, not dropped, as dropping one signals threads that do not exist.
fn sized_pool(threads: usize, pid: u32) -> Result<Arc<ThreadPool>> {
    let mut guard = SIZED_POOLS.lock().unwrap_or_else(|e| e.into_inner());
    let (owner, pools) = &mut *guard;
    if *owner != pid {
        std::mem::forget(std::mem::take(pools));
        *owner = pid;
    }
    if let Some(at) = pools.iter().position(|(n, _)| *n == threads) {
        let entry = pools.remove(at);
        let pool = Arc::clone(&entry.1);
        pools.push(entry);
        return Ok(pool);
    }
    let pool = Arc::new(build(threads)?);
    if pools.len() >= KEPT_SIZES {
        pools.remove(0);
    }
    pools.push((threads, Arc::clone(&pool)));
    Ok(pool)
}

fn child_pool(pid: u32) -> Result<Arc<ThreadPool>> {
    let mut slot = CHILD_POOL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((owner, pool)) = slot.as_ref() {
        if *owner == pid {
            return Ok(Arc::clone(pool));
        }
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pool = Arc::new(build(threads)?);
    *slot = Some((pid, Arc::clone(&pool)));
    Ok(pool)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concat_is_the_parts_end_to_end() {
        let parts: Vec<Vec<u64>> = (0..40u64).map(|p| (0..p * p % 37).map(|i| p << 32 | i).collect()).collect();
        let slices: Vec<&[u64]> = parts.iter().map(|p| p.as_slice()).collect();
        for threads in [1, 3] {
            assert_eq!(install(Some(threads), || concat(&slices)).unwrap(), parts.concat());
        }
        assert!(concat::<u64>(&[]).is_empty());
        assert!(concat::<u64>(&[&[], &[]]).is_empty());
    }

    #[test]
    fn runs_with_chosen_threads() {
        assert_eq!(install(Some(3), rayon::current_num_threads).unwrap(), 3);
        assert!(install(None, || 1 + 1).is_ok());
        assert!(matches!(install(Some(0), || ()), Err(Error::InvalidParameter { .. })));
        assert!(matches!(install(Some(100_000), || ()), Err(Error::InvalidParameter { .. })), "no 100,000 threads");
        assert!(matches!(Pool::new(Some(max_threads() + 1)), Err(Error::InvalidParameter { .. })));
    }

    #[test]
    fn work_runs_on_a_worker_of_its_pool() {
        for pool in [Pool::new(None).unwrap(), Pool::new(Some(2)).unwrap()] {
            let on = |pool: &Pool| pool.run_on_worker(rayon::current_thread_index).unwrap();
            assert!(on(&pool).is_some(), "from a thread outside the pool");
            assert!(pool.install(|| on(&pool)).unwrap().is_some(), "from the pool's own thread");
        }
        assert_eq!(Pool::new(Some(3)).unwrap().run_on_worker(rayon::current_num_threads).unwrap(), 3);
    }

    #[test]
    fn spawned_work_runs_on_a_worker() {
        for pool in [Pool::new(None).unwrap(), Pool::new(Some(2)).unwrap()] {
            let (tx, rx) = std::sync::mpsc::channel();
            pool.spawn(move || tx.send(rayon::current_thread_index()).unwrap()).unwrap();
            assert!(rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap().is_some());
        }
    }

    #[test]
    fn a_chosen_size_reuses_its_pool() {
        // Thread ids are never reused: 20 calls on new pools would give 20.
        let workers: std::collections::HashSet<_> = (0..20).map(|_| install(Some(5), || std::thread::current().id()).unwrap()).collect();
        assert!(workers.len() <= 5, "one pool of 5 threads, not a new one per call: {} threads", workers.len());
        // More sizes than are kept: the oldest pool goes, each still answers with its own size.
        for n in 1..=KEPT_SIZES + 2 {
            assert_eq!(install(Some(n), rayon::current_num_threads).unwrap(), n);
        }
        assert_eq!(install(Some(5), rayon::current_num_threads).unwrap(), 5);
        assert!(SIZED_POOLS.lock().unwrap().1.len() <= KEPT_SIZES);
    }
}
