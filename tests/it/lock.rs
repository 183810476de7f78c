//! The distributed lock end to end, on a directory object store, SeaweedFS
//! (S3) and fake-gcs-server (GCS): real binaries racing for one
//! namespace's lock object. Holders are held in place with the test-only
//! failpoint `lock-acquired` (`FAILPOINTS=lock-acquired=sleep(MS)`).

use std::collections::BTreeMap;
use std::process::Child;
use std::time::{Duration, Instant, SystemTime};

use crate::support::bucket::{Backend, Bucket, Repo, Run, finish};
use serde_json::Value;

const LOCK_KEY: &str = "swamp/homelab/.swamp/lock.json";

/// `[lock] ttl_secs` for these tests: short, so takeovers happen quickly.
fn repo_with_ttl(bucket: &Bucket, ttl: u64) -> Repo {
    let repo = Repo::init(bucket, Some("homelab"));
    repo.append_config(&format!("\n[lock]\nttl_secs = {ttl}\n"));
    repo
}

fn status(repo: &Repo) -> Value {
    let run = repo.run(&["--json", "datastore", "lock", "status"]);
    run.expect(0);
    run.json()["locks"][0].clone()
}

/// Waits until `pred` holds for the lock status, or fails after `secs`.
#[track_caller]
fn wait_for(repo: &Repo, secs: u64, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let s = status(repo);
        if pred(&s) {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {s}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn held_by(s: &Value, pid: u32) -> bool {
    s["state"] == "held" && s["pid"] == pid
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on our own child's pid.
    let r = unsafe { libc::kill(child.id() as i32, sig) };
    assert_eq!(r, 0, "kill({}, {sig})", child.id());
}

fn parse_time(s: &Value) -> SystemTime {
    humantime::parse_rfc3339_weak(s.as_str().unwrap()).unwrap()
}

/// The data files of the namespace in the bucket: key → content.
fn remote_data(bucket: &Bucket) -> BTreeMap<String, Vec<u8>> {
    bucket
        .contents()
        .into_iter()
        .filter(|(k, _)| k.starts_with("swamp/homelab/data/"))
        .collect()
}

fn cache_data(repo: &Repo) -> BTreeMap<String, Vec<u8>> {
    crate::support::tree(&repo.cache().join("homelab/data"))
        .into_iter()
        .filter(|(k, _)| !k.starts_with("_catalog"))
        .map(|(k, v)| (format!("swamp/homelab/data/{k}"), v))
        .collect()
}

/// Two machines sync the same namespace at the same moment: one holds the
/// lock, the other waits for it (naming the holder), then plans against
/// what the first pushed. Nothing is lost; the end state is what the two
/// syncs give run one after the other.
fn two_syncs_at_once_one_waits_for_the_other_and_nothing_is_lost(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = repo_with_ttl(&bucket, 10);
    let b = a.clone_elsewhere();
    a.put("alpha/state", "alpha: 1\n");
    a.put("alpha/state", "alpha: 2\n");
    b.put("beta/state", "beta: 1\n");
    let expected: BTreeMap<String, Vec<u8>> =
        cache_data(&a).into_iter().chain(cache_data(&b)).collect();
    assert_eq!(expected.len(), 3);

    // The first holds the lock a while once it has it; the second starts
    // only then, so the two overlap however slow the machine is to start
    // them (a fixed hold for both once raced on which started first).
    let pa = a.spawn(
        &["datastore", "sync", "-y"],
        &[("FAILPOINTS", "lock-acquired=sleep(6000)")],
    );
    let pid_a = pa.id();
    wait_for(&a, 30, "the first sync to take the lock", |s| {
        held_by(s, pid_a)
    });
    let pb = b.spawn(&["datastore", "sync", "-y"], &[]);
    let pid_b = pb.id();
    let (ra, rb) = (finish(pa), finish(pb));
    ra.expect(0);
    rb.expect(0);
    let waited = |run: &Run, other: u32| {
        run.stderr.contains("Waiting for the lock") && run.stderr.contains(&format!("pid {other}"))
    };
    assert!(
        waited(&rb, pid_a) && !waited(&ra, pid_b),
        "the second waited, naming the first\n--- a\n{}\n--- b\n{}",
        ra.stderr,
        rb.stderr
    );

    // The second to run pulled the first's files and pushed its own.
    assert_eq!(remote_data(&bucket), expected, "no lost update");
    let (first, second) = (&a, &b);
    assert_eq!(cache_data(second), expected);
    // One more sync of the first: what a serial run ends with everywhere.
    first.run(&["datastore", "sync", "-y"]).expect(0);
    assert_eq!(cache_data(first), expected);
    assert_eq!(cache_data(second), expected);
    assert!(bucket.get(LOCK_KEY).is_none(), "both released the lock");
}

/// A holder killed with SIGKILL never releases its lock. Another command
/// is refused (exit 75, naming the holder and the commands to inspect or
/// break it) until the TTL runs out, and takes it over after it, not before.
/// The taker's clock is moved (`SWAMP_CLOCK_SKEW`, read by a test build)
/// rather than the test sleeping through the TTL, so a loaded machine
/// cannot let the lock expire before the refusals are checked.
fn a_holder_killed_with_sigkill_is_taken_over_after_the_ttl_not_before(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = repo_with_ttl(&bucket, 120);
    a.put("alpha/state", "alpha: 1\n");
    let mut holder = a.spawn(
        &["datastore", "sync", "-y"],
        &[("FAILPOINTS", "lock-acquired=sleep(60000)")],
    );
    let pid = holder.id();
    wait_for(&a, 30, "the holder to take the lock", |s| held_by(s, pid));
    holder.kill().unwrap(); // SIGKILL
    holder.wait().unwrap();
    let s = status(&a);
    assert!(held_by(&s, pid), "a killed holder's lock stays: {s}");
    let expires = parse_time(&s["expires_at"]);

    let refused = a.run(&["--lock-timeout", "0", "datastore", "sync", "-y"]);
    refused.expect(75);
    for needle in [
        format!("pid {pid}"),
        "swamp datastore lock status".to_string(),
        "swamp datastore lock release --force".to_string(),
    ] {
        assert!(
            refused.stderr.contains(&needle),
            "{needle}: {}",
            refused.stderr
        );
    }
    let json = a.run(&["--json", "--lock-timeout", "0", "datastore", "sync", "-y"]);
    json.expect(75);
    assert_eq!(json.json()["error"]["kind"], "lock-held");

    // By a clock a little short of the expiry: still refused. By one past
    // it: taken over at once, without waiting.
    let to_expiry = expires
        .duration_since(SystemTime::now())
        .expect("the lock expires in the future")
        .as_secs() as i64;
    let skewed = |secs: i64| {
        let skew = secs.to_string();
        a.run_with(
            &["--lock-timeout", "0", "datastore", "sync", "-y"],
            &[("SWAMP_CLOCK_SKEW", skew.as_str())],
        )
    };
    skewed(to_expiry - 30).expect(75);
    let took = skewed(to_expiry + 2);
    took.expect(0);
    assert!(
        took.stderr.contains("Took over the lock") && took.stderr.contains(&format!("pid {pid}")),
        "{}",
        took.stderr
    );
    assert_eq!(status(&a)["state"], "free");
    assert_eq!(remote_data(&bucket), cache_data(&a));
}

/// A holder stalled past its TTL (SIGSTOP) while a successor takes the
/// lock over: once resumed (SIGCONT) it can neither renew nor delete the
/// successor's lock, and it stops with an error instead of working on.
/// The stall's length is the clock's, not the test's: while the holder is
/// stopped its clock is moved past its lock's expiry (the file
/// `SWAMP_CLOCK_FILE` names, which a test build reads), and the successor
/// runs with a clock as far ahead; no TTL is waited out.
fn a_stalled_holder_cannot_renew_or_delete_its_successors_lock(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = repo_with_ttl(&bucket, 60);
    let b = a.clone_elsewhere();
    let clock = tempfile::tempdir().unwrap();
    let a_clock = clock.path().join("a-skew");
    let a_clock_env = a_clock.to_str().unwrap().to_string();
    a.put("alpha/state", "alpha: 1\n");
    let stalled = a.spawn(
        &["datastore", "sync", "-y"],
        &[
            ("FAILPOINTS", "lock-acquired=sleep(3000)"),
            ("SWAMP_CLOCK_FILE", a_clock_env.as_str()),
        ],
    );
    let pid_a = stalled.id();
    wait_for(&a, 30, "the first holder", |s| held_by(s, pid_a));
    signal(&stalled, libc::SIGSTOP);
    // Stalled for two minutes, by its own clock and by the successor's.
    std::fs::write(&a_clock, "120").unwrap();

    // The successor has something to push (a run with nothing to write
    // takes no lock object in the bucket).
    b.put("beta/state", "beta: 1\n");
    // It holds the lock long enough for the stalled holder to resume,
    // fail and be checked, even on a loaded machine (4 s was not).
    let successor = b.spawn(
        &["datastore", "sync", "-y"],
        &[
            ("FAILPOINTS", "lock-acquired=sleep(12000)"),
            ("SWAMP_CLOCK_SKEW", "120"),
        ],
    );
    let pid_b = successor.id();
    let taken = wait_for(&a, 30, "the successor's takeover", |s| held_by(s, pid_b));
    signal(&stalled, libc::SIGCONT);
    let ra = finish(stalled);
    ra.expect(1);
    assert!(ra.stderr.contains("lost the lock"), "{}", ra.stderr);
    // The successor's lock is untouched: same id, still held by it.
    let now = status(&a);
    assert_eq!(now["id"], taken["id"], "{now}");
    assert!(held_by(&now, pid_b), "{now}");

    let rb: Run = finish(successor);
    rb.expect(0);
    assert!(rb.stderr.contains(&format!("pid {pid_a}")), "{}", rb.stderr);
    assert_eq!(status(&a)["state"], "free");
    // The next sync finishes what the stalled one did not.
    a.run(&["datastore", "sync", "-y"]).expect(0);
    assert_eq!(remote_data(&bucket), cache_data(&a));
}

/// `lock status` and `lock release` from only the datastore URL: a stale
/// lock is released without --force, a live one only with it, an
/// unreadable one is "held, owner unknown" and also needs --force.
fn lock_status_and_release_work_without_a_repository(backend: Backend) {
    let bucket = Bucket::new(backend);
    let spec = bucket.spec();
    let repo = Repo::init(&bucket, Some("homelab"));
    let nowhere = Repo::empty(bucket.env()); // no .swamp.toml anywhere
    let at = ["--datastore", spec.as_str(), "--namespace", "homelab"];
    let cmd = |verb: &[&str], extra: &[&str]| -> Run {
        let mut args = vec!["datastore", "lock"];
        args.extend_from_slice(verb);
        args.extend_from_slice(&at);
        args.extend_from_slice(extra);
        nowhere.run(&args)
    };
    let run = cmd(&["status"], &["--json"]);
    run.expect(0);
    assert_eq!(run.json()["locks"][0]["state"], "free", "{}", run.stdout);

    let body = |expires: &str| {
        format!(
            r#"{{"id":"x-1","operation":"datastore sync","holder":"someone@elsewhere","pid":4242,"tool_version":"0.1.0","acquired_at":"2026-01-01T00:00:00Z","expires_at":"{expires}","ttl_secs":60}}"#
        )
    };
    bucket.put(LOCK_KEY, body("2026-01-01T00:01:00Z").as_bytes());
    let run = cmd(&["status"], &[]);
    run.expect(0);
    assert!(run.stdout.contains("stale"), "{}", run.stdout);
    assert!(
        run.stdout.contains("someone@elsewhere (pid 4242)"),
        "{}",
        run.stdout
    );
    cmd(&["release"], &[]).expect(0);
    assert!(bucket.get(LOCK_KEY).is_none());

    bucket.put(LOCK_KEY, body("2999-01-01T00:00:00Z").as_bytes());
    let refused = cmd(&["release"], &[]);
    refused.expect(75);
    assert!(refused.stderr.contains("--force"), "{}", refused.stderr);
    assert!(bucket.get(LOCK_KEY).is_some(), "a live lock stays");
    // A command that needs it gives up naming the holder.
    let blocked = repo.run(&["--lock-timeout", "1s", "datastore", "sync", "-y"]);
    blocked.expect(75);
    assert!(
        blocked.stderr.contains("someone@elsewhere (pid 4242"),
        "{}",
        blocked.stderr
    );
    cmd(&["release"], &["--force"]).expect(0);
    assert!(bucket.get(LOCK_KEY).is_none());

    bucket.put(LOCK_KEY, b"{ half a lock");
    let run = cmd(&["status"], &["--json"]);
    run.expect(0);
    assert_eq!(run.json()["locks"][0]["state"], "unparseable");
    let doctor = repo.run(&["--json", "doctor", "datastores"]);
    doctor.expect(1);
    let doc = doctor.json();
    let lock = crate::support::doctor_check(&doc, "lock").clone();
    assert_eq!(lock["status"], "fail", "{doc}");
    assert!(
        lock["message"].as_str().unwrap().contains("unknown owner"),
        "{lock}"
    );
    cmd(&["release"], &[]).expect(75);
    cmd(&["release"], &["--force"]).expect(0);
    assert!(bucket.get(LOCK_KEY).is_none());
}

/// Doctor reports a stale lock and `--repair -y` breaks it (a delete
/// conditional on the version it saw), then holds the lock itself while
/// repairing and releases it.
fn doctor_reports_a_stale_lock_and_repair_breaks_it(backend: Backend) {
    let bucket = Bucket::new(backend);
    let repo = Repo::init(&bucket, Some("homelab"));
    repo.put("alpha/state", "alpha: 1\n");
    repo.run(&["datastore", "sync", "-y"]).expect(0);
    bucket.put(
        LOCK_KEY,
        br#"{"id":"x-2","operation":"apply","holder":"gone@host","pid":7,"tool_version":"0.1.0","acquired_at":"2026-01-01T00:00:00Z","expires_at":"2026-01-01T00:01:00Z","ttl_secs":60}"#,
    );
    let run = repo.run(&["--json", "doctor", "datastores"]);
    run.expect(1);
    let doc = run.json();
    let failed: Vec<String> = crate::support::doctor_statuses(&doc)
        .into_iter()
        .filter(|(_, status)| status == "fail")
        .map(|(name, _)| name)
        .collect();
    assert_eq!(failed, ["lock"], "{doc}");
    repo.run(&["doctor", "datastores", "--repair", "-y"])
        .expect(0);
    assert!(bucket.get(LOCK_KEY).is_none());
    repo.run(&["doctor", "datastores"]).expect(0);
}

/// Ctrl-C (SIGINT) while holding the lock releases it on the way out, so
/// nobody waits for the TTL.
fn ctrl_c_releases_the_lock(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = repo_with_ttl(&bucket, 60);
    a.put("alpha/state", "alpha: 1\n");
    let holder = a.spawn(
        &["datastore", "sync", "-y"],
        &[("FAILPOINTS", "lock-acquired=sleep(60000)")],
    );
    let pid = holder.id();
    wait_for(&a, 30, "the holder to take the lock", |s| held_by(s, pid));
    signal(&holder, libc::SIGINT);
    let run = finish(holder);
    run.expect(130);
    assert!(
        run.stderr.contains("released the datastore lock"),
        "{}",
        run.stderr
    );
    assert_eq!(status(&a)["state"], "free");
    a.run(&["--lock-timeout", "0", "datastore", "sync", "-y"])
        .expect(0);
}

/// Two runs in one clone do not interleave: a pull, which takes no lock
/// object in the bucket, waits on the clone's own lock while a push from
/// the same clone holds it, then finds nothing left to do. A holder of
/// the clone's lock that was killed is no reason to wait.
fn a_pull_waits_for_a_push_from_the_same_clone(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = repo_with_ttl(&bucket, 60);
    a.put("alpha/state", "alpha: 1\n");
    let pusher = a.spawn(
        &["datastore", "sync", "--push", "-y"],
        &[("FAILPOINTS", "lock-acquired=sleep(3000)")],
    );
    let pid = pusher.id();
    wait_for(&a, 30, "the push to take the lock", |s| held_by(s, pid));
    let started = Instant::now();
    let pull = a.run(&["datastore", "sync", "--pull", "-y"]);
    pull.expect(0);
    assert!(
        pull.stderr.contains("Waiting for the lock")
            && pull
                .stderr
                .contains(&format!("repos/{}/.swamp/lock.json", a.repo_id())),
        "waits on the clone's own lock (its cache's), naming it: {}",
        pull.stderr
    );
    let push = finish(pusher);
    push.expect(0);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "the pull waited for the push"
    );

    // A holder of the clone's lock killed mid-run: the next run takes it
    // over at once, with no TTL (60 s here) to wait out.
    a.put("alpha/state", "alpha: 2\n");
    let mut killed = a.spawn(
        &["datastore", "sync", "--push", "-y"],
        &[("FAILPOINTS", "lock-acquired=sleep(60000)")],
    );
    let pid = killed.id();
    wait_for(&a, 30, "the second push to take the lock", |s| {
        held_by(s, pid)
    });
    signal(&killed, libc::SIGKILL);
    killed.wait().unwrap();
    let run = a.run(&["--lock-timeout", "5", "datastore", "sync", "--pull", "-y"]);
    run.expect(0);
}

on_every_backend!(
    two_syncs_at_once_one_waits_for_the_other_and_nothing_is_lost,
    a_pull_waits_for_a_push_from_the_same_clone,
    a_holder_killed_with_sigkill_is_taken_over_after_the_ttl_not_before,
    a_stalled_holder_cannot_renew_or_delete_its_successors_lock,
    lock_status_and_release_work_without_a_repository,
    doctor_reports_a_stale_lock_and_repair_breaks_it,
    ctrl_c_releases_the_lock,
);

/// A pid free in this PID namespace (so a holder recorded under it looks
/// gone to a check by pid alone), at least 300.
fn free_pid() -> u32 {
    (300..30_000)
        .find(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists())
        .expect("a free pid")
}

/// A push holding the bucket's lock from another PID namespace (`unshare
/// --pid --fork`, same user and host name, as a container sharing the
/// host's UTS namespace is) under a pid that is free out here: a pull
/// that has something to apply waits for it, as for any live holder, and
/// gives up when its lock timeout runs out (exit 75). Judged by
/// `user@host` and the pid alone it was taken for gone and walked past.
#[test]
fn a_holder_in_another_pid_namespace_is_waited_for_not_judged_gone() {
    if !std::process::Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "true"])
        .status()
        .is_ok_and(|s| s.success())
    {
        eprintln!("skipped: `unshare --pid --fork --mount-proc` is not permitted here");
        return;
    }
    let bucket = Bucket::new(Backend::Fs);
    let a = repo_with_ttl(&bucket, 60);
    a.put("alpha/state", "alpha: 1\n");
    a.run_ok(&["datastore", "sync", "-y"]);
    let b = a.clone_elsewhere();
    a.put("alpha/state", "alpha: 2\n");
    // In its own PID namespace, the push runs as `pid`: the next pid
    // after the one written to ns_last_pid.
    let pid = free_pid();
    let mut holder = std::process::Command::new("unshare");
    crate::support::pinned(&mut holder, &a.home)
        .current_dir(&a.root)
        .envs(a.env.iter().map(|(k, v)| (*k, v.as_str())))
        .env("FAILPOINTS", "lock-acquired=sleep(8000)")
        .args(["--pid", "--fork", "--mount-proc", "sh", "-c"])
        .arg(format!(
            "echo {} > /proc/sys/kernel/ns_last_pid && \"$0\" datastore sync --push -y; exit $?",
            pid - 1
        ))
        .arg(crate::support::swamp_bin())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let holder = holder.spawn().unwrap();
    wait_for(&b, 30, "the namespaced push to take the lock", |s| {
        held_by(s, pid)
    });
    let started = Instant::now();
    let pull = b.run(&["--lock-timeout", "1", "datastore", "sync", "--pull", "-y"]);
    pull.expect(75);
    assert!(
        pull.stderr.contains(&format!("pid {pid}")),
        "{}",
        pull.stderr
    );
    assert!(started.elapsed() >= Duration::from_secs(1), "it waited");
    let pushed = finish(holder);
    pushed.expect(0);
    // Once it is given back, the pull goes through.
    b.run_ok(&["datastore", "sync", "--pull", "-y"]);
    let got = b.run(&["data", "get", "alpha/state"]);
    got.expect(0);
    assert_eq!(got.stdout, "alpha: 2\n");
}

