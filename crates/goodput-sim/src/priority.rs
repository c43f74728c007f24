//! Scheduling priority of the engine thread.
//!
//! Step lateness on a busy machine is almost entirely the time the woken
//! engine thread waits for a CPU that the HTTP threads or the benchmark
//! client hold. The engine thread therefore asks for, in order:
//!
//! 1. `SCHED_FIFO` at the lowest real-time priority (1): it then preempts
//!    every normal thread as soon as its timer fires. Needs `CAP_SYS_NICE`
//!    or an `RLIMIT_RTPRIO` of at least 1. Only taken on machines with at
//!    least two CPUs, so that a runaway engine (a time scale so small that
//!    it never sleeps) cannot take the only CPU from the HTTP server.
//! 2. Otherwise a normal thread with nice −10 if allowed (`CAP_SYS_NICE` or
//!    `RLIMIT_NICE`), and a 0.1 ms EEVDF time slice (Linux ≥ 6.12, no
//!    privilege needed), which lets a waking thread preempt the running one
//!    sooner.
//!
//! Every attempt fails silently; [`EnginePriority`] says what was obtained.
//! `auto` (the default) asks for none of this when the process was started
//! at a lowered priority (`nice -n 10`): the user's choice stands, and is
//! said; `realtime` asks whatever the process was started with.

use std::fmt;

/// What the engine thread asks for.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum PriorityRequest {
    /// The best the OS grants (see the module documentation), unless the
    /// process was started at a lowered priority (`nice -n 10 goodput
    /// sim`): a user who lowered it is not overruled.
    #[default]
    Auto,
    /// Leave the thread's scheduling alone.
    Normal,
    /// The best the OS grants, whatever the process was started with.
    Realtime,
}

/// What the engine thread obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EnginePriority {
    /// `SCHED_FIFO` priority, if real-time scheduling was granted.
    pub fifo: Option<u8>,
    /// Nice value of a normal thread.
    pub nice: i8,
    /// EEVDF time slice of a normal thread, microseconds, if one was set.
    pub slice_us: Option<u32>,
    /// Nothing was asked for.
    pub untouched: bool,
    /// Left alone because the process was started at this (lowered) nice
    /// value and `auto` does not overrule it.
    pub started_nice: Option<i32>,
}

impl fmt::Display for EnginePriority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = self.fifo {
            return write!(f, "SCHED_FIFO priority {p}");
        }
        if let Some(n) = self.started_nice {
            return write!(
                f,
                "normal (not changed: started at nice {n}; --engine-priority realtime overrules it)"
            );
        }
        if self.untouched {
            return write!(f, "normal (not changed)");
        }
        write!(f, "normal, nice {}", self.nice)?;
        match self.slice_us {
            Some(s) => write!(f, ", time slice {} ms", f64::from(s) / 1000.0),
            None => write!(f, ", default time slice"),
        }?;
        write!(
            f,
            " (no real-time priority: needs CAP_SYS_NICE or RLIMIT_RTPRIO, and 2 CPUs)"
        )
    }
}

/// Raise the calling thread's priority as far as `req` and the OS allow.
pub fn raise_current_thread(req: PriorityRequest) -> EnginePriority {
    let lowered = req == PriorityRequest::Auto && imp::started_nice() > 0;
    if req == PriorityRequest::Normal || lowered {
        return EnginePriority {
            untouched: true,
            started_nice: lowered.then(imp::started_nice),
            ..EnginePriority::default()
        };
    }
    imp::raise()
}

#[cfg(target_os = "linux")]
mod imp {
    use super::EnginePriority;

    /// The process's nice value (its threads inherit it at creation).
    pub(super) fn started_nice() -> i32 {
        // SAFETY: getpriority reads this process's nice value; errno is
        // cleared first because -1 is also a valid answer.
        unsafe {
            *libc::__errno_location() = 0;
            let n = libc::getpriority(libc::PRIO_PROCESS, 0);
            if n == -1 && *libc::__errno_location() != 0 {
                0
            } else {
                n
            }
        }
    }

    const FIFO_PRIORITY: u8 = 1;
    const NICE: i8 = -10;
    const SLICE_NS: u64 = 100_000;

