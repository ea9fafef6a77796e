//! The persisted state of store extensions: reading and replacing it.

use crate::error::{MemoryError, Result};
use crate::wal::{DurableTicket, WalOp};

use super::Store;

impl Store {
    /// The persisted state of a store extension (workspace sync, graph, ...), if it has any.
    pub fn extension(&self, name: &str) -> Option<&[u8]> {
        self.extensions.get(name).map(Vec::as_slice)
    }

    /// Replace an extension's persisted state (logged like any change, stored under `/extensions/NAME`).
    pub fn put_extension(&mut self, name: &str, payload: Vec<u8>) -> Result<()> {
        self.put_extension_deferred(name, payload)?.wait()?;
        self.maybe_checkpoint()
    }

    /// [`Self::put_extension`] without waiting for durability or checkpointing: returns the ticket to wait on.
    pub fn put_extension_deferred(
        &mut self,
        name: &str,
        payload: Vec<u8>,
    ) -> Result<DurableTicket> {
        let valid = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid {
            return Err(MemoryError::InvalidInput(format!(
                "bad extension name {name:?}"
            )));
        }
        self.log_and_apply(WalOp::Extension {
            name: name.to_string(),
            payload,
        })
    }
}
