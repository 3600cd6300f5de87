//! [`Hedging`]: the attempts in flight of one hedged call, kept by the hedged loop
//! ([`retry_hedged!`](crate::retry_hedged)); the rules are [`Hedge`](crate::builder::Hedge)'s.

use super::call::Call;
use super::call_policy::CallPolicy;
use super::outcome::Outcome;
use super::protection::{Holding, PanicGuard, PanicSink, Protection};

use crate::clock;
use crate::context::CallCtx;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// The attempts in flight of one hedged call, and the timer that starts the next one.
///
/// An attempt that starts while none is running (the first, or one after every earlier attempt
/// finished) is kept in place, in the call's own future, and runs as a sequential attempt does,
/// on the call's own context and breaker permit: a hedged call whose attempt answers before the
/// hedge delay allocates nothing and keeps no record beside the call's. When the hedge timer
/// fires, that attempt is given a record of its own (its context and permit, boxed), as every
/// attempt started beside a running one is; those are boxed whole, since they finish and are
/// dropped out of order. The one in place is always the oldest running, so attempts are still
/// polled in the order they started.
///
/// It also keeps the timer (`T`, a future from the loop's sleep function) that starts the next
/// attempt, made only once the running attempts are pending: an attempt that answers on its
/// first poll never makes one.
///
/// Used pinned (`core::pin::pin!`), as [`retry_hedged!`](crate::retry_hedged) does: the attempt
/// in place and the timer are polled where they are.
pub struct Hedging<F, D, T> {
    /// The attempt in place's future, pinned with the `Hedging` (structurally), dropped in
    /// place.
    first_attempt: Option<F>,
    /// What attempts side by side need, made when a hedge timer first fires: one pointer in
    /// a call that never hedges.
    beside: Option<Box<Beside<F, D>>>,
    /// What the timer is for: a hedge (ask the budget and breaker when it fires), or an
    /// attempt already admitted, waiting out a retry-after (with its breaker permit) ...
    purpose: Timer<D>,
    /// ... and the timer, pinned structurally like the attempt in place; `None` until made (a
    /// hedge's, once the attempts are pending; a retry-after's, at once).
    timer: Option<T>,
}

enum Timer<D> {
    Off,
    Hedge,
    /// An attempt admitted (its hold), waiting out a retry-after until this instant (`None`:
    /// too far away to represent).
    Admitted(D, Option<Instant>),
}

/// What the call keeps of a running attempt besides its future.
struct Running<D> {
    number: u32,
    ctx: CallCtx,
    hold: D,
}

/// The records of attempts that run side by side.
struct Beside<F, D> {
    /// The attempt in place's own number, context and hold, once one started beside it; `None`
    /// while it runs alone, on the call's.
    first: Option<Running<D>>,
    /// The attempts started beside a running one, in the order they started.
    others: Vec<Boxed<F, D>>,
}

struct Boxed<F, D> {
    running: Running<D>,
    attempt: Pin<Box<F>>,
}

/// A pinned [`Hedging`]'s fields: the attempt in place and the timer pinned, the rest not.
struct Fields<'a, F, D, T> {
    first_attempt: Pin<&'a mut Option<F>>,
    beside: &'a mut Option<Box<Beside<F, D>>>,
    purpose: &'a mut Timer<D>,
    timer: Pin<&'a mut Option<T>>,
}

impl<F: Future, D, T> Fields<'_, F, D, T> {
    fn running(&self) -> u32 {
        running(self.first_attempt.is_some(), self.beside)
    }

    /// The attempt in place runs alone, on the call's own context and hold.
    fn alone(&self) -> bool {
        self.first_attempt.is_some() && self.beside.as_ref().is_none_or(|b| b.first.is_none())
    }

    /// The records of attempts side by side, made the first time they are needed.
    fn beside(&mut self) -> &mut Beside<F, D> {
        self.beside.get_or_insert_with(|| {
            Box::new(Beside {
                first: None,
                others: Vec::new(),
            })
        })
    }

    /// Before an attempt may start beside the one in place: give that one its own record (its
    /// number, its context moved off the call's, its permit), so that the call's context and
    /// hold are free for the next attempt.
    fn detach_first<'p, S, P: CallPolicy>(&mut self, call: &mut Call<'p, S, P>)
    where
        S: Protection<'p, Hold = D>,
    {
        if self.alone() {
            self.beside().first = Some(Running {
                number: call.attempt(),
                ctx: call.context().detach_attempt(),
                hold: call.protection.take_hold(),
            });
        }
    }
}

