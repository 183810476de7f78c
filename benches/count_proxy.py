#!/usr/bin/env python3
"""A counting HTTP/1.1 proxy for benchmarks: forwards TCP byte for byte to an
upstream server and counts the requests (and responses) that pass through.

    python3 benches/count_proxy.py --upstream 127.0.0.1:8333 \
        [--listen 127.0.0.1:0] [--port-file F] [--out counts.json]

Clients talk to it as if it were the server (plain http, no CONNECT): point
an S3 client's endpoint at http://127.0.0.1:<listen port>. Forwarding never
depends on parsing: every byte read from one side is written to the other
unchanged. A parser watches each direction and frames the messages with
HTTP/1.1 rules (request line + headers, then a body delimited by
Content-Length or by chunked transfer coding with its trailers; aws-chunked
is a content coding *inside* such a body, so it needs nothing special), so
any number of requests on one keep-alive connection are counted, whatever
the TCP segmentation. Responses are framed too (HEAD and 1xx/204/304 carry
no body; 100-continue is interim; a response without a length runs to the
connection's close), which gives counts by method and status.

Counts (JSON):
  requests     total requests seen
  by_method    {"GET": n, "PUT": n, ...}
  by_op        S3 operation, inferred for path-style addressing:
               ListObjectsV2, GetObject, HeadObject, PutObject, CopyObject,
               DeleteObject, DeleteObjects, CreateBucket, HeadBucket, ...
  by_status    {"HEAD 404": n, "PUT 200": n, ...}
  connections  client connections accepted
  bytes_up / bytes_down   bytes client->server / server->client
  get_keys     the paths (/bucket/key) of the first 100 GetObject requests
  parse_errors messages the parser could not frame (that connection's
               remaining traffic is still forwarded, but no longer counted)

Control, on the proxy's own port (the first request of a connection whose
path starts with /__ is answered by the proxy, never forwarded):
  GET /__counts          the counts as JSON (also written to --out)
  GET /__counts?reset=1  the counts, then zero them (one atomic step)
  GET /__reset           zero the counts
SIGTERM/SIGINT write the counts to --out (if given) and exit.

`python3 benches/count_proxy.py --self-test` checks the counts against a
test server that counts what it serves (keep-alive, pipelining, chunked
bodies with extensions and trailers, 100-continue, HEAD, 204, byte-by-byte
segmentation, 32 concurrent connections).

Only the standard library; one thread per direction per connection.
"""

import argparse
import json
import os
import signal
import socket
import sys
import threading
from collections import Counter, deque
from urllib.parse import parse_qs, urlsplit

GET_KEYS_KEPT = 100  # GetObject paths kept in the counts, the first ones seen
MAX_HEAD = 1 << 20  # a request/response head larger than this is a parse error


class ParseError(Exception):
    pass


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self._zero()

    def _zero(self):
        self.requests = 0
        self.by_method = Counter()
        self.by_op = Counter()
        self.by_status = Counter()
        self.connections = 0
        self.bytes_up = 0
        self.bytes_down = 0
        self.parse_errors = 0
        self.get_keys = []

    def snapshot(self, reset=False):
        with self.lock:
            doc = {
                "requests": self.requests,
                "by_method": dict(sorted(self.by_method.items())),
                "by_op": dict(sorted(self.by_op.items())),
                "by_status": dict(sorted(self.by_status.items())),
                "connections": self.connections,
                "bytes_up": self.bytes_up,
                "bytes_down": self.bytes_down,
                "parse_errors": self.parse_errors,
                "get_keys": list(self.get_keys),
            }
            if reset:
                self._zero()
            return doc

    def add(self, **kw):
        with self.lock:
            for k, v in kw.items():
                setattr(self, k, getattr(self, k) + v)

    def request(self, method, op, target):
        with self.lock:
            self.requests += 1
            self.by_method[method] += 1
            self.by_op[op] += 1
            if op == "GetObject" and len(self.get_keys) < GET_KEYS_KEPT:
                self.get_keys.append(urlsplit(target).path)

    def response(self, method, status):
        with self.lock:
            self.by_status[f"{method} {status}"] += 1


