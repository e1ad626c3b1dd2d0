//! Finding and killing every process a command started.
//!
//! A command runs as the leader of its own process group, but its
//! descendants can leave the group (`setsid`, `setpgid`) and can outlive the
//! processes that started them (double forks). Three things together make
//! sure none survives:
//!
//! - wield is a child subreaper (`PR_SET_CHILD_SUBREAPER`): an orphaned
//!   descendant is re-parented to wield instead of to PID 1, so it stays
//!   reachable as one of wield's own children;
//! - every command carries a marker in its environment
//!   ([`MARKER_VAR`], unique per command) that its descendants inherit, so a
//!   re-parented orphan can be told apart from wield's other children;
//! - the tree is walked through `/proc/PID/task/TID/children` from the
//!   leader and from the marked orphans, and each process found is signalled
//!   through a pidfd opened before it was identified, so a recycled PID is
//!   never signalled.
//!
//! The one gap: a descendant that clears its environment, leaves the group
//! and is orphaned before any walk sees it cannot be told apart from
//! wield's other children, so it is left alone. The wield binary's commands
//! do not have that gap, sandboxed or not: they run under a keeper, a
//! subreaper of their own that adopts their orphans and outlives them (see
//! `sandbox::keeper`), inside a PID namespace under bubblewrap.
//!
//! Orphans re-parented to wield become wield's zombies when they die; they
//! are reaped here by PID (never with a wildcard `waitpid`, which would steal
//! the exit status of children the async runtime is waiting for).

use std::collections::{HashMap, HashSet, VecDeque};
use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rustix::process::{Pid, PidfdFlags, Signal, WaitOptions};

/// The environment variable that tags a command's whole process tree.
pub const MARKER_VAR: &str = "WIELD_PROCESS_TAG";

static SUBREAPER: OnceLock<bool> = OnceLock::new();
/// The most passes of one walk of a tree (see [`ProcessTree::members`]):
/// a tree forking faster than it can be walked is still walked in bounded
/// time, and the next signal round takes what this one missed.
const MAX_PASSES: usize = 16;
/// How many walks in a row must find nothing alive before a tree counts
/// as killed.
const SETTLED_WALKS: usize = 2;
/// The pause between two rounds of SIGKILL.
pub(crate) const KILL_ROUND: Duration = Duration::from_millis(5);
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Make this process a child subreaper (once). Returns whether it is one.
pub fn ensure_subreaper() -> bool {
    *SUBREAPER.get_or_init(
        || match rustix::process::set_child_subreaper(Some(rustix::process::getpid())) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!("cannot become a child subreaper ({e}); double-forked processes may escape kill-tree");
                false
            }
        },
    )
}

/// A fresh marker value for one command (or any process whose whole tree
/// is to be killed with a [`ProcessTree`]).
pub fn new_marker() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "{}-{}-{nanos:x}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// One process of a tree, held by a pidfd when the kernel has them.
struct Member {
    pid: i32,
    pidfd: Option<OwnedFd>,
    /// Re-parented to wield: wield must reap it.
    ours: bool,
    zombie: bool,
}

impl Member {
    fn signal(&self, sig: Signal) {
        let _ = match &self.pidfd {
            Some(fd) => rustix::process::pidfd_send_signal(fd, sig),
            None => Pid::from_raw(self.pid).map_or(Ok(()), |p| rustix::process::kill_process(p, sig)),
        };
    }
}

/// The process tree of one command: its leader (also its process group)
/// and everything tagged with its marker (started with [`MARKER_VAR`] set
/// to it in its environment, wield a subreaper: [`ensure_subreaper`]).
#[derive(Clone, Debug)]
pub struct ProcessTree {
    leader: i32,
    marker: String,
    /// Members seen so far (pid → start time). A member that left the
    /// group and died is a zombie whose environment can no longer be read:
    /// this is how it is still recognised, and reaped, as one of ours.
    known: Arc<Mutex<HashMap<i32, u64>>>,
    /// The leader is a subreaper of its own tree (the Landlock backend's
    /// keeper): every orphan of the tree is handed to it, so it is SIGKILLed
    /// only once nothing else of the tree is alive, lest an orphan reach
    /// wield unrecognised.
    reaper_leader: bool,
}

impl ProcessTree {
    #[must_use]
    pub fn new(leader: u32, marker: String) -> Self {
        Self {
            leader: i32::try_from(leader).unwrap_or(i32::MAX),
            marker,
            known: Arc::default(),
            reaper_leader: false,
        }
    }

