//! Waiting for durability without a blocked thread per waiter: [`Durable`] is a future that one background
//! syncer thread per log resolves. The syncer fsyncs once for every entry waiting at that moment (group commit
//! for async callers), so a server holding many concurrent saves spends one thread and one wake-up per fsync
//! instead of one blocked thread per save.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread::JoinHandle;

use super::Shared;
use crate::error::{MemoryError, Result};

/// One waiter's outcome, filled in by the syncer.
#[derive(Default)]
struct Slot {
    inner: Mutex<SlotInner>,
}

#[derive(Default)]
struct SlotInner {
    /// `Err` holds why the fsync failed.
    outcome: Option<std::result::Result<(), String>>,
    waker: Option<Waker>,
}

impl Slot {
    fn finish(&self, outcome: std::result::Result<(), String>) {
        let waker = {
            let mut s = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            s.outcome = Some(outcome);
            s.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

#[derive(Default)]
struct State {
    waiting: Vec<(u64, Arc<Slot>)>,
    started: bool,
    stopped: bool,
}

/// The per-log syncer: a queue of waiters and the thread that serves it (started on first use).
#[derive(Default)]
pub(super) struct Syncer {
    state: Mutex<State>,
    wake: Condvar,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Syncer {
    /// Queue `slot` until `lsn` is durable. `false` when no syncer runs (the log is closing, or its thread
    /// could not be started): the caller then syncs itself.
    fn enqueue(&self, shared: &Arc<Shared>, lsn: u64, slot: Arc<Slot>) -> bool {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if st.stopped {
            return false;
        }
        if !st.started {
            let s = Arc::clone(shared);
            let spawned = std::thread::Builder::new()
                .name("clawhdf5-wal-sync".into())
                .spawn(move || run(&s));
            match spawned {
                Ok(h) => {
                    *self.thread.lock().unwrap_or_else(|p| p.into_inner()) = Some(h);
                    st.started = true;
                }
                Err(_) => return false,
            }
        }
        st.waiting.push((lsn, slot));
        self.wake.notify_one();
        true
    }

    /// Have the syncer make `lsn` durable with no one waiting on its outcome (a blocking waiter learns it
    /// from the log itself); nothing happens where no syncer runs (see [`Self::enqueue`]).
    pub(super) fn start(&self, shared: &Arc<Shared>, lsn: u64) {
        self.enqueue(shared, lsn, Arc::new(Slot::default()));
    }

    /// Serve everyone still waiting, then stop the thread (called when the log is dropped).
    pub(super) fn stop(&self) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).stopped = true;
        self.wake.notify_all();
        let handle = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(h) = handle {
            let _ = h.join();
        }
    }
}

/// The syncer thread: take every waiter queued so far, make the highest LSN among them durable (one write and
/// one fsync, shared with threads waiting through [`super::DurableTicket::wait`]), answer them all, repeat.
fn run(shared: &Shared) {
    loop {
        let batch = {
            let mut st = shared
                .syncer
                .state
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            loop {
                if !st.waiting.is_empty() {
                    break std::mem::take(&mut st.waiting);
                }
                if st.stopped {
                    return;
                }
                st = shared
                    .syncer
                    .wake
                    .wait(st)
                    .unwrap_or_else(|p| p.into_inner());
            }
        };
        let target = batch.iter().map(|(lsn, _)| *lsn).max().unwrap_or(0);
        let outcome = shared.sync_to(target).map_err(|e| match e {
            MemoryError::Wal { reason, .. } => reason,
            other => other.to_string(),
        });
        for (_, slot) in batch {
            slot.finish(outcome.clone());
        }
    }
}

/// A future that completes when one logged entry is on disk (from [`super::DurableTicket::durable`]).
pub struct Durable {
    shared: Arc<Shared>,
    lsn: u64,
    needed: bool,
    slot: Option<Arc<Slot>>,
}

impl Durable {
    pub(super) fn new(shared: Arc<Shared>, lsn: u64, needed: bool) -> Durable {
        Durable {
            shared,
            lsn,
            needed,
            slot: None,
        }
    }
}

impl Future for Durable {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        let this = self.get_mut();
        if !this.needed || this.shared.synced(this.lsn) {
            return Poll::Ready(Ok(()));
        }
        if let Some(slot) = &this.slot {
            let mut s = slot.inner.lock().unwrap_or_else(|p| p.into_inner());
            return match s.outcome.take() {
                Some(Ok(())) => Poll::Ready(Ok(())),
                Some(Err(reason)) => Poll::Ready(Err(MemoryError::Wal {
                    path: this.shared.path.clone(),
                    reason,
                })),
                None => {
                    if !s.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                        s.waker = Some(cx.waker().clone());
                    }
                    Poll::Pending
                }
            };
        }
        let slot = Arc::new(Slot::default());
        slot.inner.lock().unwrap_or_else(|p| p.into_inner()).waker = Some(cx.waker().clone());
        if this
            .shared
            .syncer
            .enqueue(&this.shared, this.lsn, Arc::clone(&slot))
        {
            this.slot = Some(slot);
            Poll::Pending
        } else {
            // No syncer (the log is closing): make the entry durable here, as a blocking wait would.
            Poll::Ready(this.shared.sync_to(this.lsn))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::super::{read_log, Durability, Wal, WalOp};
    use super::*;

    /// A one-thread executor: poll, park until woken, repeat.
    fn block_on<F: Future>(f: F) -> F::Output {
        struct Unpark(std::thread::Thread);
        impl std::task::Wake for Unpark {
            fn wake(self: Arc<Self>) {
                self.0.unpark();
            }
        }
        let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
        let mut cx = Context::from_waker(&waker);
        let mut f = std::pin::pin!(f);
        loop {
            if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
                return v;
            }
            std::thread::park();
        }
    }

    /// Poll every future until all are done (what an executor does with many concurrent tasks).
    fn join_all(mut fs: Vec<Durable>) -> Vec<Result<()>> {
        let mut out: Vec<Option<Result<()>>> = fs.iter().map(|_| None).collect();
        block_on(std::future::poll_fn(|cx| {
            for (f, o) in fs.iter_mut().zip(out.iter_mut()) {
                if o.is_none() {
                    if let Poll::Ready(r) = Pin::new(f).poll(cx) {
                        *o = Some(r);
                    }
                }
            }
            if out.iter().all(Option::is_some) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        }));
        out.into_iter().flatten().collect()
    }

    #[test]
    fn many_waiting_futures_all_complete_once_durable() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.wal");
        {
            let (wal, _) = Wal::open(&p, 0, Durability::EverySave).unwrap();
            for round in 0..5u64 {
                let tickets: Vec<_> = (0..50)
                    .map(|i| {
                        wal.append(&WalOp::Delete {
                            id: round * 100 + i,
                        })
                        .unwrap()
                    })
                    .collect();
                let last = tickets.last().unwrap().lsn();
                let results = join_all(tickets.iter().map(|t| t.durable()).collect());
                assert_eq!(results.len(), 50);
                assert!(results.iter().all(|r| r.is_ok()));
                assert!(wal.shared.synced_lsn.load(Ordering::Acquire) >= last);
            }
        }
        assert_eq!(read_log(&p).unwrap().entries.len(), 250);
    }

