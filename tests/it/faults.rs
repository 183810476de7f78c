//! Faults between swamp and the server (issue 9), on SeaweedFS (S3) and
//! fake-gcs-server (GCS) behind the fault proxy of `crate::support::faults`:
//! every cut-off answer, flipped byte, outage and broken lock ends in a
//! clear error or convergence, never in a corrupt or lost file.

use std::time::{Duration, Instant};

use crate::support::bucket::{Backend, Bucket, Repo, finish};
use crate::support::faults::{Fault, FaultProxy, Rule};
use crate::support::tree as files;

/// Seed `n` of the seeded kill and chaos rounds, shifted by `FAULT_SEED`
/// when set: the same scenarios at other moments, to hunt for windows the
/// fixed seeds miss (`FAULT_SEED=7 bash scripts/test.sh --test it faults::`).
fn seed(n: u64) -> u64 {
    let shift = std::env::var("FAULT_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(0);
    n.wrapping_add(shift.wrapping_mul(1000))
}

/// The request target that marks a listing on `backend`.
fn listing(backend: Backend) -> &'static str {
    match backend {
        Backend::S3 => "list-type=2",
        _ => "/o?",
    }
}

/// The request target that marks an object download on `backend`.
fn download(backend: Backend) -> &'static str {
    match backend {
        Backend::S3 => "x-id=GetObject",
        _ => "alt=media",
    }
}

/// A rule narrowed to uploads on `backend` (GCS names the object in the
/// body of a multipart upload, not in the target).
fn uploads(backend: Backend, rule: Rule) -> Rule {
    match backend {
        Backend::S3 => rule.method("PUT").target("bulk"),
        _ => rule.method("POST").target("uploadType=multipart"),
    }
}

/// Every upload on `backend` (the config tier's included).
fn uploads_of_config(backend: Backend, rule: Rule) -> Rule {
    match backend {
        Backend::S3 => rule.method("PUT"),
        _ => rule.method("POST").target("uploadType=multipart"),
    }
}

fn upload_count(proxy: &FaultProxy, backend: Backend) -> usize {
    match backend {
        Backend::S3 => proxy.count("PUT", "bulk"),
        _ => proxy.count("POST", "uploadType=multipart"),
    }
}

/// How a data key appears in request targets (GCS escapes the slashes).
fn in_target(backend: Backend, key: &str) -> String {
    match backend {
        Backend::S3 => key.to_string(),
        _ => key.replace('/', "%2F"),
    }
}

/// A repo with `m/x` (three versions) and `m/y` pushed straight to the
/// server, and a clone that reaches it through the proxy.
fn pushed_then_cloned_behind(backend: Backend) -> (Bucket, FaultProxy, Repo, Repo) {
    let (bucket, proxy) = Bucket::behind_proxy(backend);
    let a = Repo::init(&bucket, Some("alpha"));
    for body in ["one\n", "two\n", "three\n"] {
        a.put("m/x", body);
    }
    a.put("m/y", "why\n");
    a.run(&["datastore", "sync", "--push", "-y"]).expect(0);
    let b = a.clone_elsewhere();
    (bucket, proxy, a, b)
}

/// No swamp temp file anywhere under `root`.
fn assert_no_temps(root: &std::path::Path) {
    let temps: Vec<_> = files(root)
        .into_keys()
        .filter(|p| p.rsplit('/').next().unwrap().starts_with(".swamp-tmp"))
        .collect();
    assert!(temps.is_empty(), "temp files left: {temps:?}");
}

fn data_files(repo: &Repo) -> Vec<(String, Vec<u8>)> {
    files(&repo.cache().join("alpha/data"))
        .into_iter()
        .collect()
}

fn a_listing_cut_off_mid_way_is_retried(backend: Backend) {
    let (_bucket, proxy, a, b) = pushed_then_cloned_behind(backend);
    proxy.rule(
        Rule::new(Fault::Truncate)
            .method("GET")
            .target(listing(backend))
            .times(1),
    );
    b.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    assert_eq!(proxy.fired(), 1, "the fault was injected once");
    assert_eq!(data_files(&b), data_files(&a));
}