def s3_op(method, target, headers):
    """The S3 operation of a path-style request (best effort)."""
    parts = urlsplit(target)
    path = parts.path
    query = parse_qs(parts.query, keep_blank_values=True)
    segs = path.lstrip("/").split("/", 1)
    bucket = segs[0]
    key = segs[1] if len(segs) > 1 else ""
    if not bucket:
        return "ListBuckets" if method == "GET" else f"{method} /"
    if not key:
        if method == "GET":
            if "list-type" in query:
                return "ListObjectsV2"
            if "location" in query:
                return "GetBucketLocation"
            if "versions" in query:
                return "ListObjectVersions"
            if "uploads" in query:
                return "ListMultipartUploads"
            if len(query) == 0 or set(query) <= {"prefix", "delimiter", "marker", "max-keys", "encoding-type"}:
                return "ListObjects"
            return "GET bucket?" + ",".join(sorted(query))
        if method == "POST" and "delete" in query:
            return "DeleteObjects"
        return {"PUT": "CreateBucket", "HEAD": "HeadBucket", "DELETE": "DeleteBucket"}.get(
            method, f"{method} bucket")
    if method == "GET":
        return "GetObject"
    if method == "HEAD":
        return "HeadObject"
    if method == "PUT":
        if "x-amz-copy-source" in headers:
            return "UploadPartCopy" if "uploadId" in query else "CopyObject"
        return "UploadPart" if "uploadId" in query else "PutObject"
    if method == "DELETE":
        return "AbortMultipartUpload" if "uploadId" in query else "DeleteObject"
    if method == "POST":
        if "uploads" in query:
            return "CreateMultipartUpload"
        if "uploadId" in query:
            return "CompleteMultipartUpload"
    return f"{method} object"


def parse_head(raw):
    """(start-line tokens, headers dict with lower-case names; repeated
    headers joined with ',')."""
    try:
        text = raw.decode("iso-8859-1")
    except Exception as e:  # pragma: no cover - iso-8859-1 decodes anything
        raise ParseError(str(e))
    lines = text.split("\r\n")
    start = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if not line:
            continue
        if line[0] in " \t":  # obsolete line folding
            raise ParseError("folded header")
        name, sep, value = line.partition(":")
        if not sep:
            raise ParseError(f"bad header line {line[:80]!r}")
        name = name.strip().lower()
        value = value.strip()
        headers[name] = f"{headers[name]},{value}" if name in headers else value
    return start, headers


