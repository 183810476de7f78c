//! The human plan, snapshot-tested: one rendering per action kind and per
//! conflict kind (every variant the code can build), and one sync plan with
//! uploads, downloads and deletes. Review every change here as you would
//! review the code that caused it.

use std::path::PathBuf;
use swamp::plan::action::{DeleteLocal, DeleteRemote, Download, Move, Upload};
use swamp::plan::conflict::{BothChanged, DeletedAndChanged, DifferentAtTarget};

use swamp::cli::render::render;
use swamp::config::{ConflictPolicy, DatastoreConfig, Namespace};
use swamp::plan::RemoteInfo;
use swamp::plan::{Action, Conflict, Expect, PlacementInfo, Plan, RemoteExpect};
use swamp::state::Scope;

use crate::support::kinds::{every_action, every_conflict, sha, tp};

/// A namespaced S3 repository draining the solo layout and an old
/// namespace of the same bucket.
fn plan(actions: Vec<Action>, conflicts: Vec<swamp::plan::Conflict>) -> Plan {
    let datastore = DatastoreConfig::S3 {
        bucket: "swamp-data".into(),
        prefix: Some("repos".into()),
        region: Some("eu-west-1".into()),
        endpoint: None,
    };
    let cache = PathBuf::from("/home/u/.swamp/repos/7d0c6f1e-2b1a-4c3e-9f6a-5e4d3c2b1a09");
    let shown = "$SWAMP_HOME/repos/7d0c6f1e-2b1a-4c3e-9f6a-5e4d3c2b1a09";
    Plan {
        scope: Scope::All,
        target: PlacementInfo {
            datastore: datastore.clone(),
            namespace: Some(Namespace::parse("homelab").unwrap()),
            root: format!("{shown}/homelab"),
            dir: cache.join("homelab"),
        },
        sources: vec![
            PlacementInfo {
                datastore: datastore.clone(),
                namespace: None,
                root: shown.to_string(),
                dir: cache.clone(),
            },
            PlacementInfo {
                datastore,
                namespace: Some(Namespace::parse("old").unwrap()),
                root: format!("{shown}/old"),
                dir: cache.join("old"),
            },
        ],
        remote: Some(RemoteInfo {
            url: "s3://swamp-data/repos/homelab/".into(),
            key_prefix: "repos/homelab/".into(),
            objects: 12,
            batch_delete: false,
            prechecked: Vec::new(),
            multipart_threshold: None,
            conflict_policy: ConflictPolicy::Fail,
            forced: false,
            forced_delete_local: false,
            base_ignored: false,
            hydrate: false,
            unhydrated: 0,
            resolved: vec![],
            folder_markers: 0,
            unmanaged: vec![],
            skipped_local: vec![],
            remote_id: None,
            base_reset: None,
        }),
        actions,
        conflicts,
        no_undo: false,
        diffs: Vec::new(),
        resumes: Vec::new(),
        other_clones: Vec::new(),
        authored: Vec::new(),
    }
}

#[test]
fn every_action_kind_renders() {
    let mut n = std::collections::BTreeMap::<&str, usize>::new();
    for a in every_action() {
        let kind = a.kind();
        let i = n.entry(kind).or_default();
        *i += 1;
        let name = format!("render_action_{}_{}", kind.replace('-', "_"), i);
        // swamp's own sync records are listed with --detail (counted
        // in one line without it).
        let detail = a.is_bookkeeping();
        let p = plan(vec![a], vec![]);
        snapshot!(name, swamp::cli::render::render_detail(&p, detail));
    }
}

#[test]
fn every_conflict_kind_renders() {
    let mut n = std::collections::BTreeMap::<&str, usize>::new();
    for c in every_conflict() {
        let kind = c.kind();
        let i = n.entry(kind).or_default();
        *i += 1;
        let name = format!("render_conflict_{}_{}", kind.replace('-', "_"), i);
        snapshot!(name, render(&plan(vec![], vec![c])));
    }
}

#[test]
fn a_sync_plan_with_uploads_downloads_and_deletes_renders() {
    snapshot!("render_sync_plan", render(&sync_plan()));
}