fn a_pull_reads_each_object_with_one_request(backend: Backend) {
    let (_bucket, proxy, a, b) = pushed_then_cloned_behind(backend);
    b.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    assert_eq!(data_files(&b), data_files(&a));
    // The listing told the size, version and sha256: one read per object,
    // no metadata request before it (GCS used to make two).
    for key in [
        "alpha/data/m/x/1/raw",
        "alpha/data/m/x/3/raw",
        "alpha/data/m/y/1/raw",
    ] {
        let key = in_target(backend, key);
        let requests: Vec<String> = proxy
            .seen()
            .into_iter()
            .filter(|s| s.method == "GET" || s.method == "HEAD")
            .filter(|s| s.target.contains(&format!("{key}?")) || s.target.ends_with(&key))
            .map(|s| format!("{} {}", s.method, s.target))
            .collect();
        assert_eq!(requests.len(), 1, "{key}: {requests:#?}");
    }
}

/// Lazy hydration's costs: the first pull lists and downloads no data
/// object; reading a file is then one GET and nothing else (no listing, no
/// metadata request).
fn a_lazy_clone_downloads_nothing_and_reads_a_file_with_one_request(backend: Backend) {
    let (_bucket, proxy, _a, b) = pushed_then_cloned_behind(backend);
    b.append_config("\n[sync]\nhydration = \"lazy\"\n");
    b.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    let data = in_target(backend, "alpha/data/");
    let data_gets = |seen: &[crate::support::faults::Seen]| {
        seen.iter()
            .filter(|s| s.method == "GET" && s.target.contains(download(backend)))
            .filter(|s| s.target.contains(&data))
            .count()
    };
    assert_eq!(data_gets(&proxy.seen()), 0, "{:#?}", proxy.seen());
    assert!(files(&b.cache()).is_empty());

    let before = proxy.seen().len();
    let got = b.run(&["data", "get", "m/x", "--version", "2"]);
    got.expect(0);
    assert_eq!(got.stdout, "two\n");
    let requests: Vec<String> = proxy.seen()[before..]
        .iter()
        .map(|s| format!("{} {}", s.method, s.target))
        .collect();
    assert_eq!(requests.len(), 1, "{requests:#?}");
    assert!(
        requests[0].contains(&in_target(backend, "alpha/data/m/x/2/raw")),
        "{requests:?}"
    );
    // Read again: from the cache, no request at all.
    let before = proxy.seen().len();
    assert_eq!(
        b.run(&["data", "get", "m/x", "--version", "2"]).stdout,
        "two\n"
    );
    assert_eq!(proxy.seen().len(), before);
}

fn a_download_with_a_flipped_byte_is_retried_and_lands_intact(backend: Backend) {
    let (_bucket, proxy, a, b) = pushed_then_cloned_behind(backend);
    let key = in_target(backend, "alpha/data/m/x/2/raw");
    proxy.rule(
        Rule::new(Fault::Corrupt)
            .method("GET")
            .target(download(backend))
            .target(&key)
            .times(1),
    );
    proxy.rule(
        Rule::new(Fault::Truncate)
            .method("GET")
            .target(download(backend))
            .times(1),
    );
    b.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    assert_eq!(proxy.fired(), 2);
    assert_eq!(data_files(&b), data_files(&a));
    assert_no_temps(&b.cache());
}

fn a_download_that_stays_corrupt_is_an_error_naming_the_object_and_writes_nothing(
    backend: Backend,
) {
    let (_bucket, proxy, _a, b) = pushed_then_cloned_behind(backend);
    let key = in_target(backend, "alpha/data/m/y/1/raw");
    proxy.rule(
        Rule::new(Fault::Corrupt)
            .method("GET")
            .target(download(backend))
            .target(&key),
    );
    let run = b.run(&["datastore", "sync", "--pull", "-y"]);
    run.expect(1);
    assert!(
        run.stderr.contains("data/m/y/1/raw") && run.stderr.contains("corrupt"),
        "names the object and what is wrong: {}",
        run.stderr
    );
    assert!(proxy.fired() >= 2, "it was tried again before giving up");
    assert!(
        !b.cache().join("alpha/data/m/y").exists(),
        "nothing of it was written"
    );
    assert_no_temps(&b.cache());
    // The other files landed: one bad object does not hold back the rest.
    assert!(b.cache().join("alpha/data/m/x/3/raw").is_file());
}

