//! A process-wide cache of values computed once per Rust type.

use std::{
    any::TypeId,
    collections::HashMap,
    sync::{OnceLock, PoisonError, RwLock},
};

/// Values keyed by [`TypeId`]. Lookups take a read lock; a miss computes the value outside any
/// lock (schema generation may itself consult other caches) and keeps the first value stored.
pub(crate) struct TypeCache<V> {
    map: OnceLock<RwLock<HashMap<TypeId, V>>>,
}

impl<V: Clone> TypeCache<V> {
    pub(crate) const fn new() -> Self {
        Self { map: OnceLock::new() }
    }

    pub(crate) fn get_or_insert_with<T: 'static>(&self, make: impl FnOnce() -> V) -> V {
        let id = TypeId::of::<T>();
        let lock = self.map.get_or_init(|| RwLock::new(HashMap::new()));
        // A panic while holding the lock cannot leave the map half-written (inserts are atomic
        // from the map's point of view), so a poisoned lock is still safe to use.
        if let Some(value) = lock.read().unwrap_or_else(PoisonError::into_inner).get(&id) {
            return value.clone();
        }
        let value = make();
        let mut map = lock.write().unwrap_or_else(PoisonError::into_inner);
        map.entry(id).or_insert(value).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::TypeCache;

    #[test]
    fn computes_once_per_type() {
        let cache: TypeCache<usize> = TypeCache::new();
        let mut calls = 0;
        let first = cache.get_or_insert_with::<u8>(|| {
            calls += 1;
            1
        });
        let again = cache.get_or_insert_with::<u8>(|| {
            calls += 1;
            2
        });
        let other = cache.get_or_insert_with::<u16>(|| 3);
        assert_eq!((first, again, other, calls), (1, 1, 3, 1));
    }
}
