//! One value of every plan action and conflict kind, as the code builds
//! them: for the schema checks and the render snapshots.
#![allow(dead_code)]

use swamp::plan::action::*;
use swamp::plan::conflict::*;

pub fn tp(s: &str) -> swamp::layout::TierPath {
    swamp::layout::TierPath::parse(s).unwrap()
}

pub fn hex(c: char) -> String {
    std::iter::repeat_n(c, 64).collect()
}

/// [`hex`] as the sha256 type.
pub fn sha(c: char) -> swamp::digest::Sha256 {
    swamp::digest::Sha256::parse(&hex(c)).expect("64 hex digits")
}

/// One value of every action kind, as the code builds them (sync plans
/// cannot be produced by the binary against a local datastore).
pub fn every_action() -> Vec<swamp::plan::Action> {
    use swamp::plan::Action;
    use swamp::plan::action::{BaseRecord, RemoteExpect};
    vec![
        Action::Move(Move {
            path: tp("data/a/1/raw"),
            source: 0,
            size: 10,
            sha256: sha('a'),
        }),
        Action::DropDuplicate(DropDuplicate {
            path: tp("outputs/a.yaml"),
            source: 1,
            size: 0,
            sha256: sha('b'),
        }),
        Action::Upload(Upload {
            path: tp("data/a/2/raw"),
            size: 5,
            sha256: sha('c'),
            remote: RemoteExpect::Absent,
            settled_by: None,
        }),
        Action::Upload(Upload {
            path: tp("data/a/1/raw"),
            size: 5,
            sha256: sha('c'),
            remote: RemoteExpect::Version {
                version: "\"9b2cf535f27731c974343645a3985328\"".into(),
            },
            settled_by: None,
        }),
        Action::Download(Download {
            path: tp("audit/2026-11.log"),
            size: 7,
            version: "1732938481000000".into(),
            expect: swamp::plan::Expect::Sha256(sha('d')),
            local: None,
            settled_by: None,
        }),
        Action::Download(Download {
            path: tp("audit/2026-12.log"),
            size: 7,
            version: "2".into(),
            // Another tool's object: the listing's hashes check it.
            expect: swamp::plan::Expect::Served(Box::new(swamp::digest::Served {
                md5: Some(swamp::digest::Md5([0x11; 16])),
                crc32c: Some(swamp::digest::Crc32c(0xe306_9283)),
                gzip: false,
            })),
            local: Some(Box::new(sha('e'))),
            settled_by: None,
        }),
        Action::DeleteLocal(DeleteLocal {
            path: tp("workflow-runs/w/run-1.yaml"),
            sha256: sha('f'),
            settled_by: None,
        }),
        Action::DeleteRemote(DeleteRemote {
            path: tp("workflow-runs/w/run-2.yaml"),
            version: "3".into(),
            settled_by: None,
        }),
        Action::RenameLocal(RenameLocal {
            path: tp("files/report.txt"),
            to: tp("files/report.conflict-cache.txt"),
            sha256: sha('0'),
            settled_by: None,
        }),
        Action::RecordBase(RecordBase {
            add: vec![BaseRecord {
                path: tp("data/b/1/raw"),
                sha256: sha('1'),
                size: 3,
                version: "4".into(),
            }],
            unhydrated: vec![swamp::plan::UnhydratedRecord {
                path: tp("data/d/1/raw"),
                size: 5,
                version: "6".into(),
                sha256: None,
                served: None,
            }],
            drop: vec![tp("data/c/1/raw")],
        }),
        Action::RecordDeletes(RecordDeletes {
            files: vec![swamp::state::delete_records::DeletedFile {
                path: tp("data/m/1/raw"),
                sha256: sha('3'),
                version: "9".into(),
            }],
            after: Some("001764000000000-0123456789ab".into()),
            prune: vec![swamp::plan::RemoteObjectRef {
                key: "repos/homelab/.swamp/deletes/001764000000000-0123456789ab.json".into(),
                version: "8".into(),
            }],
        }),
        Action::NoteProgress(NoteProgress {
            passed: "001764000000000-0123456789ab".into(),
            check: vec![swamp::state::delete_records::DeletedFile {
                path: tp("data/m/2/raw"),
                sha256: sha('4'),
                version: "7".into(),
            }],
            replaces: vec![swamp::plan::RemoteObjectRef {
                key: "repos/homelab/.swamp/clones/0123456789abcdef0123456789abcdef/000000000000000-000000000000.json".into(),
                version: "6".into(),
            }],
            prune: vec![],
        }),
        Action::PruneRecords(PruneRecords {
            prune: vec![swamp::plan::RemoteObjectRef {
                key: "repos/homelab/.swamp/deletes/001763000000000-0123456789ab.json".into(),
                version: "5".into(),
            }],
        }),
        Action::PruneHistory(swamp::plan::action::PruneHistory {
            prune: vec![swamp::plan::RemoteObjectRef {
                key: "repos/homelab/.swamp/history/20261101T090000Z-3fa29c.json".into(),
                version: "6".into(),
            }],
            keep_days: 7,
        }),
        Action::Fetch(Fetch {
            path: tp("data/d/1/raw"),
            source: 0,
            size: 3,
            version: "7".into(),
            sha256: Some(sha('2')),
        }),
        Action::CopyRemote(CopyRemote {
            path: tp("data/e/1/raw"),
            source: 0,
            size: 3,
            version: "etag-e".into(),
            sha256: sha('3'),
            in_cache: true,
            streamed: false,
        }),
        Action::DeleteSourceRemote(DeleteSourceRemote {
            source: 0,
            objects: vec![swamp::plan::RemoteObjectRef {
                key: "swamp/data/e/1/raw".into(),
                version: "etag-e".into(),
            }],
            moved_to: None,
        }),
        Action::InvalidateCatalog,
        Action::FinishMigration,
        Action::PruneTrash(PruneTrash {
            id: "20261124T090000Z-3fa29c".into(),
            at: "2026-11-24T09:00:00Z".into(),
            reason: swamp::plan::action::PruneReason::Expired,
            files: 3,
            bytes: 12,
            remote_objects: 2,
        }),
        Action::PruneTrash(PruneTrash {
            id: "20261130T090000Z-0b1c2d".into(),
            at: "2026-11-30T09:00:00Z".into(),
            reason: swamp::plan::action::PruneReason::OverMaxBytes,
            files: 1,
            bytes: 4096,
            remote_objects: 0,
        }),
        Action::RelocateTrash(RelocateTrash {
            source: None,
            applies: vec![
                "20261124T090000Z-3fa29c".into(),
                "20261130T090000Z-0b1c2d".into(),
            ],
            files: 5,
            bytes: 4108,
        }),
        Action::AbortUpload(AbortUpload {
            path: tp("data/big/1/raw"),
            upload_id: "2~Xy7Qd".into(),
            why: swamp::plan::AbortWhy::FileChanged,
        }),
        Action::AbortUpload(AbortUpload {
            path: tp("data/big/2/raw"),
            upload_id: "2~Zq1".into(),
            why: swamp::plan::AbortWhy::Stale,
        }),
        Action::RemoveTemp(RemoveTemp {
            path: tp("data/a/1/.swamp-tmp-x1"),
            source: None,
            size: 7,
            // In a directory bucket.
            remote: true,
        }),
        Action::RemoveTemp(RemoveTemp {
            path: tp("data/a/1/.swamp-tmp-x2"),
            source: Some(0),
            size: 0,
            remote: false,
        }),
        Action::RemovePartial(swamp::plan::action::RemovePartial {
            name: "0123456789abcdef-fedcba9876543210.part".into(),
            size: 16 << 20,
            why: swamp::plan::action::PartialWhy::Unwanted,
        }),
        Action::MirrorConfig(MirrorConfig {
            path: tp("config/models/a.yaml"),
            size: 3,
            sha256: sha('6'),
            local: None,
        }),
        Action::MirrorConfig(MirrorConfig {
            path: tp("config/models/a.yaml"),
            size: 3,
            sha256: sha('6'),
            local: Some(sha('7')),
        }),
        Action::PublishSentinel(PublishSentinel {
            path: tp("config/managed-config-migrated.json"),
            sources: vec!["models".into(), "vaults".into()],
            objects: [(tp("config/models/a.yaml"), hex('6'))]
                .into_iter()
                .collect(),
        }),
    ]
}