/// A solo repository on `bucket` with `n` model definitions
/// (`models/mNNN.yaml` holding `name: mN`), syncing `concurrency` at once.
fn with_models(bucket: &Bucket, n: usize, concurrency: u16) -> Repo {
    let a = Repo::empty(bucket.env());
    a.run(&["init", "--datastore", bucket.spec().as_str()])
        .expect(0);
    a.append_config(&format!("\n[sync]\nconcurrency = {concurrency}\n"));
    for i in 0..n {
        let p = a.root.join(format!("models/m{i:03}.yaml"));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, format!("name: m{i}\n")).unwrap();
    }
    a
}

/// `n` files straight into the cache's data tier of `repo`.
fn bulk(repo: &Repo, n: usize) {
    for i in 0..n {
        repo.write_cache(
            &format!("alpha/data/bulk/f{i:04}/1/raw"),
            &format!("file {i}\n"),
        );
    }
}

/// Starts `args`, waits until `going` says the work is under way, then
/// kills the server (every connection reset). The run must end in seconds
/// with exit 1, naming the endpoint and the command to re-run, after a
/// handful of attempts rather than a round of retries per file; then the
/// server comes back, the lock the run could not release is removed with
/// the warning's own command, and the same command finishes the job.
fn pull_the_plug_mid_run(
    proxy: &FaultProxy,
    repo: &Repo,
    args: &[&str],
    going: &dyn Fn() -> bool,
    max_attempts: usize,
) {
    let child = repo.spawn(args, &[]);
    let start = Instant::now();
    while !going() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{args:?} never got going"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    proxy.set_down(true);
    let down_at = Instant::now();
    let run = finish(child);
    let took = down_at.elapsed();
    eprintln!(
        "{args:?}: ended {took:?} after the server died, {} attempt(s) meanwhile",
        proxy.refused()
    );
    run.expect(1);
    assert!(
        took < Duration::from_secs(30),
        "took {took:?} after the server died"
    );
    let endpoint = proxy.endpoint.trim_start_matches("http://");
    assert!(
        run.stderr.contains(endpoint),
        "names the endpoint: {}",
        run.stderr
    );
    let rerun = format!("run `swamp {}` again", args.join(" "));
    assert!(
        run.stderr.contains(&rerun),
        "names the command to re-run: {}",
        run.stderr
    );
    assert!(
        proxy.refused() < max_attempts,
        "gave up after a handful of attempts, not one round per file: {}",
        proxy.refused()
    );
    proxy.set_down(false);
    proxy.clear_rules();
    if args.contains(&"--pull") {
        // A pull writes nothing to the bucket, so it holds no lock there
        // to leave behind.
        assert!(
            !run.stderr.contains("could not release the lock"),
            "{}",
            run.stderr
        );
    } else {
        assert!(
            run.stderr
                .contains("`swamp datastore lock release` removes it"),
            "{}",
            run.stderr
        );
        repo.run(&["datastore", "lock", "release"]).expect(0);
    }
    repo.run(args).expect(0);
}

fn a_dead_server_ends_a_300_file_push_in_seconds_naming_the_command_to_rerun(backend: Backend) {
    let (bucket, proxy) = Bucket::behind_proxy(backend);
    let a = Repo::init(&bucket, Some("alpha"));
    a.append_config("\n[sync]\nconcurrency = 1\n");
    bulk(&a, 300);
    // Slow enough to pull the plug mid-way.
    proxy.rule(uploads(
        backend,
        Rule::new(Fault::Delay(Duration::from_millis(15))),
    ));
    let going = || upload_count(&proxy, backend) >= 20;
    pull_the_plug_mid_run(
        &proxy,
        &a,
        &["datastore", "sync", "--push", "-y"],
        &going,
        40,
    );
    let pushed = bucket
        .versions()
        .keys()
        .filter(|k| k.contains("/bulk/"))
        .count();
    assert_eq!(pushed, 300);
}