/// The Markdown a CI job posts on a pull request (issue 13): the same
/// plan as the terminal's, as a list, tables and a code block.
#[test]
fn a_plan_renders_as_markdown_for_a_pull_request() {
    let md = |p: &Plan, detail| swamp::cli::render::render_markdown(p, detail);
    snapshot!("render_markdown_sync_plan", md(&sync_plan(), false));
    // Every conflict kind, in one fenced block; a key that would break a
    // table cell or a code span is escaped.
    let mut actions = vec![Action::Upload(Upload {
        path: tp("outputs/odd|name `x`*.txt"),
        size: 1,
        sha256: sha('a'),
        remote: RemoteExpect::Absent,
        settled_by: None,
    })];
    actions.push(Action::InvalidateCatalog);
    let p = plan(actions, every_conflict());
    let rendered = md(&p, false);
    assert!(
        rendered.contains("`` outputs/odd\\|name `x`*.txt ``"),
        "{rendered}"
    );
    snapshot!("render_markdown_conflicts", rendered);
    // A long plan: grouped, folded under <details>.
    let mut actions = Vec::new();
    for i in 0..120 {
        actions.push(Action::Upload(Upload {
            path: tp(&format!("outputs/bench/{:04}/f{i:06}.txt", i / 10)),
            size: 4096,
            sha256: sha('a'),
            remote: RemoteExpect::Absent,
            settled_by: None,
        }));
    }
    let mut p = plan(actions, vec![]);
    p.scope = Scope::Push;
    p.sources.clear();
    let grouped = md(&p, false);
    assert!(
        !grouped.contains("<details>"),
        "one group is short: {grouped}"
    );
    snapshot!("render_markdown_long_plan_grouped", grouped);
    let detail = md(&p, true);
    assert!(detail.contains("<details><summary>120 action(s)</summary>"));
    assert!(detail.contains("f000119.txt"));
}

fn sync_plan() -> Plan {
    let actions = vec![
        Action::Upload(Upload {
            path: tp("data/web/state/3/raw"),
            size: 2048,
            sha256: sha('a'),
            remote: RemoteExpect::Absent,
            settled_by: None,
        }),
        Action::Upload(Upload {
            path: tp("outputs/deploy/web-1.yaml"),
            size: 310,
            sha256: sha('b'),
            remote: RemoteExpect::Version {
                version: "\"9b2cf535f27731c974343645a3985328\"".into(),
            },
            settled_by: None,
        }),
        Action::Download(Download {
            path: tp("workflow-runs/nightly/run-0002.yaml"),
            size: 77,
            version: "\"0cc175b9c0f1b6a831c399e269772661\"".into(),
            expect: Expect::Sha256(sha('c')),
            local: None,
            settled_by: None,
        }),
        Action::Download(Download {
            path: tp("audit/2026-11.log"),
            size: 4096,
            version: "\"92eb5ffee6ae2fec3ad71c777531578f\"".into(),
            expect: Expect::Sha256(sha('d')),
            local: Some(Box::new(sha('e'))),
            settled_by: None,
        }),
        Action::DeleteRemote(DeleteRemote {
            path: tp("data/web/state/1/raw"),
            version: "\"4a8a08f09d37b73795649038408b5f33\"".into(),
            settled_by: None,
        }),
        Action::DeleteLocal(DeleteLocal {
            path: tp("outputs/deploy/web-0.yaml"),
            sha256: sha('f'),
            settled_by: None,
        }),
        Action::InvalidateCatalog,
    ];
    let mut p = plan(actions, vec![]);
    p.scope = Scope::Sync;
    p.sources.clear();
    p.remote.as_mut().unwrap().base_reset = Some(
        "the last sync was with a remote whose id was 1f0e…; s3://swamp-data/repos/homelab/ holds no id now (it was wiped or drained since)".into(),
    );
    // Lazy hydration: files recorded as in the remote only are said so.
    p.remote.as_mut().unwrap().unhydrated = 7;
    // Keys another tool left that no tier holds: skipped, and said so.
    p.remote.as_mut().unwrap().folder_markers = 2;
    p.remote.as_mut().unwrap().unmanaged = vec![
        swamp::state::remote::Unmanaged {
            name: "_index/".into(),
            objects: 12,
        },
        swamp::state::remote::Unmanaged {
            name: "notes.txt".into(),
            objects: 1,
        },
    ];
    // What the cache holds that no key can: skipped, and said so.
    p.remote.as_mut().unwrap().skipped_local = vec![
        swamp::state::Obstacle {
            path: "outputs/latest".into(),
            kind: swamp::state::ObstacleKind::Symlink,
            link: Some("run-0002".into()),
        },
        swamp::state::Obstacle::new("outputs/pipe", swamp::state::ObstacleKind::SpecialFile),
    ];
    p
}

