//! Every attempt starts from the arguments as the caller passed them: a `mut` argument taken by
//! value is copied afresh for each attempt, so one attempt's changes never leak into the next.
#![deny(warnings, unused_qualifications)]

use retry_kit::{Classify, retryable};

#[derive(Debug, PartialEq, Classify)]
#[classify(transient)]
struct Busy;

/// Fails while `*failures` is above zero, counting it down.
fn flaky(failures: &mut u32) -> Result<(), Busy> {
    if *failures > 0 {
        *failures -= 1;
        return Err(Busy);
    }
    Ok(())
}

#[retryable(attempts = 3, base = "0ms")]
fn scaled(mut n: u32, failures: &mut u32) -> Result<u32, Busy> {
    n *= 10;
    flaky(failures)?;
    Ok(n)
}

#[test]
fn a_mut_argument_starts_every_attempt_from_the_callers_value() {
    let mut failures = 2;
    // The attempts saw 1, 1, 1: not 1, 10, 100 (which returned 1000).
    assert_eq!(scaled(1, &mut failures), Ok(10));
    assert_eq!(failures, 0);
}

#[retryable(attempts = 4, base = "0ms")]
async fn scaled_async(mut n: u64, failures: &mut u32) -> Result<u64, Busy> {
    n += 1;
    tokio::task::yield_now().await;
    n *= 3;
    flaky(failures)?;
    Ok(n)
}

#[tokio::test]
async fn an_async_mut_argument_starts_every_attempt_from_the_callers_value() {
    let mut failures = 3;
    assert_eq!(scaled_async(1, &mut failures).await, Ok(6));
}

/// A cursor over a buffer: each attempt must read from where the caller said.
#[retryable(attempts = 3, base = "0ms")]
fn read_from(data: &[u8], mut cursor: usize, failures: &mut u32) -> Result<Vec<u8>, Busy> {
    let mut read = Vec::new();
    while cursor < data.len() {
        read.push(data[cursor]);
        cursor += 1;
        if read.len() == 2 {
            // The connection drops after two bytes on a flaky attempt.
            flaky(failures)?;
        }
    }
    Ok(read)
}

#[test]
fn a_cursor_argument_is_not_advanced_by_a_failed_attempt() {
    let mut failures = 1;
    assert_eq!(read_from(b"abcd", 1, &mut failures), Ok(b"bcd".to_vec()));
}

#[retryable(attempts = 3, base = "0ms")]
fn in_patterns(
    (mut lo, hi): (u8, u8),
    Pair { mut left, right }: Pair,
    failures: &mut u32,
) -> Result<(u8, u8, i32, i32), Busy> {
    lo += 1;
    left -= 1;
    flaky(failures)?;
    Ok((lo, hi, left, right))
}

#[derive(Clone, Copy)]
struct Pair {
    left: i32,
    right: i32,
}

#[test]
fn mut_bindings_inside_argument_patterns_are_copied_afresh_too() {
    let mut failures = 2;
    assert_eq!(
        in_patterns((1, 9), Pair { left: 5, right: 6 }, &mut failures),
        Ok((2, 9, 4, 6))
    );
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Point {
    x: i32,
}

impl Point {
    #[retryable(attempts = 3, base = "0ms")]
    fn moved_by(&self, mut step: i32, failures: &mut u32) -> Result<Point, Busy> {
        step *= 2;
        flaky(failures)?;
        Ok(Point { x: self.x + step })
    }
}

#[test]
fn methods_copy_their_mut_arguments_afresh() {
    let mut failures = 2;
    assert_eq!(
        Point { x: 1 }.moved_by(3, &mut failures),
        Ok(Point { x: 7 })
    );
}

/// `&mut` arguments are how a body carries state across attempts on purpose.
#[retryable(attempts = 3, base = "0ms")]
fn counted(seen: &mut Vec<u32>, attempt: u32) -> Result<usize, Busy> {
    seen.push(attempt);
    if seen.len() < 3 {
        return Err(Busy);
    }
    Ok(seen.len())
}

#[test]
fn a_mut_reference_still_carries_state_across_attempts() {
    let mut seen = Vec::new();
    assert_eq!(counted(&mut seen, 7), Ok(3));
    assert_eq!(seen, [7, 7, 7]);
}
