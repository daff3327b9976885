//! Sweeps of independent slow cases (`dualsim check` on many scenes) on
//! every core: each case is a child process, so the workers mostly wait.

use std::sync::Mutex;

/// Runs `f` on every item, as many at a time as the machine has cores;
/// the messages `f` returns (one per failed item), in no particular
/// order. Every item runs: a failure does not stop the sweep.
pub fn in_parallel<T: Sync>(items: &[T], f: impl Fn(&T) -> Option<String> + Sync) -> Vec<String> {
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let next = Mutex::new(0usize);
    let failed = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..workers.min(items.len()) {
            s.spawn(|| {
                loop {
                    let i = {
                        let mut n = next.lock().unwrap();
                        *n += 1;
                        *n - 1
                    };
                    let Some(item) = items.get(i) else { break };
                    if let Some(e) = f(item) {
                        failed.lock().unwrap().push(e);
                    }
                }
            });
        }
    });
    failed.into_inner().unwrap()
}