/// A plan too long to read row by row (issue 11): grouped by kind and
/// directory, with counts and bytes, and the way to see every row; a
/// conflict is still listed on its own. `--detail` gives every row.
#[test]
fn a_long_plan_is_grouped_by_kind_and_directory_and_detail_lists_every_row() {
    let mut actions = Vec::new();
    for i in 0..120 {
        actions.push(Action::Upload(Upload {
            path: tp(&format!("outputs/bench/{:04}/f{i:06}.txt", i / 10)),
            size: 4096,
            sha256: sha('a'),
            remote: RemoteExpect::Absent,
            settled_by: None,
        }));
    }
    for i in 0..30 {
        actions.push(Action::DeleteRemote(DeleteRemote {
            path: tp(&format!("data/web/state/{i}/raw")),
            version: format!("v{i}").into(),
            settled_by: None,
        }));
    }
    actions.push(Action::Download(Download {
        path: tp("audit/2026-11.log"),
        size: 77,
        version: "v1".into(),
        expect: Expect::Sha256(sha('c')),
        local: None,
        settled_by: None,
    }));
    actions.push(Action::InvalidateCatalog);
    let conflicts = every_conflict()
        .into_iter()
        .filter(|c| c.kind() == "both-changed")
        .take(1)
        .collect();
    let mut p = plan(actions, conflicts);
    p.scope = Scope::Sync;
    p.sources.clear();
    let grouped = render(&p);
    assert!(!grouped.contains("f000119.txt"), "{grouped}");
    assert!(grouped.contains("--detail"), "{grouped}");
    snapshot!("render_long_plan_grouped", grouped);
    let detail = swamp::cli::render::render_detail(&p, true);
    for i in [0, 119] {
        assert!(detail.contains(&format!("f{i:06}.txt")), "row {i}");
    }
    assert_eq!(
        detail.matches("delete-remote ").count(),
        31,
        "30 rows + the summary"
    );
}

/// On a terminal (issue 13): tables fit its width (long cells wrap) and
/// action kinds are coloured as Terraform colours them; a key's own escape
/// sequences are still shown escaped, colour or not.
#[test]
fn a_terminal_gets_tables_fitted_to_its_width_and_coloured_kinds() {
    use swamp::cli::render::{Style, render_styled};
    let mut p = sync_plan();
    p.actions.push(Action::Upload(Upload {
        path: tp("outputs/evil\u{1b}[8mhidden.yaml"),
        size: 1,
        sha256: sha('a'),
        remote: RemoteExpect::Absent,
        settled_by: None,
    }));
    // Even a key holding swamp's own colour codes gets them escaped.
    p.actions.push(Action::Upload(Upload {
        path: tp("outputs/evil\u{1b}[32mgreen.yaml"),
        size: 1,
        sha256: sha('a'),
        remote: RemoteExpect::Absent,
        settled_by: None,
    }));
    // Prose too: a conflict names its key outside any table.
    p.conflicts
        .push(swamp::plan::Conflict::BothChanged(BothChanged {
            path: tp("outputs/evil\u{1b}]0;pwned\u{7}.yaml"),
            cache_sha256: sha('a'),
            remote_version: "v2".into(),
            remote_sha256: Some(sha('b')),
            base_sha256: None,
            remote_modified: None,
        }));
    let plain = render_styled(&p, false, Style::default());
    assert!(plain.lines().any(|l| l.chars().count() > 100), "{plain}");
    let fitted = render_styled(
        &p,
        false,
        Style {
            width: Some(80),
            color: false,
        },
    );
    // Tables only: the header's notes are prose, not cells.
    for line in fitted
        .lines()
        .filter(|l| l.starts_with(' ') && !l.starts_with("  "))
    {
        assert!(line.chars().count() <= 80, "{line:?}\n{fitted}");
    }
    // (the wrapped path may split the escaped sequence across lines)
    assert!(fitted.contains("\\x1b"), "escaped: {fitted}");
    assert!(!fitted.contains('\u{1b}'), "{fitted}");
    let colored = render_styled(
        &p,
        false,
        Style {
            width: None,
            color: true,
        },
    );
    assert!(colored.contains("\u{1b}[32mupload\u{1b}[0m"), "{colored}");
    assert!(
        colored.contains("\u{1b}[31mdelete-remote\u{1b}[0m"),
        "{colored}"
    );
    assert!(
        !colored.contains("\u{1b}[8m"),
        "a key's escape is never passed through"
    );
    assert!(colored.contains("\\x1b[8m"), "{colored}");
    assert!(colored.contains("evil\\x1b[32mgreen"), "{colored}");
    assert!(colored.contains("evil\\x1b]0;pwned\\x07.yaml"), "{colored}");
    // Colour adds no width: the rows line up as without it.
    let strip = |s: &str| {
        s.replace("\u{1b}[32m", "")
            .replace("\u{1b}[31m", "")
            .replace("\u{1b}[33m", "")
            .replace("\u{1b}[0m", "")
    };
    assert_eq!(strip(&colored), plain);
    // And every escape sequence left is a colour around a kind.
    let mut rest = colored.as_str();
    while let Some(at) = rest.find('\u{1b}') {
        let tail = &rest[at..];
        let close = tail.find("\u{1b}[0m").expect("a colour is closed");
        let kind = &tail[5..close];
        assert!(
            swamp::plan::Action::KINDS.contains(&kind) || kind == "conflict",
            "{kind:?}"
        );
        rest = &tail[close + 4..];
    }
}