    /// Whether the leader adopts the tree's orphans (see the field).
    #[must_use]
    pub fn leader_reaps(mut self, yes: bool) -> Self {
        self.reaper_leader = yes;
        self
    }

    fn known(&self) -> std::sync::MutexGuard<'_, HashMap<i32, u64>> {
        self.known.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every live or unreaped process of the tree except the leader.
    ///
    /// A process of the tree that dies while the walk runs hands its
    /// children to wield (the subreaper) before it shows as a zombie; a
    /// child moved after wield's children were read but before its dead
    /// parent's were would be seen under neither. So the children of wield
    /// and of the leader are read again after each pass, until a reading
    /// is the same as the one before: a walk that sees no live member
    /// means none is left.
    fn members(&self) -> Vec<Member> {
        let me = rustix::process::getpid().as_raw_nonzero().get();
        let mut queue = VecDeque::new();
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        let mut previous = None;
        for _ in 0..MAX_PASSES {
            let (mut direct, mut mine) = (children_of(self.leader), children_of(me));
            direct.sort_unstable();
            mine.sort_unstable();
            let now = (direct, mine);
            if previous.as_ref() == Some(&now) {
                break;
            }
            let (direct, mine) = &now;
            queue.extend(direct);
            for &child in mine {
                if child == self.leader || seen.contains(&child) {
                    continue;
                }
                let Some(stat) = Stat::read(child) else { continue };
                if stat.state == 'Z' && in_child_namespace(child) {
                    reap(child);
                    continue;
                }
                let seen_before = self.known().get(&child) == Some(&stat.start);
                if seen_before || stat.pgrp == self.leader || has_marker(child, &self.marker) {
                    queue.push_back(child);
                }
            }
            previous = Some(now);
            while let Some(pid) = queue.pop_front() {
                if pid == self.leader || !seen.insert(pid) {
                    continue;
                }
                // Open the pidfd before reading what the process is, so the
                // handle can only refer to the process that was checked (or
                // to a dead one, which makes a later signal a no-op).
                let pidfd = Pid::from_raw(pid).and_then(|p| rustix::process::pidfd_open(p, PidfdFlags::empty()).ok());
                let Some(stat) = Stat::read(pid) else { continue };
                self.known().insert(pid, stat.start);
                queue.extend(children_of(pid));
                out.push(Member {
                    pid,
                    pidfd,
                    ours: stat.ppid == me,
                    zombie: stat.state == 'Z',
                });
            }
        }
        out
    }

    fn group_exists(&self) -> bool {
        Pid::from_raw(self.leader).is_some_and(|p| rustix::process::test_kill_process_group(p).is_ok())
    }

    fn signal_group(&self, sig: Signal) {
        if let Some(p) = Pid::from_raw(self.leader) {
            let _ = rustix::process::kill_process_group(p, sig);
        }
    }

    /// Signal the whole tree (the group and every member) once. The tree
    /// is walked first: a process killed with its group hands its children
    /// to wield, and one that dies as it goes (a sandbox's processes, which
    /// die with it) is a zombie whose marker can no longer be read, so it
    /// is recognised, and reaped, only if a walk saw it alive.
    pub(crate) fn signal(&self, sig: Signal) {
        let members = self.members();
        let spare_leader = self.reaper_leader && sig == Signal::KILL && members.iter().any(|m| !m.zombie);
        if !spare_leader {
            self.signal_group(sig);
        }
        for m in members {
            m.signal(sig);
        }
    }

    /// Whether anything but zombies remains, reaping the zombies that are
    /// wield's own on the way.
    pub(crate) fn alive(&self, leader_reaped: bool) -> bool {
        let mut alive = false;
        for m in self.members() {
            if m.zombie {
                if m.ours && reap(m.pid) {
                    self.known().remove(&m.pid);
                }
            } else {
                alive = true;
            }
        }
        if leader_reaped {
            self.reap_group();
        }
        alive || (leader_reaped && self.group_has_live_member())
    }

    fn group_has_live_member(&self) -> bool {
        // The group can only hold zombies once the members walk found no
        // live process; `kill(-pgid, 0)` counts zombies, so check states.
        if !self.group_exists() {
            return false;
        }
        let me = rustix::process::getpid().as_raw_nonzero().get();
        children_of(me)
            .into_iter()
            .filter_map(Stat::read)
            .any(|s| s.pgrp == self.leader && s.state != 'Z')
    }