    fn tid() -> libc::pid_t {
        // SAFETY: gettid takes no arguments and cannot fail.
        unsafe { libc::syscall(libc::SYS_gettid) as libc::pid_t }
    }

    fn attr(nice: i8, slice_ns: u64) -> libc::sched_attr {
        libc::sched_attr {
            size: std::mem::size_of::<libc::sched_attr>() as u32,
            sched_policy: libc::SCHED_OTHER as u32,
            sched_flags: 0,
            sched_nice: i32::from(nice),
            sched_priority: 0,
            sched_runtime: slice_ns,
            sched_deadline: 0,
            sched_period: 0,
        }
    }

    fn set_attr(a: &libc::sched_attr) -> bool {
        // SAFETY: sched_setattr reads a sched_attr we own, sized by `size`.
        unsafe { libc::syscall(libc::SYS_sched_setattr, tid(), a as *const _, 0u32) == 0 }
    }

    /// The slice the kernel reports back (0 if it does not support custom slices).
    fn slice_now() -> u64 {
        let mut a = attr(0, 0);
        let size = a.size;
        // SAFETY: sched_getattr writes at most `size` bytes into `a`.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_sched_getattr,
                tid(),
                &mut a as *mut libc::sched_attr,
                size,
                0u32,
            )
        };
        if rc == 0 {
            a.sched_runtime
        } else {
            0
        }
    }

    pub(super) fn raise() -> EnginePriority {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        if cpus >= 2 {
            // Zeroed, then the priority: musl's sched_param has more
            // fields than glibc's.
            // SAFETY: sched_param is plain integers; all zeroes is valid.
            let mut param: libc::sched_param = unsafe { std::mem::zeroed() };
            param.sched_priority = i32::from(FIFO_PRIORITY);
            // SAFETY: sets the scheduling policy of this thread only.
            if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } == 0 {
                return EnginePriority {
                    fifo: Some(FIFO_PRIORITY),
                    ..EnginePriority::default()
                };
            }
        }
        let mut got = EnginePriority::default();
        if set_attr(&attr(NICE, SLICE_NS)) {
            got.nice = NICE;
        } else if !set_attr(&attr(0, SLICE_NS)) {
            return got;
        }
        // Kernels without EEVDF's custom slices accept the slice, ignore it
        // and report 0.
        if slice_now() == SLICE_NS {
            got.slice_us = Some((SLICE_NS / 1000) as u32);
        }
        got
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::EnginePriority;

    pub(super) fn started_nice() -> i32 {
        0
    }

    pub(super) fn raise() -> EnginePriority {
        EnginePriority::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_leaves_the_thread_alone_and_says_so() {
        let p = std::thread::spawn(|| raise_current_thread(PriorityRequest::Normal))
            .join()
            .unwrap();
        assert!(p.untouched);
        assert_eq!(p.to_string(), "normal (not changed)");
    }

    /// A thread started at a lowered priority (as every thread of `nice -n
    /// 10 goodput sim` is): `auto` leaves it there and says why;
    /// `realtime` asks all the same.
    #[cfg(target_os = "linux")]
    #[test]
    fn auto_does_not_overrule_a_lowered_start() {
        let lowered = |req| {
            std::thread::spawn(move || {
                // On Linux, PRIO_PROCESS with 0 is the calling thread.
                // SAFETY: lowers this test thread's own nice value.
                unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 5) };
                raise_current_thread(req)
            })
            .join()
            .unwrap()
        };
        let p = lowered(PriorityRequest::Auto);
        assert_eq!(p.started_nice, Some(5), "{p}");
        assert!(p.fifo.is_none());
        assert!(p.to_string().contains("started at nice 5"), "{p}");
        let p = lowered(PriorityRequest::Realtime);
        assert!(p.started_nice.is_none(), "{p}");
    }

    #[test]
    fn auto_reports_what_it_got() {
        let p = std::thread::spawn(|| raise_current_thread(PriorityRequest::Auto))
            .join()
            .unwrap();
        let s = p.to_string();
        // (Under `nice cargo test` the thread starts lowered, and says so.)
        assert!(
            s.starts_with("SCHED_FIFO")
                || s.starts_with("normal, nice")
                || s.contains("started at nice"),
            "{s}"
        );
    }
}