fn a_dead_server_ends_a_300_file_pull_in_seconds_naming_the_command_to_rerun(backend: Backend) {
    let (bucket, proxy) = Bucket::behind_proxy(backend);
    let a = Repo::init(&bucket, Some("alpha"));
    bulk(&a, 300);
    a.run(&["datastore", "sync", "--push", "-y"]).expect(0);
    let b = a.clone_elsewhere();
    b.append_config("\n[sync]\nconcurrency = 4\n");
    proxy.rule(
        Rule::new(Fault::Delay(Duration::from_millis(15)))
            .method("GET")
            .target(download(backend)),
    );
    let going = || proxy.count("GET", download(backend)) >= 20;
    // Four downloads in flight when it dies, each with its own retries
    // until the breaker trips (a GCS download is two requests).
    pull_the_plug_mid_run(
        &proxy,
        &b,
        &["datastore", "sync", "--pull", "-y"],
        &going,
        60,
    );
    assert_eq!(
        bulk_in(&b.cache().join("alpha")),
        bulk_in(&a.cache().join("alpha"))
    );
    assert_no_temps(&b.cache());
}

fn a_dead_server_ends_a_config_migrate_in_seconds_naming_the_command_to_rerun(backend: Backend) {
    let (bucket, proxy) = Bucket::behind_proxy(backend);
    let a = with_models(&bucket, 200, 1);
    proxy.rule(uploads_of_config(
        backend,
        Rule::new(Fault::Delay(Duration::from_millis(15))),
    ));
    let going = || {
        proxy
            .seen()
            .iter()
            .filter(|s| s.method != "GET" && s.method != "HEAD")
            .count()
            >= 20
    };
    pull_the_plug_mid_run(
        &proxy,
        &a,
        &["datastore", "config", "migrate", "-y"],
        &going,
        40,
    );
    let contents = bucket.contents();
    assert!(
        contents.contains_key(SENTINEL),
        "published once the server is back"
    );
    assert_eq!(
        contents
            .keys()
            .filter(|k| k.starts_with("swamp/config/models/"))
            .count(),
        200
    );
}

fn a_lock_broken_mid_push_stops_the_push_and_never_says_converged(backend: Backend) {
    let (bucket, proxy) = Bucket::behind_proxy(backend);
    let a = Repo::init(&bucket, Some("alpha"));
    a.append_config("\n[sync]\nconcurrency = 2\n");
    bulk(&a, 300);
    proxy.rule(uploads(
        backend,
        Rule::new(Fault::Delay(Duration::from_millis(30))),
    ));
    let child = a.spawn(&["datastore", "sync", "--push", "-y"], &[]);
    let start = Instant::now();
    while upload_count(&proxy, backend) < 10 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the push never got going"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    a.run(&["datastore", "lock", "release", "--force"])
        .expect(0);
    let broken_at = Instant::now();
    let run = finish(child);
    run.expect(1);
    assert!(!run.stdout.contains("Converged"), "{}", run.stdout);
    assert!(run.stderr.contains("lost the lock"), "{}", run.stderr);
    let late = proxy
        .seen()
        .iter()
        .filter(|s| {
            let upload = match backend {
                Backend::S3 => s.method == "PUT" && s.target.contains("bulk"),
                _ => s.method == "POST" && s.target.contains("uploadType=multipart"),
            };
            upload && s.at > broken_at + Duration::from_secs(3)
        })
        .count();
    assert_eq!(
        late, 0,
        "no upload started more than 3 s after the lock was broken"
    );
    let pushed = bucket
        .versions()
        .keys()
        .filter(|k| k.contains("/bulk/"))
        .count();
    assert!(pushed < 300, "the push stopped part-way ({pushed} of 300)");
    // What completed stays done; the next run finishes it.
    proxy.clear_rules();
    a.run(&["datastore", "sync", "--push", "-y"]).expect(0);
    let pushed = bucket
        .versions()
        .keys()
        .filter(|k| k.contains("/bulk/"))
        .count();
    assert_eq!(pushed, 300);
}