pub fn every_conflict() -> Vec<swamp::plan::Conflict> {
    use swamp::plan::Conflict;
    use swamp::plan::Side;
    use swamp::state::ObstacleKind;
    vec![
        Conflict::DifferentAtTarget(DifferentAtTarget {
            path: tp("data/a/1/raw"),
            source: 0,
            source_sha256: hex('a'),
            target_sha256: hex('b'),
            source_size: None,
            target_size: None,
            diff: Some("--- target\n+++ source\n@@ -1 +1 @@\n-a\n+b\n".into()),
        }),
        Conflict::DifferentAtTarget(DifferentAtTarget {
            path: tp("data/a/1/raw"),
            source: 0,
            source_sha256: hex('a'),
            target_sha256: hex('b'),
            source_size: None,
            target_size: None,
            diff: None,
        }),
        Conflict::Obstacle(Obstacle {
            obstacle: "data".into(),
            what: ObstacleKind::NotADirectory,
            blocked_files: 3,
            example: tp("data/a/1/raw"),
        }),
        Conflict::Obstacle(Obstacle {
            obstacle: "".into(),
            what: ObstacleKind::Symlink,
            blocked_files: 1,
            example: tp("outputs/x"),
        }),
        Conflict::BothChanged(BothChanged {
            path: tp("data/a/1/raw"),
            cache_sha256: sha('a'),
            remote_version: "\"etag\"".into(),
            remote_sha256: Some(sha('b')),
            base_sha256: Some(sha('c')),
            remote_modified: None,
        }),
        Conflict::BothChanged(BothChanged {
            path: tp("data/a/1/raw"),
            cache_sha256: sha('a'),
            remote_version: "7".into(),
            remote_sha256: None,
            base_sha256: None,
            remote_modified: None,
        }),
        Conflict::DeletedAndChanged(DeletedAndChanged {
            path: tp("data/a/1/raw"),
            deleted_in: Side::Cache,
            changed_sha256: Some(sha('d')),
            remote_modified: None,
        }),
        Conflict::DeletedAndChanged(DeletedAndChanged {
            path: tp("data/a/1/raw"),
            deleted_in: Side::Remote,
            changed_sha256: None,
            remote_modified: None,
        }),
        Conflict::SourceDiverged(SourceDiverged {
            path: tp("outputs/x"),
            source: 0,
            cache_sha256: hex('4'),
            remote_sha256: Some(sha('5')),
        }),
        Conflict::DeleteGuard(DeleteGuard {
            guard: "max-delete-percent".into(),
            message: "the plan deletes 80% of the remote (limit 50%)".into(),
        }),
        Conflict::Unsupported(Unsupported {
            path: "data/link".into(),
            source: 0,
            what: ObstacleKind::SpecialFile,
        }),
        Conflict::NotAFile(NotAFile {
            at: "data/m/x/2/raw".into(),
            what: ObstacleKind::Symlink,
            link: Some("../../../../../elsewhere".into()),
            files: 1,
            example: tp("data/m/x/2/raw"),
        }),
        Conflict::NotAFile(NotAFile {
            at: String::new(),
            what: ObstacleKind::NotADirectory,
            link: None,
            files: 3,
            example: tp("outputs/x"),
        }),
        Conflict::ReservedPath(ReservedPath {
            key: "swamp/alpha/data/_catalog.db".into(),
        }),
        Conflict::TooLarge(TooLarge {
            path: tp("files/disk.img"),
            size: 6 << 40,
            limit: 5 << 40,
        }),
        Conflict::Unholdable(Unholdable {
            key: "swamp/alpha/data/m/x".into(),
            other: Some("swamp/alpha/data/m/x/1/raw".into()),
            why: "it is a file, and a directory holding other keys".into(),
        }),
        Conflict::ConfigAlreadyMigrated(ConfigAlreadyMigrated {
            path: tp("config/managed-config-migrated.json"),
            remote_body: "{\"migratedAt\": \"2026-11-30T07:00:00Z\"}".into(),
            local_body: "{\"sources\": []}".into(),
        }),
    ]
}
