//! The cache is a mirror of its bucket: what swamp sets aside for undo
//! lives in the cache's own trash (`<cache>/.swamp/trash/`), never in the
//! namespace's tier tree, so `rclone check` of the two finds nothing but
//! swamp's own bookkeeping objects (excluded by name). Trash an older
//! swamp left inside the tree moves out through a planned action, and undo
//! finds it before and after.

use std::path::Path;

use crate::support::bucket::{Backend, Bucket, Repo};
use crate::support::servers;

/// Every file under `dir`, relative, with its bytes.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let rel = e
                .path()
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (rel, std::fs::read(e.path()).unwrap())
        })
        .collect();
    out.sort();
    out
}

/// A repository of namespace `alpha` whose sync deleted and replaced
/// files on both sides: `data gc` set versions aside in the cache, and the
/// sync after it copied the deleted objects into the remote trash.
fn with_trash(bucket: &Bucket) -> (Repo, String) {
    let repo = Repo::init(bucket, Some("alpha"));
    for body in ["one\n", "two\n", "three\n"] {
        repo.put("m/x", body);
    }
    repo.put("m/y", "why\n");
    repo.run(&["datastore", "sync", "-y"]).expect(0);
    let gc = repo.json(&["--json", "data", "gc", "--keep", "1"], 0);
    let id = gc["apply_id"].as_str().unwrap().to_string();
    repo.run(&["datastore", "sync", "-y"]).expect(0);
    (repo, id)
}

/// `rclone check` of the namespace's cache against its prefix, swamp's own
/// objects (`.swamp/`, the namespace manifest) excluded by name.
fn rclone_check(bucket: &Bucket, cache: &Path) -> std::process::Output {
    let remote = format!(
        ":s3,provider=Other,endpoint='{}',access_key_id={},secret_access_key={},region={},force_path_style=true:{}/swamp/alpha",
        servers::s3().endpoint,
        servers::S3_ACCESS_KEY,
        servers::S3_SECRET_KEY,
        servers::S3_REGION,
        bucket.name
    );
    std::process::Command::new(servers::rclone())
        .args(["check", "--config", "/dev/null"])
        .args(["--exclude", "/.swamp/**", "--exclude", "/.namespace.json"])
        .arg(cache)
        .arg(remote)
        .env_remove("AWS_CA_BUNDLE")
        .output()
        .expect("rclone runs")
}

#[test]
fn rclone_check_finds_a_cache_that_set_files_aside_equal_to_its_bucket() {
    let bucket = Bucket::new(Backend::S3);
    let (repo, id) = with_trash(&bucket);
    let cache = repo.cache();
    assert!(
        !cache.join("alpha/.swamp-trash").exists(),
        "nothing set aside inside the tier tree"
    );
    assert!(
        !tree(&cache.join(format!(".swamp/trash/{id}/alpha"))).is_empty(),
        "the gc's versions are in the cache's own trash"
    );
    let out = rclone_check(&bucket, &cache.join("alpha"));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("0 differences found"), "{said}");
    assert!(
        !bucket
            .contents_under("swamp/alpha/.swamp/trash/")
            .is_empty(),
        "the remote trash stays in the bucket, under .swamp/"
    );
}

#[test]
fn trash_an_older_swamp_left_in_the_cache_tree_moves_out_through_a_planned_action() {
    let bucket = Bucket::new(Backend::Fs);
    let (repo, id) = with_trash(&bucket);
    let cache = repo.cache();
    // Where swamp before 0.2 set it aside: `<cache>/<ns>/.swamp-trash/<id>/`.
    let new = cache.join(format!(".swamp/trash/{id}/alpha"));
    let old = cache.join(format!("alpha/.swamp-trash/{id}"));
    let set_aside = tree(&new);
    assert_eq!(set_aside.len(), 2, "{set_aside:?}");
    std::fs::create_dir_all(old.parent().unwrap()).unwrap();
    std::fs::rename(&new, &old).unwrap();
    std::fs::remove_dir_all(cache.join(".swamp")).unwrap();

    // Undo still finds every file where it is.
    let preview = repo.json(&["--json", "undo", &id, "--dry-run"], 0);
    assert_eq!(
        preview["undo"]["conflicts"].as_array().map(Vec::len),
        Some(0),
        "{preview}"
    );

    let plan = repo.json(&["--json", "plan"], 0);
    let relocate: Vec<_> = plan["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "relocate-trash")
        .collect();
    assert_eq!(relocate.len(), 1, "{plan}");
    assert_eq!(relocate[0]["applies"], serde_json::json!([id]));
    assert_eq!(relocate[0]["files"], 2);
    assert_eq!(tree(&old), set_aside, "planning moves nothing");
    let human = repo.run(&["plan"]).stdout;
    assert!(human.contains("relocate-trash"), "{human}");

    let applied = repo.run(&["apply", "-y"]);
    applied.expect(0);
    assert!(
        applied.stdout.contains("moved into the cache's trash"),
        "{}",
        applied.stdout
    );
    assert!(!cache.join("alpha/.swamp-trash").exists());
    assert_eq!(tree(&new), set_aside, "every file, byte for byte");
    repo.run(&["plan", "--detailed-exitcode"]).expect(0);

    let undone = repo.run(&["undo", &id, "-y"]);
    undone.expect(0);
    assert!(
        repo.cache().join("alpha/data/m/x/1/raw").is_file(),
        "{}",
        undone.stdout
    );
}