/// Sync conflicts show what differs (issue 28, item 2): a unified diff of
/// small text on both sides, or why there is none (not text, too large, or
/// changed since it was listed), with each side's size; `plan --diff`
/// shows the same under the actions for each file an upload or download
/// replaces. The reads planning made are in the request estimate.
#[test]
fn content_diffs_render_under_conflicts_and_replaced_files() {
    use swamp::plan::Side;
    use swamp::plan::textdiff::{ContentDiff, DiffBody, DiffFor};
    let diff = |path: &str,
                shown_for: DiffFor,
                (old, new): (Side, Side),
                (old_size, new_size): (Option<u64>, Option<u64>),
                body: DiffBody| ContentDiff {
        path: tp(path),
        shown_for,
        old,
        new,
        old_size,
        new_size,
        body,
        read_remote: new_size.is_some_and(|s| s <= 64 << 10),
    };
    let conflicts = vec![
        Conflict::BothChanged(BothChanged {
            path: tp("outputs/report.txt"),
            cache_sha256: sha('a'),
            remote_version: "v2".into(),
            remote_sha256: Some(sha('b')),
            base_sha256: Some(sha('c')),
            remote_modified: None,
        }),
        Conflict::BothChanged(BothChanged {
            path: tp("data/model/1/raw"),
            cache_sha256: sha('a'),
            remote_version: "v3".into(),
            remote_sha256: Some(sha('b')),
            base_sha256: Some(sha('c')),
            remote_modified: None,
        }),
        Conflict::DeletedAndChanged(DeletedAndChanged {
            path: tp("outputs/big.log"),
            deleted_in: Side::Cache,
            changed_sha256: Some(sha('d')),
            remote_modified: None,
        }),
        Conflict::DeletedAndChanged(DeletedAndChanged {
            path: tp("outputs/notes.md"),
            deleted_in: Side::Remote,
            changed_sha256: Some(sha('e')),
            remote_modified: None,
        }),
        Conflict::BothChanged(BothChanged {
            path: tp("outputs/moving.txt"),
            cache_sha256: sha('a'),
            remote_version: "v9".into(),
            remote_sha256: Some(sha('b')),
            base_sha256: None,
            remote_modified: None,
        }),
    ];
    let actions = vec![
        Action::Upload(Upload {
            path: tp("outputs/deploy/web-1.yaml"),
            size: 31,
            sha256: sha('a'),
            remote: RemoteExpect::Version {
                version: "v4".into(),
            },
            settled_by: None,
        }),
        Action::Download(Download {
            path: tp("data/weights/2/raw"),
            size: 900,
            version: "v5".into(),
            expect: Expect::Sha256(sha('b')),
            local: Some(Box::new(sha('c'))),
            settled_by: None,
        }),
    ];
    let mut p = plan(actions, conflicts);
    p.scope = Scope::Sync;
    p.sources.clear();
    p.diffs = vec![
        diff(
            "outputs/report.txt",
            DiffFor::Conflict,
            (Side::Remote, Side::Cache),
            (Some(24), Some(22)),
            DiffBody::Text {
                diff: "--- remote/outputs/report.txt\n+++ cache/outputs/report.txt\n@@ -1,2 +1,2 @@\n status: ok\n-owner: alice\n+owner: bob\n".into(),
            },
        ),
        diff(
            "data/model/1/raw",
            DiffFor::Conflict,
            (Side::Remote, Side::Cache),
            (Some(2048), Some(2050)),
            DiffBody::Binary,
        ),
        diff(
            "outputs/big.log",
            DiffFor::Conflict,
            (Side::Cache, Side::Remote),
            (None, Some(3 << 20)),
            DiffBody::TooLarge { limit: 64 << 10 },
        ),
        diff(
            "outputs/notes.md",
            DiffFor::Conflict,
            (Side::Remote, Side::Cache),
            (None, Some(12)),
            DiffBody::Text {
                diff: "--- remote/outputs/notes.md (deleted)\n+++ cache/outputs/notes.md\n@@ -0,0 +1 @@\n+keep this.\n".into(),
            },
        ),
        diff(
            "outputs/moving.txt",
            DiffFor::Conflict,
            (Side::Remote, Side::Cache),
            (Some(5), Some(5)),
            DiffBody::Unavailable {
                reason: "the remote object changed since it was listed; plan again".into(),
            },
        ),
        diff(
            "outputs/deploy/web-1.yaml",
            DiffFor::Upload,
            (Side::Remote, Side::Cache),
            (Some(23), Some(31)),
            DiffBody::Text {
                diff: "--- remote/outputs/deploy/web-1.yaml\n+++ cache/outputs/deploy/web-1.yaml\n@@ -1,2 +1,2 @@\n-status: failed\n+status: ok after retry\n host: web-1\n".into(),
            },
        ),
        diff(
            "data/weights/2/raw",
            DiffFor::Download,
            (Side::Cache, Side::Remote),
            (Some(880), Some(900)),
            DiffBody::Binary,
        ),
    ];
    let text = render(&p);
    assert!(
        text.contains("      -owner: alice\n      +owner: bob\n"),
        "{text}"
    );
    assert!(
        text.contains("no diff: not text (2.0 KiB in the remote, 2.0 KiB in the cache)"),
        "{text}"
    );
    assert!(
        text.contains(
            "no diff: larger than 64.0 KiB (deleted in the cache, 3.0 MiB in the remote)"
        ),
        "{text}"
    );
    snapshot!("render_content_diffs", text);
    snapshot!(
        "render_markdown_content_diffs",
        swamp::cli::render::render_markdown(&p, false)
    );
    // The reads planning made (the two text files and the binary one
    // under 64 KiB on the remote side) are counted as GETs.
    assert_eq!(
        p.summary().requests.get - {
            let mut q = p.clone();
            q.diffs.clear();
            q.summary().requests.get
        },
        p.diffs.iter().filter(|d| d.read_remote).count() as u64
    );
}