    /// Reap zombies of the command's group that were re-parented to wield.
    /// Only called once the leader itself has been reaped, since waiting on
    /// the group could otherwise take the leader's status from its owner.
    fn reap_group(&self) {
        let Some(pgid) = Pid::from_raw(self.leader) else {
            return;
        };
        while let Ok(Some(_)) = rustix::process::waitpgid(pgid, WaitOptions::NOHANG) {}
    }

    /// Kill what is left once the leader has exited on its own and been
    /// reaped: SIGTERM, up to `grace`, then SIGKILL. Returns how many
    /// processes were still running.
    pub(crate) async fn kill_leftovers(&self, grace: Duration) -> usize {
        // A process of a PID namespace below (bubblewrap's init, a moment
        // behind bubblewrap) dies with its namespace: not a leftover of the
        // command's (the keeper in there reports those).
        let live = self
            .members()
            .iter()
            .filter(|m| !m.zombie && !in_child_namespace(m.pid))
            .count();
        if live == 0 && !self.group_has_live_member() {
            self.reap_group();
            return 0;
        }
        self.signal(Signal::TERM);
        self.signal(Signal::CONT);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline && self.alive(true) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Whatever is left (or was handed to wield while a walk ran).
        self.kill_all(true).await;
        live
    }

    /// SIGKILL until nothing of the tree remains (a process forking while it
    /// is being killed needs more than one round). Done when two walks in a
    /// row, a round apart, find nothing alive: a process whose parent died
    /// under a walk, moving it to wield, is caught by the next.
    pub(crate) async fn kill_all(&self, leader_reaped: bool) {
        let mut clean = 0;
        for _ in 0..200 {
            self.signal(Signal::KILL);
            clean = if self.alive(leader_reaped) { 0 } else { clean + 1 };
            if clean == SETTLED_WALKS {
                return;
            }
            tokio::time::sleep(KILL_ROUND).await;
        }
        tracing::warn!("processes of command group {} survived repeated SIGKILL", self.leader);
    }

    /// Reap the members seen alive that are now wield's zombies; returns
    /// how many members seen are still around otherwise (alive, or dead
    /// but not yet handed to wield).
    fn reap_known_zombies(&self) -> usize {
        let me = rustix::process::getpid().as_raw_nonzero().get();
        let known: Vec<(i32, u64)> = self.known().iter().map(|(p, s)| (*p, *s)).collect();
        let mut pending = 0;
        for (pid, start) in known {
            match Stat::read(pid) {
                Some(stat) if stat.start == start => {
                    if stat.ppid == me && stat.state == 'Z' && reap(pid) {
                        self.known().remove(&pid);
                    } else {
                        pending += 1;
                    }
                }
                // Gone, or the pid is another process's now.
                _ => {
                    self.known().remove(&pid);
                }
            }
        }
        pending
    }

    /// Once a killed tree's leader has been reaped, a member that outlived
    /// it for a moment (bubblewrap's PID namespace init, which dies after
    /// bubblewrap) is handed to wield after the last walk and would stay
    /// wield's zombie: a thread reaps such members as they come, until the
    /// leader is gone and no member seen is left, for up to a minute; then
    /// the process's one watcher of orphans adopted from a PID namespace
    /// takes over, for as long as one lives and half a minute after.
    pub fn reap_stragglers_later(&self) {
        self.reap_later(false);
    }

    /// [`reap_stragglers_later`](Self::reap_stragglers_later) for a run
    /// whose future was dropped: its leader was never waited for (the
    /// runtime's handle went with the future), so it is reaped here too
    /// once it is wield's zombie.
    pub fn reap_abandoned_later(&self) {
        self.reap_later(true);
    }