/// Runs `args` until it exits 0 (at most `runs` times): under chaos a run
/// may fail, but only with a clear error, and the next one picks up.
fn until_converged(repo: &Repo, args: &[&str], runs: usize) -> usize {
    for n in 1..=runs {
        let run = repo.run(args);
        match run.code {
            Some(0) => return n,
            Some(1) => {
                assert!(
                    run.stderr.contains("error:"),
                    "a failure says why: {}\n--- stdout\n{}",
                    run.stderr,
                    run.stdout
                );
                eprintln!("run {n} of {args:?} failed:\n{}", run.stderr);
                let _ = repo.run(&["datastore", "lock", "release"]);
            }
            other => panic!("exit {other:?}\n{}{}", run.stdout, run.stderr),
        }
    }
    panic!("{args:?} did not converge in {runs} runs");
}

fn push_and_pull_through_a_flaky_network_converge_with_every_byte_right(backend: Backend) {
    let (bucket, proxy) = Bucket::behind_proxy(backend);
    let a = Repo::init(&bucket, Some("alpha"));
    bulk(&a, 60);
    proxy.chaos(seed(21), 0.3);
    let pushes = until_converged(&a, &["datastore", "sync", "--push", "-y"], 8);
    let want = bulk_in(&a.cache().join("alpha"));
    proxy.clear_rules();
    assert_eq!(bucket.contents_under("swamp/alpha/data/bulk/"), want);
    let b = a.clone_elsewhere();
    proxy.chaos(seed(22), 0.3);
    let pulls = until_converged(&b, &["datastore", "sync", "--pull", "-y"], 8);
    let faults = proxy.fired();
    proxy.clear_rules();
    assert_eq!(bulk_in(&b.cache().join("alpha")), want);
    assert_no_temps_anywhere(&bucket, &b);
    assert_no_temps_anywhere(&bucket, &a);
    b.run(&["plan", "--detailed-exitcode"]).expect(0);
    eprintln!("chaos: {pushes} push run(s), {pulls} pull run(s), {faults} faults in the pull");
    assert!(faults > 0, "the chaos injected something");
}

// ---------------------------------------------------------------------------
// Kill rounds: SIGKILL at seeded random moments and at action boundaries,
// each followed by the same command until it converges.