/// How many attempts are running: the one in place and the boxed ones.
fn running<F, D>(in_place: bool, beside: &Option<Box<Beside<F, D>>>) -> u32 {
    let others = beside.as_ref().map_or(0, |b| b.others.len());
    let others = u32::try_from(others).unwrap_or(u32::MAX);
    others.saturating_add(u32::from(in_place))
}

/// What [`Hedging::next`] waits for: an attempt that finished, or the timer.
#[derive(Debug)]
pub enum Event<O, D> {
    /// Attempt `number` finished with `out`; `hold` is its share of the call's protection.
    Finished {
        /// The attempt's number.
        number: u32,
        /// Its outcome.
        out: O,
        /// Its breaker permit and start time, for recording the outcome.
        hold: D,
    },
    /// The timer fired.
    Timer,
}

impl<F: Future, D, T: Future<Output = ()>> Default for Hedging<F, D, T> {
    fn default() -> Self {
        Hedging::new()
    }
}

impl<F: Future, D, T: Future<Output = ()>> Hedging<F, D, T> {
    /// No attempt yet.
    pub fn new() -> Self {
        Hedging {
            first_attempt: None,
            beside: None,
            purpose: Timer::Off,
            timer: None,
        }
    }

    /// How many attempts are running.
    pub fn running(&self) -> u32 {
        running(self.first_attempt.is_some(), &self.beside)
    }

    /// The fields, with the attempt in place pinned.
    #[inline]
    fn project(self: Pin<&mut Self>) -> Fields<'_, F, D, T> {
        // SAFETY: `first_attempt` and `timer` are pinned structurally: each is only ever set
        // or cleared through the `Pin` made here (`Pin::set`, which drops the old value in
        // place), never moved out, and `Hedging` has no `Drop` impl. The other fields are not
        // pinned, and each reference covers one field only.
        unsafe {
            let this = self.get_unchecked_mut();
            Fields {
                first_attempt: Pin::new_unchecked(&mut this.first_attempt),
                beside: &mut this.beside,
                purpose: &mut this.purpose,
                timer: Pin::new_unchecked(&mut this.timer),
            }
        }
    }

    /// Start `attempt` on `call` (already admitted); if another attempt may still start, a
    /// hedge follows after the delay, timed from when the attempts are next pending.
    #[inline]
    pub fn start<'p, S, P: CallPolicy>(self: Pin<&mut Self>, call: &mut Call<'p, S, P>, attempt: F)
    where
        S: Protection<'p, Hold = D>,
    {
        let mut this = self.project();
        if this.first_attempt.is_none() && this.running() == 0 {
            // Alone: in place, on the call's own context and hold, as a sequential attempt.
            call.begin_attempt();
            this.first_attempt.set(Some(attempt));
        } else {
            // Beside running ones: the one in place was given its own record when the timer
            // that admitted this one fired (before the admission took the call's hold).
            debug_assert!(!this.alone(), "an attempt starts beside one running alone");
            let beside = this.beside();
            let running = (beside.first.iter()).chain(beside.others.iter().map(|b| &b.running));
            call.context().share_key(running.map(|r| &r.ctx));
            let (number, ctx, hold) = call.begin_hedge();
            beside.others.push(Boxed {
                running: Running { number, ctx, hold },
                attempt: Box::pin(attempt),
            });
        }
        *this.purpose = if call.may_start_more() {
            Timer::Hedge
        } else {
            Timer::Off
        };
        this.timer.set(None);
    }

    /// The engine admitted the next attempt after `delay` (zero: at once): whether to start
    /// it now. A wait is made with `sleep`, the admission (the breaker permit) kept until it
    /// ends. While a retry-after is being waited out, no attempt starts sooner than it allows,
    /// whatever another attempt's failure says: an admission that the pending wait covers is
    /// released (as neither success nor failure: nothing was sent with it), and one that must
    /// wait longer replaces it.
    pub fn admitted<'p, S, P: CallPolicy, Sl>(
        self: Pin<&mut Self>,
        call: &mut Call<'p, S, P>,
        delay: Duration,
        sleep: Sl,
    ) -> bool
    where
        S: Protection<'p, Hold = D>,
        Sl: Fn(Duration) -> T,
    {
        let mut this = self.project();
        if let Timer::Admitted(_, pending) = this.purpose {
            let covered = match (clock::now().checked_add(delay), *pending) {
                (_, None) => true,
                (None, Some(_)) => false,
                (Some(until), Some(pending)) => until <= pending,
            };
            if covered {
                drop(call.protection.take_hold());
                return false;
            }
        }
        if delay.is_zero() || clock::virtual_sleep(delay) {
            // `start` disarms a pending wait this one outlasts, releasing its admission.
            return true;
        }
        *this.purpose =
            Timer::Admitted(call.protection.take_hold(), clock::now().checked_add(delay));
        this.timer.set(Some(sleep(delay)));
        false
    }

    /// The call starts no further attempt (a stop that leaves attempts running): drop the
    /// timer, releasing an admitted attempt's permit as neither success nor failure.
    pub fn start_no_more(self: Pin<&mut Self>) {
        let mut this = self.project();
        *this.purpose = Timer::Off;
        this.timer.set(None);
    }

    /// The timer fired: whether to start the next attempt now. A hedge is admitted now (by
    /// the deadline, the budget and the breaker) and reported to `hook`; an attempt that
    /// waited out a retry-after was admitted before. `then` is the loop's map of a settled
    /// outcome to the one the engine judges (identity, or `retry_if`'s flag): it names the
    /// error type of the records `hook` receives.
    pub fn timer_fired<'p, S, P: CallPolicy, H, X, O>(
        self: Pin<&mut Self>,
        call: &mut Call<'p, S, P>,
        hook: &mut H,
        then: &impl Fn(X) -> O,
    ) -> bool
    where
        S: Protection<'p, Hold = D>,
        O: Outcome,
        H: super::Hook<O::Error>,
    {
        let _ = then;
        let mut this = self.project();
        match std::mem::replace(this.purpose, Timer::Off) {
            Timer::Off => false,
            Timer::Hedge => {
                this.detach_first(call);
                let admitted = call.admit_hedge();
                if admitted {
                    hook.on_hedge(call.attempt().saturating_add(1), this.running());
                }
                admitted
            }
            Timer::Admitted(hold, _) => {
                call.protection.put_hold(hold);
                true
            }
        }
    }

    /// Wait for the first attempt to finish or for the timer. A hedge's timer, of the delay
    /// `after` gives, is made (by `sleep`) only once the running attempts are pending: an
    /// attempt that answers on its first poll never makes one.
    ///
    /// The delay is a function rather than a field so that a constant one (the attribute's)
    /// takes no room in the call's future.
    #[inline]
    pub fn next<'a, 'p, S, P: CallPolicy, Sl, A>(
        self: Pin<&'a mut Self>,
        call: &'a mut Call<'p, S, P>,
        sleep: Sl,
        after: A,
    ) -> NextEvent<'a, 'p, F, D, T, S, P, Sl, A>
    where
        S: Protection<'p, Hold = D>,
        Sl: Fn(Duration) -> T + Unpin + 'a,
        A: Fn() -> Duration + Unpin + 'a,
    {
        NextEvent {
            hedging: self,
            call,
            sleep,
            after,
        }
    }
}

