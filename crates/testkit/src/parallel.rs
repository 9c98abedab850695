//! [`map_in_parallel`]: a test's independent cases on a few threads of its own.
//!
//! libtest runs a binary's tests on as many threads as there are cores, each test on one. A test
//! that walks every example for a minute keeps one core to itself after the others are done, and
//! the binary waits on it; splitting its cases over two threads lets it share both cores with
//! whatever else is still running.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// `f` of every item, in the items' order, computed on `threads` threads (at least one) that
/// each take the next item not yet taken. A panic in `f` fails the caller with that panic.
pub fn map_in_parallel<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::with_capacity(items.len()));
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| loop {
                let index = next.fetch_add(1, Ordering::SeqCst);
                let Some(item) = items.get(index) else {
                    break;
                };
                let result = f(item);
                results
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .push((index, result));
            });
        }
    });
    let mut results = results
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    results.sort_by_key(|(index, _)| *index);
    results.into_iter().map(|(_, result)| result).collect()
}

#[cfg(test)]
mod tests {
    use super::map_in_parallel;

    #[test]
    fn keeps_the_items_order() {
        let items: Vec<u64> = (0..100).collect();
        let squares = map_in_parallel(&items, 3, |x| {
            // Later items finish first, so the order cannot come from completion.
            std::thread::sleep(std::time::Duration::from_micros(100 - x));
            x * x
        });
        assert_eq!(squares, items.iter().map(|x| x * x).collect::<Vec<_>>());
    }

    #[test]
    fn every_item_once_with_more_threads_than_items() {
        let items = [1, 2];
        assert_eq!(map_in_parallel(&items, 8, |x| x + 1), vec![2, 3]);
        assert_eq!(map_in_parallel(&[] as &[u8], 2, |x| *x), Vec::<u8>::new());
    }
}