/// Ctrl-C in the middle of a push says how far it got (how many of its
/// files finished), and what finished stays done: the next push sends
/// only the rest.
#[test]
fn an_interrupted_push_says_how_many_files_finished() {
    let bucket = Bucket::new(Backend::Fs);
    let a = repo_with_ttl(&bucket, 60);
    for i in 0..8 {
        a.put(&format!("alpha/f{i}"), &format!("{i}\n"));
    }
    // After three uploads, every later one stalls.
    let pusher = a.spawn(
        &["--transfers", "1", "datastore", "sync", "--push", "-y"],
        &[("FAILPOINTS", "sync-action-done=3*off->sleep(60000)")],
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while bucket
        .contents()
        .keys()
        .filter(|k| k.contains("/data/"))
        .count()
        < 4
    {
        assert!(Instant::now() < deadline, "the push never got going");
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(&pusher, libc::SIGINT);
    let run = finish(pusher);
    run.expect(130);
    let said = run
        .stderr
        .split("Interrupted after ")
        .nth(1)
        .and_then(|rest| rest.split_once(" file(s)"))
        .map(|(n, _)| n.to_string())
        .unwrap_or_else(|| panic!("{}", run.stderr));
    let (done, total) = said.split_once(" of ").unwrap();
    let done: usize = done.parse().unwrap();
    assert_eq!(total, "8", "{}", run.stderr);
    assert!((1..8).contains(&done), "{}", run.stderr);
    // The next push sends no file that finished (one whose upload landed
    // as the interrupt came is recorded, not sent again).
    let rest = a.json(&["--json", "datastore", "sync", "--push", "-y"], 0);
    let uploads = rest["plan"]["summary"]["upload"].as_u64().unwrap() as usize;
    assert!((1..=8 - done).contains(&uploads), "{rest}");
}
