//! Who holds a lock, precisely enough to tell a live holder from a gone
//! one: `user@host` and the pid say which process, but a pid means
//! something only in its PID namespace and only until it is reused, and a
//! host name is shared by containers, sandboxes named `localhost` and
//! cloned machines. So a lock body also records the boot it was taken in
//! (`/proc/sys/kernel/random/boot_id`), the PID namespace
//! (`/proc/self/ns/pid`) and the process's start time
//! (`/proc/self/stat`). A holder is judged gone only when all of them say
//! it is this machine, this boot and this namespace, and its pid is free
//! or now names a process started at another time. Anything less is
//! waited for until the lock's TTL runs out.

use serde::{Deserialize, Serialize};

/// Where the holding process runs, as far as this machine can check.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Whereabouts {
    /// The kernel's id of this boot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
    /// The inode of the holder's PID namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_ns: Option<u64>,
    /// When the holder started, in clock ticks since boot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<u64>,
}

impl Whereabouts {
    /// This process's (read from /proc once: none of it changes while
    /// the process runs, and lock waits ask every poll).
    pub(crate) fn here() -> Whereabouts {
        static HERE: std::sync::OnceLock<Whereabouts> = std::sync::OnceLock::new();
        HERE.get_or_init(|| Whereabouts {
            boot_id: boot_id(),
            pid_ns: crate::fsutil::pid_namespace(),
            started: start_ticks("self"),
        })
        .clone()
    }
}

/// Whether the process `pid` that recorded `there` is surely gone, seen
/// from this process. `None` when `there` records nothing to go on (a lock
/// body of an older swamp): the caller falls back on the pid alone.
pub(crate) fn surely_gone(pid: u32, there: &Whereabouts) -> Option<bool> {
    let (Some(boot), Some(ns), Some(started)) = (&there.boot_id, there.pid_ns, there.started)
    else {
        return None;
    };
    let here = Whereabouts::here();
    // Another boot (or a cloned machine), another PID namespace: its pid
    // cannot be looked up from here.
    if here.boot_id.as_ref() != Some(boot) || here.pid_ns != Some(ns) {
        return Some(false);
    }
    let Ok(raw) = libc::pid_t::try_from(pid) else {
        return Some(false);
    };
    if crate::fsutil::process_gone(raw) {
        return Some(true);
    }
    // The pid runs: the holder, or a process that reused its pid.
    Some(match start_ticks(&pid.to_string()) {
        Some(now) => now != started,
        // It exists but cannot be read (another user's, say): alive.
        None => false,
    })
}

fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let id = id.trim();
    (!id.is_empty()).then(|| id.to_string())
}

/// Field 22 of `/proc/<pid>/stat`, counted after the command name (which
/// may hold spaces and parentheses).
fn start_ticks(pid: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    // After `)`: state (field 3) … starttime (field 22).
    after.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_free_pid_or_another_namespace_is_told_apart() {
        let here = Whereabouts::here();
        if here.boot_id.is_none() || here.pid_ns.is_none() || here.started.is_none() {
            // No /proc (not Linux): nothing recorded, so the pid decides.
            assert_eq!(surely_gone(std::process::id(), &here), None);
            return;
        }
        assert_eq!(surely_gone(std::process::id(), &here), Some(false));
        // Our pid, started at another time: a reused pid.
        let reused = Whereabouts {
            started: here.started.map(|s| s + 1),
            ..here.clone()
        };
        assert_eq!(surely_gone(std::process::id(), &reused), Some(true));
        // Another PID namespace or another boot: cannot be told.
        let elsewhere = Whereabouts {
            pid_ns: here.pid_ns.map(|n| n + 1),
            ..here.clone()
        };
        assert_eq!(surely_gone(i32::MAX as u32, &elsewhere), Some(false));
        let rebooted = Whereabouts {
            boot_id: Some("another-boot".into()),
            ..here.clone()
        };
        assert_eq!(surely_gone(i32::MAX as u32, &rebooted), Some(false));
        // Here, with its pid free: gone.
        assert_eq!(surely_gone(i32::MAX as u32, &here), Some(true));
        assert_eq!(surely_gone(1, &Whereabouts::default()), None);
    }

    #[test]
    fn a_command_name_with_spaces_and_parentheses_does_not_shift_the_fields() {
        let stat = "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 987654 1000 200";
        let after = &stat[stat.rfind(')').unwrap() + 1..];
        assert_eq!(after.split_whitespace().nth(19), Some("987654"));
    }
}