    fn reap_later(&self, leader_too: bool) {
        let leader = self.leader;
        let settled = move |tree: &Self| {
            reap_adopted_namespace_zombies();
            if leader_too && Stat::read(leader).is_some_and(|s| s.state == 'Z') {
                reap(leader);
            }
            tree.reap_known_zombies() == 0 && Stat::read(tree.leader).is_none()
        };
        // A tree that looks settled now may still hand wield its namespace
        // init later (it dies once every process of its namespace is
        // gone, seconds after bubblewrap on a loaded machine): the watcher
        // looks for it either way.
        if settled(self) {
            watch_adopted();
            return;
        }
        let tree = self.clone();
        let spawned = std::thread::Builder::new().name("wield-reap".into()).spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(60);
            let mut pause = Duration::from_millis(10);
            while Instant::now() < deadline && !settled(&tree) {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(500));
            }
            watch_adopted();
        });
        if spawned.is_err() {
            watch_adopted();
        }
    }

    /// Synchronous last resort (a dropped run): SIGKILL everything and reap
    /// what can be reaped, as [`kill_all`](Self::kill_all) does.
    pub fn kill_now(&self) {
        // SIGKILL takes effect asynchronously (later on a loaded machine):
        // poll, for up to two seconds, so the killed orphans can be reaped
        // rather than left as zombies.
        let mut clean = 0;
        for _ in 0..400 {
            self.signal(Signal::KILL);
            clean = if self.alive(false) { 0 } else { clean + 1 };
            if clean == SETTLED_WALKS {
                return;
            }
            std::thread::sleep(KILL_ROUND);
        }
    }
}

/// For a process that is the subreaper of its own tree (the sandbox
/// keeper), once its command has exited: SIGTERM every descendant, wait up
/// to `grace` for them to go, then SIGKILL until none is left, reaping them
/// all. Returns how many were still running.
pub(crate) fn end_descendants(grace: Duration) -> usize {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let tree = ProcessTree::new(me.unsigned_abs(), String::new());
    let live = tree.members().iter().filter(|m| !m.zombie).count();
    if live > 0 {
        for sig in [Signal::TERM, Signal::CONT] {
            for m in tree.members() {
                m.signal(sig);
            }
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline && tree.alive(false) {
            std::thread::sleep(Duration::from_millis(5));
        }
        let mut clean = 0;
        // A tree forking as fast as it can is still outrun: a killed
        // process forks no more, and its orphans come here.
        for _ in 0..4000 {
            for m in tree.members() {
                m.signal(Signal::KILL);
            }
            clean = if tree.alive(false) { 0 } else { clean + 1 };
            if clean == SETTLED_WALKS {
                break;
            }
            std::thread::sleep(KILL_ROUND);
        }
    }
    while let Ok(Some(_)) = rustix::process::wait(WaitOptions::NOHANG) {}
    live
}

fn reap(pid: i32) -> bool {
    Pid::from_raw(pid).is_some_and(|p| matches!(rustix::process::waitpid(Some(p), WaitOptions::NOHANG), Ok(Some(_))))
}

/// The direct children of every thread of `pid` (orphans re-parented to a
/// multithreaded subreaper can land on any of its threads).
fn children_of(pid: i32) -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for task in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(task.path().join("children")) else {
            continue;
        };
        out.extend(text.split_ascii_whitespace().filter_map(|s| s.parse::<i32>().ok()));
    }
    out
}

/// How long after the last tree settled the watcher still looks for
/// zombies adopted from a PID namespace.
const ADOPTED_WATCH: Duration = Duration::from_secs(30);
/// The pause between two looks of the watcher.
const ADOPTED_PAUSE: Duration = Duration::from_millis(100);
/// Until when the watcher looks; `None` while no watcher runs.
static WATCH_UNTIL: Mutex<Option<Instant>> = Mutex::new(None);

/// Look for zombies adopted from a PID namespace for [`ADOPTED_WATCH`]
/// from now, and for as long as an adopted orphan of one is alive (a
/// namespace init killed while it faults in a binary from a cold disk dies
/// only once the read is done): one thread for the whole process, whose
/// watch each settled tree extends, so no tree's init is missed because
/// its own look had ended.
fn watch_adopted() {
    watch_adopted_for(ADOPTED_WATCH);
}

fn watch_adopted_for(tail: Duration) {
    let mut until = WATCH_UNTIL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let running = until.is_some();
    let end = Instant::now() + tail;
    *until = Some(until.map_or(end, |u| u.max(end)));
    if running {
        return;
    }
    drop(until);
    let spawned = std::thread::Builder::new().name("wield-adopted".into()).spawn(|| {
        loop {
            std::thread::sleep(ADOPTED_PAUSE);
            let pending = reap_adopted_namespace_zombies();
            let mut until = WATCH_UNTIL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            // An adopted orphan still alive is a zombie to come.
            if !pending && until.is_none_or(|u| Instant::now() >= u) {
                *until = None;
                return;
            }
        }
    });
    if spawned.is_err() {
        *WATCH_UNTIL.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }
}

