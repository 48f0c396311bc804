//! Faults in simulated kernels (a wild pointer, a stack overflow, an integer division by
//! zero) become errors instead of killing the process. One handler per signal is installed
//! for the process, once; while a simulation library runs a launch on a thread, that thread's
//! hook points at the library's `tessera_sim_fault`, which records the fault and jumps back
//! to the launch's entry point. Faults anywhere else go to the handler that was there before
//! (Rust's stack-overflow report, or the default action).

use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::sync::{Once, OnceLock};

/// A simulation library's fault hook: records the fault and never returns.
pub(crate) type FaultHook = unsafe extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void);

const SIGNALS: [c_int; 4] = [libc::SIGSEGV, libc::SIGBUS, libc::SIGFPE, libc::SIGILL];

static PREVIOUS: OnceLock<Vec<(c_int, libc::sigaction)>> = OnceLock::new();

thread_local! {
    // Const-initialized and without a destructor: safe to read from a signal handler.
    static HOOK: Cell<Option<FaultHook>> = const { Cell::new(None) };
}

/// The name of a signal a kernel can raise, given its `si_code`.
pub(crate) fn signal_name(signal: c_int, code: c_int) -> &'static str {
    match signal {
        // The kernel's code for a general-protection fault, which reports address 0.
        libc::SIGSEGV if code == 0x80 && cfg!(target_arch = "x86_64") => {
            "SIGSEGV, a general-protection fault: on x86-64 a misaligned 16-byte vector access (which a GPU faults on too) or a non-canonical address"
        }
        libc::SIGSEGV => "SIGSEGV, an invalid memory access",
        libc::SIGBUS => "SIGBUS, an invalid memory access",
        libc::SIGFPE => "SIGFPE, an integer division by zero",
        libc::SIGILL => "SIGILL, an illegal instruction",
        _ => "a signal",
    }
}

fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let mut previous = Vec::new();
        for signal in SIGNALS {
            // SAFETY: sigaction with a null new action only reads the current one.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, std::ptr::null(), &mut old) == 0 {
                    previous.push((signal, old));
                }
            }
        }
        let installed: Vec<c_int> = previous.iter().map(|(s, _)| *s).collect();
        // Recorded before the handler goes in, so the handler always finds what to chain to.
        let _ = PREVIOUS.set(previous);
        for signal in installed {
            // SAFETY: a handler that only reads a thread-local and calls either a simulation
            // library's hook or the previous handler; SA_ONSTACK runs it on the alternate
            // stack that the entry point sets up, since a fiber may have overflowed its own.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_fault as *const () as usize;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(signal, &action, std::ptr::null_mut());
            }
        }
    });
}

extern "C" fn on_fault(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    if let Some(hook) = HOOK.try_with(Cell::get).ok().flatten() {
        // SAFETY: set only while the library that owns the hook runs a launch on this thread;
        // the hook jumps back to that launch's entry point and does not return. This frame
        // holds nothing to drop.
        unsafe { hook(signal, info, context) };
    }
    chain(signal, info, context);
}

fn chain(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    let previous = PREVIOUS.get().and_then(|all| all.iter().find(|(s, _)| *s == signal)).map(|(_, action)| *action);
    match previous {
        Some(action) if action.sa_sigaction != libc::SIG_DFL && action.sa_sigaction != libc::SIG_IGN => {
            // SAFETY: the handler that was installed before ours, called as it asked to be.
            unsafe {
                if action.sa_flags & libc::SA_SIGINFO != 0 {
                    let handler: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
                        std::mem::transmute(action.sa_sigaction);
                    handler(signal, info, context);
                } else {
                    let handler: extern "C" fn(c_int) = std::mem::transmute(action.sa_sigaction);
                    handler(signal);
                }
            }
        }
        _ => {
            // Back to the default action: the faulting instruction runs again and ends the
            // process, as it would have without tessera.
            // SAFETY: resetting a signal's disposition is async-signal-safe.
            unsafe { libc::signal(signal, libc::SIG_DFL) };
        }
    }
}

/// Runs `f` (a call into a simulation library's entry point) with that library's fault hook
/// active on this thread.
pub(crate) fn with_hook<R>(hook: FaultHook, f: impl FnOnce() -> R) -> R {
    install();
    struct Restore(Option<FaultHook>);
    impl Drop for Restore {
        fn drop(&mut self) {
            HOOK.with(|h| h.set(self.0));
        }
    }
    let _restore = Restore(HOOK.with(|h| h.replace(Some(hook))));
    f()
}
