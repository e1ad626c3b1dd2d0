//! Lua that runs inside an async front-end without holding its worker.
//!
//! Resolvers and frontmatter are called synchronously (the approval chain
//! is not async) and may run up to their deadline: on a multi-threaded
//! runtime the worker's other tasks are handed to another thread for that
//! time, so a slow script never stalls the streams, timers and cancellation
//! of the calls beside it.

/// Runs `f`, off the async worker when called from one of a multi-threaded
/// runtime (on a current-thread runtime, or none, `f` simply runs).
pub fn off_worker<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    /// With one worker, a task beside a slow script still runs while the
    /// script does.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_slow_script_does_not_hold_the_worker() {
        let started = Instant::now();
        let ticker = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            started.elapsed()
        });
        tokio::task::yield_now().await;
        off_worker(|| std::thread::sleep(Duration::from_millis(600)));
        let ticked = ticker.await.unwrap();
        assert!(ticked < Duration::from_millis(400), "the ticker waited {ticked:?}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn on_a_current_thread_runtime_it_just_runs() {
        assert_eq!(off_worker(|| 7), 7);
    }
}