class Framer:
    """Incremental HTTP/1.1 message framer for one direction of a connection.

    feed() consumes any slice of the byte stream; on_head(start, headers)
    is called once per message head and returns how the body is delimited:
    ("none",), ("length", n), ("chunked",) or ("close",).
    """

    def __init__(self, on_head):
        self.on_head = on_head
        self.state = "head"
        self.buf = bytearray()  # only for heads, chunk-size lines and trailers
        self.remaining = 0

    def feed(self, data):
        i, n = 0, len(data)
        while i < n:
            st = self.state
            if st in ("head", "chunk-size", "trailer"):
                # Look for the end of the head (CRLFCRLF) or of one line.
                sep = b"\r\n\r\n" if st == "head" else b"\r\n"
                start = len(self.buf)
                self.buf += data[i:]
                # The separator may straddle the old buffer and the new data.
                pos = self.buf.find(sep, max(0, start - len(sep) + 1))
                if pos < 0:
                    if len(self.buf) > MAX_HEAD:
                        raise ParseError(f"{st} longer than {MAX_HEAD} bytes")
                    return
                end = pos + len(sep)
                consumed = end - start  # bytes of `data` used by this item
                item = bytes(self.buf[:pos])
                self.buf.clear()
                i += consumed
                if st == "head":
                    # Stray CRLFs before a request line are allowed (RFC 9112 2.2).
                    item = item.lstrip(b"\r\n")
                    if not item:
                        continue
                    self._body(self.on_head(item))
                elif st == "chunk-size":
                    size_txt = item.split(b";", 1)[0].strip()
                    try:
                        size = int(size_txt, 16)
                    except ValueError:
                        raise ParseError(f"bad chunk size {size_txt[:40]!r}")
                    if size == 0:
                        self.state = "trailer"
                    else:
                        self.state, self.remaining = "chunk-data", size + 2  # + CRLF
                else:  # trailer: lines until an empty one
                    if item == b"":
                        self.state = "head"
            elif st in ("body", "chunk-data"):
                take = min(self.remaining, n - i)
                i += take
                self.remaining -= take
                if self.remaining == 0:
                    self.state = "head" if st == "body" else "chunk-size"
            elif st == "close":
                return
            else:  # pragma: no cover
                raise ParseError(f"bad state {st}")
        # Note: the CRLF after chunk data is skipped, not checked.

    def _body(self, kind):
        if kind[0] == "none":
            self.state = "head"
        elif kind[0] == "length":
            self.state, self.remaining = ("body", kind[1]) if kind[1] > 0 else ("head", 0)
        elif kind[0] == "chunked":
            self.state = "chunk-size"
        elif kind[0] == "close":
            self.state = "close"
        else:  # pragma: no cover
            raise ParseError(f"bad body kind {kind}")


def body_kind(headers, request):
    te = headers.get("transfer-encoding", "")
    if te:
        codings = [c.strip().lower() for c in te.split(",") if c.strip()]
        if codings and codings[-1] == "chunked":
            return ("chunked",)
        # Not chunked last: a request is malformed, a response runs to close.
        if request:
            raise ParseError(f"request with transfer-encoding {te!r}")
        return ("close",)
    if "content-length" in headers:
        values = {v.strip() for v in headers["content-length"].split(",")}
        if len(values) != 1 or not next(iter(values)).isdigit():
            raise ParseError(f"bad content-length {headers['content-length']!r}")
        return ("length", int(next(iter(values))))
    return ("none",) if request else ("close",)


class Connection:
    """One client connection and its upstream connection."""

    def __init__(self, proxy, client, first_data):
        self.proxy = proxy
        self.stats = proxy.stats
        self.client = client
        self.methods = deque()  # methods of requests awaiting a response
        self.cond = threading.Condition()
        self.req_framer = Framer(self._on_request)
        self.resp_framer = Framer(self._on_response)
        self.counting = True
        self.first_data = first_data

    # -- parsing callbacks
    def _on_request(self, raw):
        start, headers = parse_head(raw)
        if len(start) != 3 or not start[2].startswith("HTTP/1."):
            raise ParseError(f"bad request line {raw[:80]!r}")
        method, target = start[0], start[1]
        self.stats.request(method, s3_op(method, target, headers), target)
        with self.cond:
            self.methods.append(method)
            self.cond.notify_all()
        return body_kind(headers, request=True)

    def _on_response(self, raw):
        start, headers = parse_head(raw)
        if len(start) < 2 or not start[0].startswith("HTTP/1.") or not start[1].isdigit():
            raise ParseError(f"bad status line {raw[:80]!r}")
        status = int(start[1])
        if 100 <= status < 200 and status != 101:
            return ("none",)  # interim (100 Continue): the real answer follows
        with self.cond:
            # The request is always parsed before it is forwarded, so its
            # method is queued before the server can answer it.
            if not self.methods:
                self.cond.wait(timeout=5)
            method = self.methods.popleft() if self.methods else "?"
        self.stats.response(method, status)
        if status == 101:
            return ("close",)  # protocol switch: stop framing
        if method == "HEAD" or status in (204, 304):
            return ("none",)
        return body_kind(headers, request=False)

    def _parse(self, framer, data):
        if not self.counting:
            return
        try:
            framer.feed(data)
        except ParseError as e:
            self.counting = False
            self.stats.add(parse_errors=1)
            print(f"count_proxy: parse error ({e}); forwarding the rest uncounted",
                  file=sys.stderr, flush=True)

    # -- pumping
    def run(self):
        try:
            up = socket.create_connection(self.proxy.upstream)
        except OSError as e:
            print(f"count_proxy: cannot reach upstream {self.proxy.upstream}: {e}",
                  file=sys.stderr, flush=True)
            self.client.close()
            return
        for s in (self.client, up):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.up = up
        t = threading.Thread(target=self._pump_down, daemon=True)
        t.start()
        self._pump_up()
        t.join()
        for s in (self.client, up):
            try:
                s.close()
            except OSError:
                pass

    def _pump_up(self):
        data = self.first_data
        try:
            while True:
                if data:
                    self._parse(self.req_framer, data)
                    self.stats.add(bytes_up=len(data))
                    self.up.sendall(data)
                data = self.client.recv(65536)
                if not data:
                    break
        except OSError:
            pass
        try:
            self.up.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def _pump_down(self):
        try:
            while True:
                data = self.up.recv(65536)
                if not data:
                    break
                self._parse(self.resp_framer, data)
                self.stats.add(bytes_down=len(data))
                self.client.sendall(data)
        except OSError:
            pass
        try:
            self.client.shutdown(socket.SHUT_WR)
        except OSError:
            pass


