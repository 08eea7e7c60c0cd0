//! The per-session cache of converted pages, by URL and format, revalidated with the server's
//! validators (`ETag`, `Last-Modified`).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use super::{Format, client::Validators};

/// The most converted text the cache keeps; the oldest entries go first.
pub(crate) const MAX_CACHE_BYTES: usize = 64 * 1024 * 1024;

/// One converted page.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) url: String,
    pub(crate) status: u16,
    pub(crate) content_type: String,
    pub(crate) shown_as: &'static str,
    pub(crate) title: Option<String>,
    pub(crate) text: String,
    /// Tags dropped for nesting too deep (their text kept).
    pub(crate) flattened: usize,
    pub(crate) cut: bool,
    pub(crate) redirects: usize,
    pub(crate) validators: Validators,
}

type Key = (String, Format);
/// A logical clock (for eviction) and the entries with the tick they were stored at.
type Entries = (u64, HashMap<Key, (u64, Arc<Entry>)>);

#[derive(Debug, Default)]
pub(crate) struct Cache {
    entries: Mutex<Entries>,
}

impl Cache {
    pub(crate) fn get(&self, key: &Key) -> Option<Arc<Entry>> {
        self.entries.lock().ok()?.1.get(key).map(|(_, entry)| entry.clone())
    }

    pub(crate) fn put(&self, key: Key, entry: Entry) -> Arc<Entry> {
        let entry = Arc::new(entry);
        if let Ok(mut guard) = self.entries.lock() {
            let (clock, map) = &mut *guard;
            *clock += 1;
            map.insert(key, (*clock, entry.clone()));
            while map.values().map(|(_, e)| e.text.len()).sum::<usize>() > MAX_CACHE_BYTES
                && map.len() > 1
            {
                let oldest = map.iter().min_by_key(|(_, (age, _))| *age).map(|(k, _)| k.clone());
                match oldest {
                    Some(key) => map.remove(&key),
                    None => break,
                };
            }
        }
        entry
    }
}