/// The future [`Hedging::next`] returns: the next attempt to finish, or the timer.
///
/// A named future rather than a `poll_fn` closure so that its `poll` is always inlined into
/// the loop's: a hedged call whose attempt answers at once pays no call into it.
#[must_use = "futures do nothing unless awaited"]
pub struct NextEvent<'a, 'p, F, D, T, S, P: CallPolicy, Sl, A> {
    hedging: Pin<&'a mut Hedging<F, D, T>>,
    call: &'a mut Call<'p, S, P>,
    sleep: Sl,
    after: A,
}

impl<'p, F, D, T, S, P, Sl, A> Future for NextEvent<'_, 'p, F, D, T, S, P, Sl, A>
where
    F: Future,
    T: Future<Output = ()>,
    S: Protection<'p, Hold = D>,
    P: CallPolicy,
    Sl: Fn(Duration) -> T + Unpin,
    A: Fn() -> Duration + Unpin,
{
    type Output = Event<F::Output, D>;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let next = self.get_mut();
        let mut this = next.hedging.as_mut().project();
        if let Some(done) = this.poll_attempts(next.call, cx) {
            return Poll::Ready(done);
        }
        if this.timer.is_none() && matches!(this.purpose, Timer::Hedge) {
            this.timer.set(Some((next.sleep)((next.after)())));
        }
        match this.timer.as_mut().as_pin_mut().map(|t| t.poll(cx)) {
            Some(Poll::Ready(())) => {
                this.timer.set(None);
                Poll::Ready(Event::Timer)
            }
            _ => Poll::Pending,
        }
    }
}