class Proxy:
    def __init__(self, listen, upstream, out):
        self.stats = Stats()
        self.upstream = upstream
        self.out = out
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(listen)
        self.sock.listen(512)
        self.port = self.sock.getsockname()[1]

    def write_out(self, doc):
        if not self.out:
            return
        tmp = f"{self.out}.tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")
        os.replace(tmp, self.out)

    def serve_forever(self):
        while True:
            client, _ = self.sock.accept()
            threading.Thread(target=self._handle, args=(client,), daemon=True).start()

    def _handle(self, client):
        # Read the first head to tell control requests from traffic; the
        # bytes read are forwarded as they are if it is traffic.
        data = b""
        try:
            while b"\r\n\r\n" not in data and len(data) < MAX_HEAD:
                more = client.recv(65536)
                if not more:
                    break
                data += more
        except OSError:
            client.close()
            return
        if not data:
            client.close()
            return
        line = data.split(b"\r\n", 1)[0].split(b" ")
        if len(line) == 3 and line[1].startswith(b"/__"):
            self._control(client, line[0].decode("latin-1"), line[1].decode("latin-1"))
            return
        self.stats.add(connections=1)
        Connection(self, client, data).run()

    def _control(self, client, method, target):
        parts = urlsplit(target)
        query = parse_qs(parts.query)
        if parts.path == "/__counts":
            doc = self.stats.snapshot(reset=query.get("reset", ["0"])[0] in ("1", "true", "yes"))
            self.write_out(doc)
            status, body = "200 OK", json.dumps(doc, indent=1, sort_keys=True) + "\n"
        elif parts.path == "/__reset":
            self.stats.snapshot(reset=True)
            status, body = "200 OK", "{}\n"
        else:
            status, body = "404 Not Found", '{"error": "unknown control path"}\n'
        payload = body.encode()
        head = (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n").encode()
        try:
            client.sendall(head + (payload if method != "HEAD" else b""))
        except OSError:
            pass
        client.close()


def hostport(s, default_host="127.0.0.1"):
    host, _, port = s.rpartition(":")
    return (host or default_host, int(port))

# ---------------------------------------------------------------- self-test

def self_test():
    """Runs this proxy (as a subprocess, as the benchmark does) in front of
    a small HTTP/1.1 server that counts what it serves, drives it with
    keep-alive, pipelined, chunked (with extensions and trailers),
    100-continue, HEAD, 204, close-delimited and byte-by-byte traffic from
    32 connections at once, and compares the proxy's counts with the
    server's. Exit status 0 when they agree."""
    import http.client
    import random
    import subprocess
    import tempfile
    import time

    truth, truth_status, tlock = Counter(), Counter(), threading.Lock()

    def serve(c):
        f = c.makefile("rb")
        try:
            while True:
                line = f.readline()
                if not line:
                    return
                if line == b"\r\n":
                    continue
                method, target, _ = line.decode().split(" ", 2)
                hdrs = {}
                while True:
                    h = f.readline()
                    if h in (b"\r\n", b""):
                        break
                    k, v = h.decode().split(":", 1)
                    hdrs[k.strip().lower()] = v.strip()
                if hdrs.get("expect", "").lower() == "100-continue":
                    c.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
                body = b""
                if hdrs.get("transfer-encoding", "").lower().endswith("chunked"):
                    while True:
                        size = int(f.readline().split(b";")[0], 16)
                        if size == 0:
                            while f.readline() not in (b"\r\n", b""):
                                pass
                            break
                        body += f.read(size)
                        f.readline()
                elif "content-length" in hdrs:
                    body = f.read(int(hdrs["content-length"]))
                status = 404 if "notfound" in target else 204 if method == "DELETE" else 200
                with tlock:
                    truth[method] += 1
                    truth_status[f"{method} {status}"] += 1
                payload = b"x" * random.randint(0, 5000) + body[:100]
                if status == 204:
                    c.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")
                elif method == "HEAD":
                    c.sendall(b"HTTP/1.1 %d X\r\nContent-Length: 12345\r\n\r\n" % status)
                elif "mode=chunked" in target:
                    out = b"HTTP/1.1 %d X\r\nTransfer-Encoding: chunked\r\n\r\n" % status
                    for i in range(0, len(payload), 777):
                        part = payload[i:i + 777]
                        out += b"%x;ext=1\r\n" % len(part) + part + b"\r\n"
                    c.sendall(out + b"0\r\nX-Trailer: yes\r\n\r\n")
                elif "mode=close" in target:
                    c.sendall(b"HTTP/1.1 %d X\r\nConnection: close\r\n\r\n" % status + payload)
                    c.shutdown(socket.SHUT_WR)
                    return
                else:
                    c.sendall(b"HTTP/1.1 %d X\r\nContent-Length: %d\r\n\r\n" % (status, len(payload))
                              + payload)
        finally:
            c.close()

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)

    def accept_loop():
        while True:
            conn, _ = srv.accept()
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept_loop, daemon=True).start()

    tmp = tempfile.mkdtemp(prefix="count-proxy-test.")
    port_file, out = os.path.join(tmp, "port"), os.path.join(tmp, "counts.json")
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--upstream",
                             f"127.0.0.1:{srv.getsockname()[1]}", "--port-file", port_file,
                             "--out", out])
    try:
        for _ in range(100):
            if os.path.exists(port_file):
                break
            time.sleep(0.05)
        port = int(open(port_file).read())

        def control(path):
            c = http.client.HTTPConnection("127.0.0.1", port)
            c.request("GET", path)
            doc = json.loads(c.getresponse().read())
            c.close()
            return doc

        # 1. one keep-alive connection, every method and body framing
        c = http.client.HTTPConnection("127.0.0.1", port)
        for i in range(300):
            m = random.choice(["GET", "HEAD", "PUT", "POST", "DELETE"])
            path = f"/b/k{i}?mode={random.choice(['len', 'chunked'])}" + ("&notfound" if i % 17 == 0 else "")
            if m in ("PUT", "POST"):
                data = os.urandom(random.randint(0, 20000)).hex().encode()
                if random.random() < 0.5:
                    chunks = (data[j:j + 1000] for j in range(0, len(data), 1000))
                    c.request(m, path, body=chunks, headers={"Transfer-Encoding": "chunked"},
                              encode_chunked=True)
                else:
                    c.request(m, path, body=data,
                              headers={"Expect": "100-continue"} if random.random() < 0.3 else {})
            else:
                c.request(m, path)
            c.getresponse().read()
        c.close()

        # 2. pipelined raw requests, sent a byte at a time, then in random slices
        raw = b""
        for i in range(40):
            raw += [
                b"GET /b/x HTTP/1.1\r\nHost: h\r\n\r\n",
                b"PUT /b/y HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"5;chunk-signature=abc\r\nhello\r\n3\r\n\r\n\r\r\n"
                b"0\r\nx-amz-checksum-crc32:AAAA\r\nx-amz-trailer-signature:zz\r\n\r\n",
                b"POST /b/?delete HTTP/1.1\r\nHost: h\r\nContent-Length: 24\r\n\r\n"
                b"GET /b/fake HTTP/1.1\r\n\r\n",  # a body that looks like a request
                b"\r\nHEAD /b/z HTTP/1.1\r\nHost: h\r\n\r\n",
            ][i % 4]
        for step in (lambda: 1, lambda: random.randint(1, 200)):
            sock = socket.create_connection(("127.0.0.1", port))
            i = 0
            while i < len(raw):
                n = step()
                sock.sendall(raw[i:i + n])
                i += n
            sock.shutdown(socket.SHUT_WR)
            while sock.recv(65536):
                pass
            sock.close()

        # 3. a close-delimited response
        c = http.client.HTTPConnection("127.0.0.1", port)
        c.request("GET", "/b/q?mode=close")
        c.getresponse().read()
        c.close()

        # 4. 32 concurrent keep-alive connections
        def worker():
            c = http.client.HTTPConnection("127.0.0.1", port)
            for i in range(50):
                c.request("PUT", f"/b/c{i}", body=os.urandom(4096))
                c.getresponse().read()
                c.request("GET", f"/b/c{i}?mode=chunked")
                c.getresponse().read()
            c.close()

        workers = [threading.Thread(target=worker) for _ in range(32)]
        for t in workers:
            t.start()
        for t in workers:
            t.join()

        got = control("/__counts?reset=1")
        after = control("/__counts")
    finally:
        proc.terminate()
        proc.wait()
    final = json.load(open(out))
    checks = [
        ("requests by method", got["by_method"], dict(truth)),
        ("responses by method and status", got["by_status"], dict(truth_status)),
        ("parse errors", got["parse_errors"], 0),
        ("DeleteObjects ops", got["by_op"].get("DeleteObjects"), 20),
        ("counts after ?reset=1", after["requests"], 0),
        ("counts written on SIGTERM", final["requests"], 0),
    ]
    failed = [(name, a, b) for name, a, b in checks if a != b]
    for name, a, b in failed:
        print(f"FAIL {name}: proxy {a}, expected {b}", file=sys.stderr)
    print(f"{'FAIL' if failed else 'ok'}: {sum(truth.values())} requests over "
          f"{got['connections']} connections, {got['bytes_up'] + got['bytes_down']} bytes")
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--upstream", help="HOST:PORT of the real server")
    ap.add_argument("--listen", default="127.0.0.1:0", help="HOST:PORT (port 0: any free one)")
    ap.add_argument("--port-file", help="write the listening port here once ready")
    ap.add_argument("--out", help="write the counts (JSON) here on SIGTERM and on GET /__counts")
    ap.add_argument("--self-test", action="store_true",
                    help="check the counts against a test server and exit")
    args = ap.parse_args()
    if args.self_test:
        sys.exit(self_test())
    if not args.upstream:
        ap.error("--upstream is required")

    proxy = Proxy(hostport(args.listen), hostport(args.upstream), args.out)

    def stop(signum, _frame):
        proxy.write_out(proxy.stats.snapshot())
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if args.port_file:
        tmp = f"{args.port_file}.tmp"
        with open(tmp, "w") as f:
            f.write(f"{proxy.port}\n")
        os.replace(tmp, args.port_file)
    print(f"count_proxy: 127.0.0.1:{proxy.port} -> {args.upstream}", file=sys.stderr, flush=True)
    proxy.serve_forever()


if __name__ == "__main__":
    main()