/// Kills `args` with SIGKILL `rounds` times, each after a seeded random
/// delay below a bound that grows to `max_ms` (the first kill must land
/// before a whole run is done: a finished run leaves nothing to kill);
/// then at action boundaries (the failpoint `sync-action-done`), a few
/// actions in each time, until a run finishes.
/// A killed run leaves its lock: `lock release` (its process is gone)
/// removes it, as the warning says.
fn kill_rounds(repo: &Repo, args: &[&str], seed: u64, rounds: usize, max_ms: u64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut killed = 0;
    // How each run that ended before its kill ended (exit code, stderr).
    let mut ended = Vec::new();
    let mut max_ms = max_ms;
    // A run that ends before its kill shortens the next delay (a machine
    // faster than expected): `rounds` kills must land, within bounds.
    for _ in 0..rounds * 4 {
        if killed == rounds {
            break;
        }
        let started = Instant::now();
        let mut child = repo.spawn(args, &[]);
        let bound = max_ms * (killed as u64 + 1) / rounds as u64;
        std::thread::sleep(Duration::from_millis(rng.u64(20..bound.max(21))));
        let landed = child.try_wait().unwrap().is_none();
        if landed {
            killed += 1;
        } else {
            max_ms = (max_ms / 2).max(40);
        }
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        if !landed {
            ended.push(format!(
                "{:?} within {:?}: {}",
                out.status.code(),
                started.elapsed(),
                String::from_utf8_lossy(&out.stderr).trim_end()
            ));
        }
        let _ = repo.run(&["datastore", "lock", "release"]);
    }
    assert!(
        killed > 0,
        "{args:?} (seed {seed}): no random kill landed before the run ended; the runs ended with:\n{}",
        ended.join("\n")
    );
    // A transfer left to do passes the boundary failpoint, so the phase
    // below cannot end without a boundary kill: it dies at the first one.
    let left = repo.run(&["plan", "--json"]);
    let left: serde_json::Value = serde_json::from_str(&left.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?} (seed {seed}): the plan after the random kills is not JSON ({e}):\n{}{}",
            left.stdout, left.stderr
        )
    });
    let transfers_left = left["actions"]
        .as_array()
        .unwrap_or_else(|| panic!("{args:?} (seed {seed}): a plan without actions:\n{left:#}"))
        .iter()
        .any(|a| a["kind"] == "upload" || a["kind"] == "download");
    let mut at_boundaries = 0;
    for round in 0.. {
        assert!(
            round < 200,
            "{args:?} never finished between boundary kills"
        );
        let fp = match round {
            0 => "sync-action-done=return".to_string(),
            _ => format!("sync-action-done={}*off->return", rng.u64(0..3)),
        };
        let run = repo.run_with(args, &[("FAILPOINTS", fp.as_str())]);
        if run.code == Some(0) {
            break;
        }
        assert_eq!(
            run.code, None,
            "only a kill ends a run early\n{}{}",
            run.stdout, run.stderr
        );
        at_boundaries += 1;
        let _ = repo.run(&["datastore", "lock", "release"]);
    }
    assert!(
        at_boundaries > 0 || !transfers_left,
        "{args:?} (seed {seed}): transfers were left, yet no boundary kill landed:\n{left:#}"
    );
    eprintln!("{args:?}: {killed} random kill(s) and {at_boundaries} at action boundaries");
    // Converged: nothing left to do (what is left, in full, if not).
    let plan = repo.run(&["plan", "--detailed-exitcode"]);
    if plan.code != Some(0) {
        let json = repo.run(&["plan", "--json"]);
        panic!(
            "{args:?} (seed {seed}) finished but left a plan (exit {:?}):\n{}{}\n{}",
            plan.code, plan.stdout, plan.stderr, json.stdout
        );
    }
}

/// No temp object in the bucket, no temp file in the repository or cache.
fn assert_no_temps_anywhere(bucket: &Bucket, repo: &Repo) {
    let temps: Vec<String> = bucket
        .versions()
        .into_keys()
        .filter(|k| k.contains(".swamp-tmp"))
        .collect();
    assert!(temps.is_empty(), "temp objects: {temps:?}");
    assert_no_temps(&repo.root);
    assert_no_temps(&repo.cache());
}

/// The bulk files' content, by relative path under `data/bulk/`.
fn bulk_in(root: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    files(&root.join("data/bulk"))
}

fn push_and_pull_killed_at_random_converge_with_every_file_once(backend: Backend) {
    let (bucket, proxy) = Bucket::behind_proxy(backend);
    let a = Repo::init(&bucket, Some("alpha"));
    a.append_config("\n[sync]\nconcurrency = 2\n");
    bulk(&a, 40);
    proxy.rule(uploads(
        backend,
        Rule::new(Fault::Delay(Duration::from_millis(30))),
    ));
    kill_rounds(&a, &["datastore", "sync", "--push", "-y"], seed(9), 4, 400);
    let want = bulk_in(&a.cache().join("alpha"));
    assert_eq!(want.len(), 40);
    assert_eq!(bucket.contents_under("swamp/alpha/data/bulk/"), want);
    assert_no_temps_anywhere(&bucket, &a);

    let b = a.clone_elsewhere();
    proxy.clear_rules();
    proxy.rule(
        Rule::new(Fault::Delay(Duration::from_millis(30)))
            .method("GET")
            .target(download(backend)),
    );
    kill_rounds(&b, &["datastore", "sync", "--pull", "-y"], seed(10), 4, 400);
    assert_eq!(bulk_in(&b.cache().join("alpha")), want);
    assert_no_temps_anywhere(&bucket, &b);
}