/// A plan of any size and shape fits on a screen (issue 29): groups by
/// kind and directory roll up to their tier when the directories are too
/// many to list, so 1,000 names × 100 versions, 100,000 names × 1 version
/// and one deep tree each render within 60 lines; a conflict is still
/// listed on its own, and `--detail` still lists every action.
#[test]
fn a_plan_of_any_shape_renders_within_sixty_lines() {
    type Layout = (&'static str, fn(usize) -> String, usize);
    let layouts: [Layout; 3] = [
        (
            "1,000 names x 100 versions",
            |i| format!("data/m{:03}/out/{}/raw", i / 100, i % 100 + 1),
            100_000,
        ),
        (
            "100,000 names x 1 version",
            |i| format!("data/n{i:06}/1/raw"),
            100_000,
        ),
        (
            "one deep tree",
            |i| format!("outputs/a/b/c/d/e/f{i:05}.txt"),
            2_000,
        ),
    ];
    for (name, path, n) in layouts {
        let actions = (0..n)
            .map(|i| {
                Action::Move(Move {
                    path: tp(&path(i)),
                    source: i % 2,
                    size: 4096,
                    sha256: sha('a'),
                })
            })
            .collect();
        let conflict = Conflict::DifferentAtTarget(DifferentAtTarget {
            path: tp("outputs/clash.txt"),
            source: 0,
            source_sha256: sha('a').to_string(),
            target_sha256: sha('b').to_string(),
            source_size: None,
            target_size: None,
            diff: None,
        });
        let p = plan(actions, vec![conflict]);
        let text = render(&p);
        let lines = text.lines().count();
        println!("{name}: {n} actions render in {lines} lines");
        assert!(lines <= 60, "{name}: {lines} lines\n{text}");
        assert!(text.contains("✗ outputs/clash.txt"), "{name}\n{text}");
        if n <= 2_000 {
            let detail = swamp::cli::render::render_detail(&p, true);
            let rows = detail.lines().filter(|l| {
                let mut cells = l.split_whitespace();
                cells.next().is_some_and(|c| c.parse::<usize>().is_ok())
                    && cells.next() == Some("move")
            });
            assert_eq!(rows.count(), n, "{name}: --detail lists every action");
        }
    }
}

/// `swamp sync --conflict local` used to show `upload … changed in the
/// cache`, exactly like an upload nobody else touched (issue 42): a
/// reviewer could not tell which row overwrites a teammate's change.
fn settled_plan(policy: ConflictPolicy) -> Plan {
    let both = tp("outputs/deploy/web-1.yaml");
    let deleted = tp("outputs/deploy/web-0.yaml");
    let mut actions = match policy {
        ConflictPolicy::KeepBoth => vec![
            Action::RenameLocal(swamp::plan::action::RenameLocal {
                path: both.clone(),
                to: tp("outputs/deploy/web-1.yaml.conflict-aaaaaaaa"),
                sha256: sha('a'),
                settled_by: Some(policy),
            }),
            Action::Download(Download {
                path: both.clone(),
                size: 311,
                version: "\"9b2cf535f27731c974343645a3985328\"".into(),
                expect: Expect::Sha256(sha('b')),
                local: None,
                settled_by: Some(policy),
            }),
            Action::Upload(Upload {
                path: tp("outputs/deploy/web-1.yaml.conflict-aaaaaaaa"),
                size: 310,
                sha256: sha('a'),
                remote: RemoteExpect::Absent,
                settled_by: Some(policy),
            }),
        ],
        _ => vec![
            Action::Upload(Upload {
                path: both.clone(),
                size: 310,
                sha256: sha('a'),
                remote: RemoteExpect::Version {
                    version: "\"9b2cf535f27731c974343645a3985328\"".into(),
                },
                settled_by: Some(policy),
            }),
            Action::DeleteRemote(DeleteRemote {
                path: deleted.clone(),
                version: "\"4a8a08f09d37b73795649038408b5f33\"".into(),
                settled_by: Some(policy),
            }),
        ],
    };
    // A change nobody else touched, for contrast.
    actions.push(Action::Upload(Upload {
        path: tp("outputs/deploy/web-2.yaml"),
        size: 12,
        sha256: sha('c'),
        remote: RemoteExpect::Absent,
        settled_by: None,
    }));
    let mut p = plan(actions, vec![]);
    p.scope = Scope::Sync;
    p.sources.clear();
    let remote = p.remote.as_mut().unwrap();
    remote.conflict_policy = policy;
    remote.resolved = vec![Conflict::BothChanged(BothChanged {
        path: both,
        cache_sha256: sha('a'),
        remote_version: "\"9b2cf535f27731c974343645a3985328\"".into(),
        remote_sha256: Some(sha('b')),
        base_sha256: Some(sha('e')),
        // 2026-12-06 18:02:00 UTC
        remote_modified: Some(1_796_580_120),
    })];
    if policy != ConflictPolicy::KeepBoth {
        remote
            .resolved
            .push(Conflict::DeletedAndChanged(DeletedAndChanged {
                path: deleted,
                deleted_in: swamp::plan::Side::Cache,
                changed_sha256: Some(sha('d')),
                remote_modified: Some(1_796_580_120),
            }));
    }
    p
}

#[test]
fn a_row_a_conflict_policy_chose_says_which_conflict_and_what_it_replaces() {
    let local = settled_plan(ConflictPolicy::Local);
    let text = render(&local);
    assert!(
        text.contains("both changed: `--conflict local` keeps the cache's copy, replacing the remote's version written 2026-12-06 18:02 UTC"),
        "{text}"
    );
    assert!(
        text.contains("2 conflict(s) settled by `--conflict local`"),
        "the closing line counts them: {text}"
    );
    assert!(
        text.contains("new in the cache"),
        "an untouched upload reads as before"
    );
    snapshot!("render_settled_local", text);
    snapshot!(
        "render_settled_keep_both",
        render(&settled_plan(ConflictPolicy::KeepBoth))
    );
    snapshot!(
        "render_markdown_settled_local",
        swamp::cli::render::render_markdown(&local, false)
    );
    // JSON: each settled action carries `settled_by`, the summary counts
    // the settled conflicts, and `remote.resolved` lists them.
    let json = serde_json::to_value(&local).unwrap();
    let by: Vec<_> = json["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.get("settled_by").cloned())
        .collect();
    assert_eq!(
        by,
        [Some("local".into()), Some("local".into()), None],
        "{json}"
    );
    assert_eq!(local.summary().settled, 2);
    assert_eq!(
        json["remote"]["resolved"][0]["remote_modified"],
        1_796_580_120
    );
}