impl<F: Future, D, T> Fields<'_, F, D, T> {
    /// Poll every running attempt, in the order they started (the one in place is the
    /// oldest), each with its own context installed and a panic recorded against its own hold.
    #[inline]
    fn poll_attempts<'p, S, P: CallPolicy>(
        &mut self,
        call: &mut Call<'p, S, P>,
        cx: &mut Context<'_>,
    ) -> Option<Event<F::Output, D>>
    where
        S: Protection<'p, Hold = D>,
    {
        let this = self;
        if let Some(attempt) = this.first_attempt.as_mut().as_pin_mut() {
            let polled = match this.beside.as_mut().and_then(|b| b.first.as_mut()) {
                None => call.in_attempt(|| attempt.poll(cx)),
                Some(running) => poll_one(running, attempt, call, cx),
            };
            if let Poll::Ready(out) = polled {
                this.first_attempt.set(None);
                let (number, hold) = match this.beside.as_mut().and_then(|b| b.first.take()) {
                    None => (call.attempt(), call.protection.take_hold()),
                    Some(running) => {
                        let Running { number, hold, ctx } = running;
                        call.context().adopt_key(&ctx);
                        (number, hold)
                    }
                };
                return Some(Event::Finished { number, out, hold });
            }
        }
        let others = match this.beside.as_mut() {
            Some(beside) => &mut beside.others,
            None => return None,
        };
        for i in 0..others.len() {
            let Boxed { running, attempt } = &mut others[i];
            if let Poll::Ready(out) = poll_one(running, attempt.as_mut(), call, cx) {
                let Running { number, hold, ctx } = others.remove(i).running;
                call.context().adopt_key(&ctx);
                return Some(Event::Finished { number, out, hold });
            }
        }
        None
    }
}

/// A hedged call returns `out` while `running` of its attempts have not answered: they are
/// dropped (cancelled) with it, which `hook` is told ([`Hook::on_cancelled`](super::Hook::on_cancelled)).
/// What [`retry_hedged!`](crate::retry_hedged) calls when it returns; nothing for a hook that
/// wants no records (the check folds away), one test for one that does.
#[inline(always)]
pub fn cancelled<O: Outcome, H: super::Hook<O::Error>>(out: &O, hook: &mut H, running: u32) {
    let _ = out;
    if H::ACTIVE && running > 0 {
        report_cancelled::<O::Error, H>(hook, running);
    }
}

#[cold]
#[inline(never)]
fn report_cancelled<E, H: super::Hook<E>>(hook: &mut H, running: u32) {
    hook.on_cancelled(running);
}

/// Poll one attempt with its own context installed and a panic recorded against its own hold.
#[inline]
fn poll_one<'p, F: Future, S, P: CallPolicy>(
    running: &mut Running<S::Hold>,
    attempt: Pin<&mut F>,
    call: &mut Call<'p, S, P>,
    cx: &mut Context<'_>,
) -> Poll<F::Output>
where
    S: Protection<'p>,
{
    let _entered = running.ctx.enter();
    let mut own = OwnHold {
        protection: &mut call.protection,
        hold: &mut running.hold,
    };
    let guard = PanicGuard(&mut own);
    let polled = attempt.poll(cx);
    std::mem::forget(guard);
    polled
}

impl<F, D, T> std::fmt::Debug for Hedging<F, D, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let first = self.beside.as_ref().and_then(|b| b.first.as_ref());
        let in_place = match (&self.first_attempt, first) {
            (None, _) => None,
            (Some(_), None) => Some("alone, on the call's context"),
            (Some(_), Some(_)) => Some("with its own context"),
        };
        let others: Vec<u32> = (self.beside.iter())
            .flat_map(|b| b.others.iter().map(|b| b.running.number))
            .collect();
        let timer = match (&self.purpose, &self.timer) {
            (Timer::Off, _) => "off",
            (Timer::Hedge, None) => "hedge, not made yet",
            (Timer::Hedge, Some(_)) => "hedge",
            (Timer::Admitted(..), _) => "admitted",
        };
        f.debug_struct("Hedging")
            .field("in_place", &in_place)
            .field("others", &others)
            .field("timer", &timer)
            .finish()
    }
}

/// A hedged attempt as its panic guard sees it: a panic is recorded against the attempt's own
/// hold (its breaker permit), with the budget and the adaptive window, as a sequential
/// attempt's is.
struct OwnHold<'g, S: Holding> {
    protection: &'g mut S,
    hold: &'g mut S::Hold,
}

impl<'p, S: Protection<'p>> PanicSink for OwnHold<'_, S> {
    const GUARDED: bool = S::GUARDED;
    fn panicked(&mut self) {
        let hold = std::mem::replace(self.hold, self.protection.take_hold());
        self.protection.put_hold(hold);
        self.protection.panicked();
    }
}