fn setup_both_ways_killed_at_random_converges_with_every_file_once(backend: Backend) {
    let (bucket, proxy) = Bucket::behind_proxy(backend);
    let a = Repo::empty(bucket.env());
    a.run(&["init"]).expect(0);
    // A kill between taking setup's locks and recording the new datastore
    // leaves a lock the old configuration does not name (so `lock release`
    // cannot): a short TTL keeps the wait for it short.
    a.append_config("\n[sync]\nconcurrency = 2\n\n[lock]\nttl_secs = 3\n");
    for i in 0..24 {
        a.put(&format!("bulk/f{i:02}"), &format!("file {i}\n"));
    }
    let local = a.root.join(".swamp");
    let want = bulk_in(&local);
    assert_eq!(want.len(), 24);
    proxy.rule(uploads(
        backend,
        Rule::new(Fault::Delay(Duration::from_millis(40))),
    ));
    let spec = bucket.spec();
    kill_rounds(
        &a,
        &["datastore", "setup", spec.as_str(), "-y"],
        seed(11),
        3,
        400,
    );
    assert_eq!(bulk_in(&a.cache()), want, "every file in the cache");
    assert!(bulk_in(&local).is_empty(), "and no longer in .swamp/");
    assert_eq!(
        bucket.contents_under("swamp/data/bulk/"),
        want,
        "and in the bucket"
    );
    assert_no_temps_anywhere(&bucket, &a);

    proxy.clear_rules();
    // Going back moves the cache's files and deletes the old keys (a GCS
    // DELETE each, one S3 batch): slow those down.
    proxy.rule(Rule::new(Fault::Delay(Duration::from_millis(40))).method("DELETE"));
    proxy.rule(Rule::new(Fault::Delay(Duration::from_millis(400))).target("?delete"));
    kill_rounds(&a, &["datastore", "setup", "local", "-y"], seed(12), 3, 400);
    assert_eq!(bulk_in(&local), want, "every file back in .swamp/");
    assert!(
        bucket.contents_under("swamp/data/bulk/").is_empty(),
        "the old keys are gone"
    );
    assert_no_temps_anywhere(&bucket, &a);
}

const SENTINEL: &str = "swamp/config/managed-config-migrated.json";