/// Reap wield's zombie children that lived in a PID namespace below
/// wield's: orphans adopted from a sandbox (the init of a bubblewrap
/// sandbox that outlived bubblewrap), never processes wield started itself,
/// so reaping them takes no one's exit status. Returns whether such an
/// orphan is still alive: one that will be a zombie to reap.
fn reap_adopted_namespace_zombies() -> bool {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let mut pending = false;
    for child in children_of(me) {
        if !in_child_namespace(child) {
            continue;
        }
        match Stat::read(child) {
            Some(s) if s.state == 'Z' => {
                reap(child);
            }
            Some(_) => pending = true,
            None => {}
        }
    }
    pending
}

/// Whether `pid` lives in a PID namespace below wield's (`NSpid` in its
/// status lists more than one pid).
fn in_child_namespace(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|status| {
        status
            .lines()
            .find_map(|l| l.strip_prefix("NSpid:"))
            .is_some_and(|pids| pids.split_whitespace().count() > 1)
    })
}

fn has_marker(pid: i32, marker: &str) -> bool {
    let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let wanted = format!("{MARKER_VAR}={marker}");
    environ.split(|&b| b == 0).any(|entry| entry == wanted.as_bytes())
}

/// The fields of `/proc/PID/stat` this module needs.
#[derive(Debug)]
struct Stat {
    state: char,
    ppid: i32,
    pgrp: i32,
    /// Start time in clock ticks since boot: with the pid, an identity
    /// that survives pid reuse.
    start: u64,
}

impl Stat {
    fn read(pid: i32) -> Option<Self> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        Self::parse(&text)
    }

    fn parse(text: &str) -> Option<Self> {
        // The command name is in parentheses and may itself contain spaces
        // or parentheses: the fields start after the last `)`.
        let rest = &text[text.rfind(')')? + 1..];
        let mut fields = rest.split_ascii_whitespace();
        let state = fields.next()?.chars().next()?;
        let ppid = fields.next()?.parse().ok()?;
        let pgrp = fields.next()?.parse().ok()?;
        // Field 22 of the file; 19 after the three just read.
        let start = fields.nth(16)?.parse().ok()?;
        Some(Self {
            state,
            ppid,
            pgrp,
            start,
        })
    }
}

/// Whether `/proc/PID/task/TID/children` exists (CONFIG_PROC_CHILDREN);
/// without it only the process group can be killed.
pub fn proc_children_available() -> bool {
    let me = std::process::id();
    std::path::Path::new(&format!("/proc/{me}/task/{me}/children")).exists()
}

pub(crate) fn io_pid(pid: Option<u32>) -> io::Result<u32> {
    pid.ok_or_else(|| io::Error::other("the process exited before its id could be read"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_parses_names_with_parens() {
        let line = "123 (a) b) (c) S 1 123 123 0 -1 4194560 10 0 0 0 0 0 0 0 20 0 1 0 987654 0";
        let s = Stat::parse(line).unwrap();
        assert_eq!((s.state, s.ppid, s.pgrp, s.start), ('S', 1, 123, 987654));
    }

    /// The namespace init of a killed sandbox can outlive every look a
    /// tree's reaper makes (it dies once a read from a cold disk is done):
    /// it is reaped when it dies, however long the watch was asked for.
    #[test]
    fn an_adopted_namespace_init_is_reaped_when_it_dies_late() {
        assert!(ensure_subreaper());
        // `unshare -f` forks the new namespace's init, which runs `sleep`;
        // killing `unshare` hands that init to this process, alive.
        let mut unshare = std::process::Command::new("unshare")
            .args(["--user", "--map-root-user", "--pid", "--fork", "sleep", "2"])
            .spawn()
            .expect("util-linux's unshare runs");
        let outer = i32::try_from(unshare.id()).unwrap();
        let init = loop {
            if let Some(&child) = children_of(outer).first() {
                break child;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        unshare.kill().unwrap();
        unshare.wait().unwrap();
        let me = rustix::process::getpid().as_raw_nonzero().get();
        let adopted = Instant::now() + Duration::from_secs(5);
        while Stat::read(init).is_some_and(|s| s.ppid != me) && Instant::now() < adopted {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(in_child_namespace(init), "the init lives in a PID namespace below");
        // A watch far shorter than the init's life.
        watch_adopted_for(Duration::from_millis(100));
        let deadline = Instant::now() + Duration::from_secs(10);
        while Stat::read(init).is_some() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let left = Stat::read(init);
        assert!(left.is_none(), "the adopted init was left: {left:?}");
    }

    #[test]
    fn markers_are_unique() {
        assert_ne!(new_marker(), new_marker());
    }
}