    #[test]
    fn futures_and_blocking_waiters_share_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.wal");
        {
            let (wal, _) = Wal::open(&p, 0, Durability::EverySave).unwrap();
            std::thread::scope(|s| {
                for t in 0..4u64 {
                    let wal = &wal;
                    s.spawn(move || {
                        for i in 0..30 {
                            let ticket = wal.append(&WalOp::Delete { id: t * 1000 + i }).unwrap();
                            if t % 2 == 0 {
                                block_on(ticket.durable()).unwrap();
                            } else {
                                ticket.wait().unwrap();
                            }
                            assert!(wal.shared.synced(ticket.lsn()));
                        }
                    });
                }
            });
        }
        assert_eq!(read_log(&p).unwrap().entries.len(), 120);
    }

    #[test]
    fn a_future_outliving_its_log_still_completes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.wal");
        let (wal, _) = Wal::open(&p, 0, Durability::EverySave).unwrap();
        let ticket = wal.append(&WalOp::Delete { id: 7 }).unwrap();
        drop(wal);
        block_on(ticket.durable()).unwrap();
        assert_eq!(read_log(&p).unwrap().entries.len(), 1);
    }

    #[test]
    fn a_begun_batch_is_written_by_the_syncer_while_the_caller_works() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.wal");
        let ops: Vec<WalOp> = (0..300)
            .map(|i| WalOp::Extension {
                name: format!("x{i}"),
                payload: vec![i as u8; 5000],
            })
            .collect();
        {
            let (wal, _) = Wal::open(&p, 0, Durability::EverySave).unwrap();
            // One call's batch stays queued, larger than the bound though it is, until someone writes it.
            let (_, ticket) = wal.append_many(&ops).unwrap();
            assert_eq!(wal.shared.written_lsn.load(Ordering::Acquire), 0);
            ticket.begin();
            assert!(wal.shared.syncer.state.lock().unwrap().started);
            ticket.wait().unwrap();
            assert!(wal.shared.synced(ticket.lsn()));
            // Begun again once durable: nothing to do.
            ticket.begin();
        }
        let rec = read_log(&p).unwrap();
        assert_eq!(rec.entries.len(), 300);
        assert_eq!(rec.entries[299].op, ops[299]);
    }

    #[test]
    fn other_modes_need_no_wait() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.wal");
        let (wal, _) = Wal::open(&p, 0, Durability::None).unwrap();
        let ticket = wal.append(&WalOp::Delete { id: 1 }).unwrap();
        block_on(ticket.durable()).unwrap();
        assert!(!wal.shared.syncer.state.lock().unwrap().started);
    }
}