fn config_migrate_killed_at_random_never_shows_a_sentinel_before_its_objects(backend: Backend) {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    let (bucket, proxy) = Bucket::behind_proxy(backend);
    let a = with_models(&bucket, 30, 2);
    proxy.rule(uploads(
        backend,
        Rule::new(Fault::Delay(Duration::from_millis(30))),
    ));
    // Poll the bucket while the rounds run: whenever the sentinel is
    // listed, every object it vouches for must be listed with it.
    let stop = Arc::new(AtomicBool::new(false));
    let seen_sentinel = Arc::new(AtomicUsize::new(0));
    let violations = Arc::new(Mutex::new(Vec::<String>::new()));
    let poller = {
        let (stop, seen, violations) = (stop.clone(), seen_sentinel.clone(), violations.clone());
        let store = bucket.store();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            while !stop.load(Ordering::SeqCst) {
                let Ok(listing) = rt.block_on(store.list("")) else {
                    continue;
                };
                let keys: std::collections::BTreeSet<String> =
                    listing.into_iter().map(|m| m.key).collect();
                if keys.contains(SENTINEL)
                    && let Ok((_, body)) = rt.block_on(store.get_bytes(SENTINEL))
                {
                    seen.fetch_add(1, Ordering::SeqCst);
                    let doc: serde_json::Value = serde_json::from_slice(&body).unwrap();
                    for path in doc["objects"].as_object().unwrap().keys() {
                        let key = format!("swamp/{path}");
                        if !keys.contains(&key) {
                            violations.lock().unwrap().push(key);
                        }
                    }
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    kill_rounds(
        &a,
        &["datastore", "config", "migrate", "-y"],
        seed(13),
        4,
        400,
    );
    stop.store(true, Ordering::SeqCst);
    poller.join().unwrap();
    assert!(
        violations.lock().unwrap().is_empty(),
        "sentinel before its objects: {:?}",
        violations.lock().unwrap()
    );
    assert!(
        seen_sentinel.load(Ordering::SeqCst) > 0,
        "the poller saw the sentinel at the end"
    );
    let contents = bucket.contents();
    for i in 0..30 {
        let key = format!("swamp/config/models/m{i:03}.yaml");
        assert_eq!(
            contents.get(&key).map(Vec::as_slice),
            Some(format!("name: m{i}\n").as_bytes()),
            "{key}"
        );
    }
    assert_no_temps_anywhere(&bucket, &a);
}

/// A migrate killed in either window of the sentinel's publish (put in the
/// bucket but not landed in the cache; landed but not recorded in the sync
/// base) is finished by the next one: after it, `plan` of every scope has
/// nothing left. (On S3 the listing carries no sha256, so the landed copy
/// was once never recorded by the config scope and every later `plan`
/// showed a record-base that `config migrate` called "no changes".)
fn a_migrate_killed_around_its_sentinel_leaves_no_plan_behind_once_rerun(backend: Backend) {
    // Three uploads, then the sentinel: the fourth action to finish.
    for failpoint in ["sentinel-put=return", "sync-action-done=3*off->return"] {
        let bucket = Bucket::new(backend);
        let a = with_models(&bucket, 3, 2);
        let run = a.run_with(
            &["datastore", "config", "migrate", "-y"],
            &[("FAILPOINTS", failpoint)],
        );
        assert_eq!(
            run.code, None,
            "{failpoint}: killed\n{}{}",
            run.stdout, run.stderr
        );
        assert!(
            bucket.contents().contains_key(SENTINEL),
            "{failpoint}: the sentinel was published before the kill"
        );
        let landed = a.cache().join("config/managed-config-migrated.json");
        assert_eq!(
            landed.exists(),
            failpoint.starts_with("sync-action-done"),
            "{failpoint}: landed in the cache"
        );
        let _ = a.run(&["datastore", "lock", "release"]);
        a.run(&["datastore", "config", "migrate", "-y"]).expect(0);
        assert!(landed.exists(), "{failpoint}: landed once rerun");
        for scope in ["config", "all"] {
            let plan = a.run(&["plan", "--scope", scope, "--detailed-exitcode"]);
            assert_eq!(
                plan.code,
                Some(0),
                "{failpoint}: `plan --scope {scope}` is empty\n{}{}",
                plan.stdout,
                plan.stderr
            );
        }
    }
}

on_both_servers!(
    a_dead_server_ends_a_300_file_pull_in_seconds_naming_the_command_to_rerun,
    a_dead_server_ends_a_config_migrate_in_seconds_naming_the_command_to_rerun,
    push_and_pull_through_a_flaky_network_converge_with_every_byte_right,
    push_and_pull_killed_at_random_converge_with_every_file_once,
    setup_both_ways_killed_at_random_converges_with_every_file_once,
    config_migrate_killed_at_random_never_shows_a_sentinel_before_its_objects,
    a_listing_cut_off_mid_way_is_retried,
    a_pull_reads_each_object_with_one_request,
    a_lazy_clone_downloads_nothing_and_reads_a_file_with_one_request,
    a_download_with_a_flipped_byte_is_retried_and_lands_intact,
    a_download_that_stays_corrupt_is_an_error_naming_the_object_and_writes_nothing,
    a_dead_server_ends_a_300_file_push_in_seconds_naming_the_command_to_rerun,
    a_lock_broken_mid_push_stops_the_push_and_never_says_converged,
    a_migrate_killed_around_its_sentinel_leaves_no_plan_behind_once_rerun,
);
