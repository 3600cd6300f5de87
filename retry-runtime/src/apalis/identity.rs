//! Who a task is across its runs: the idempotency key every run sends, and the id of the row
//! a run hands the task back to.

use crate::context::{IdempotencyKey, operation_id};
use crate::stable_hash::StableHasher;
use apalis_core::task::ExecutionContext;
use apalis_core::task::task_id::TaskId;
use std::hash::Hasher;

/// The operation every task's key is made under (see [`task_key`]).
pub(crate) const OPERATION: u64 = operation_id("retry_kit::apalis");

/// What a successor id is hashed from, written first, so that it never meets a key.
const SUCCESSOR: u8 = 0x5a;

/// The key of a task that has none yet (its first run): the task's identity in its queue,
/// `IdempotencyKey::of(&(queue, identity), operation_id("retry_kit::apalis"))`, where the
/// identity is the idempotency key the producer gave the task (`TaskBuilder::idempotency_key`,
/// such as `"2026-12-03/billing-export"`) or else its id. Every later run, on any worker,
/// reads the key from the state the task carries instead.
pub(crate) fn task_key(ctx: &ExecutionContext, id: &TaskId) -> IdempotencyKey {
    let queue = ctx.queue().map_or("", |q| q.as_ref());
    let identity = match ctx.idempotency_key() {
        Some(producer) => producer.to_owned(),
        None => id.to_string(),
    };
    IdempotencyKey::of(&(queue, identity.as_str()), OPERATION)
}

/// The id of the row that the run of row `row` hands task `key` back to: a fixed function of
/// the two (SipHash-2-4-128, written as a ULID: 26 Crockford base-32 digits, which both SQL
/// backends read back), so that a run of `row` repeated after a crash names the same successor
/// (the second push finds it there), and [`run_log`](super::run_log) finds it from `row`.
pub(crate) fn successor_id(key: IdempotencyKey, row: &TaskId) -> TaskId {
    let mut h = StableHasher::new();
    h.write_u8(SUCCESSOR);
    h.write_u128(key.as_u128());
    h.write(row.to_string().as_bytes());
    let text = crockford(h.finish128());
    // A non-empty string always parses (as a ULID when apalis-core has `ulid`, else as a string
    // id with the same text).
    text.parse().unwrap_or(TaskId::String(text))
}

/// A new task id, as the backends make them: a ULID (the time in milliseconds, then 80 random
/// bits), so that a producer knows the id of the task it pushes (to read its run log).
pub(crate) fn fresh_id() -> TaskId {
    let millis = crate::clock::wall_now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis()
        & ((1 << 48) - 1);
    let random = rand::random::<u128>() & ((1 << 80) - 1);
    let text = crockford(millis << 80 | random);
    text.parse().unwrap_or(TaskId::String(text))
}

/// `value` as a ULID writes its 128 bits: 26 digits of Crockford's base 32, the first holding
/// the top 3 bits.
fn crockford(mut value: u128) -> String {
    const DIGITS: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let mut out = [0u8; 26];
    for digit in out.iter_mut().rev() {
        *digit = DIGITS[(value & 31) as usize];
        value >>= 5;
    }
    out.iter().map(|&b| char::from(b)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use apalis_core::task::builder::TaskBuilder;

    #[test]
    fn crockford_writes_a_ulid() {
        assert_eq!(crockford(0), "00000000000000000000000000");
        assert_eq!(crockford(u128::MAX), "7ZZZZZZZZZZZZZZZZZZZZZZZZZ");
        assert_eq!(crockford(32), "00000000000000000000000010");
    }

    #[test]
    fn keys_and_successors_are_pinned() {
        // Pinned: a task re-run by a newer build of the crate must send the key its earlier
        // runs sent, and name the successor they named.
        let task = TaskBuilder::new(())
            .queue("exports".to_owned().into())
            .idempotency_key("2026-12-03/billing-export")
            .build();
        let id = TaskId::String("01JEX7Q0000000000000000000".into());
        let key = task_key(task.ctx(), &id);
        assert_eq!(
            key,
            IdempotencyKey::of(&("exports", "2026-12-03/billing-export"), OPERATION)
        );
        assert_eq!(key.to_string(), "ec3150b1a8561653a8be8f718d3563f9");
        assert_eq!(
            successor_id(key, &id).to_string(),
            "6P1V998ZSW8S7CWD1B3GDHHE74"
        );

        // Without a producer's key, the id is the identity.
        let plain = TaskBuilder::new(())
            .queue("exports".to_owned().into())
            .build();
        assert_eq!(
            task_key(plain.ctx(), &id),
            IdempotencyKey::of(&("exports", "01JEX7Q0000000000000000000"), OPERATION)
        );
        assert_ne!(
            successor_id(key, &id),
            successor_id(key, &successor_id(key, &id))
        );
    }
}
