#!/usr/bin/env python3
"""An attacker's run against a real `storeledger serve`, on a fresh ledger in a temporary directory.

Each phase does what a hostile or careless client on the same host can do, and checks that the server still
answers a normal client afterwards, that no acknowledged input is lost, and that the ledger verifies. The summary
gives the figures: connections held, bad inputs tried, crashes, 5xx answers, inputs acknowledged and lost.

Usage: tools/adversary/run.sh [--binary PATH] [--quick]
Only the Python standard library; loopback Unix sockets only; every loop is bounded in count and time.
"""

import argparse
import json
import random
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

RESULTS = []  # (phase, ok, detail)
FIGURES = {"connections held": 0, "bad inputs tried": 0, "crashes": 0, "5xx answers": 0, "acknowledged": 0,
           "acknowledged lost": 0}


def record(phase, ok, detail):
    RESULTS.append((phase, ok, detail))
    print(f"{'ok  ' if ok else 'FAIL'} {phase}: {detail}", flush=True)


class Server:
    """One `storeledger serve` process on DATA, its socket and log."""

    def __init__(self, binary, data, config):
        self.binary, self.data, self.config = binary, data, config
        self.socket = os.path.join(data, "ledger.sock")
        self.log = open(os.path.join(os.path.dirname(data), "serve.log"), "ab")
        self.proc = None

    def start(self):
        env = dict(os.environ, STORELEDGER_LOG_LEVEL="warning")
        self.proc = subprocess.Popen(
            [self.binary, "serve", "--data", self.data, "--config", self.config], stdout=subprocess.DEVNULL,
            stderr=self.log, env=env)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"serve exited with {self.proc.returncode}")
            try:
                status, _, _ = request(self.socket, "GET", "/v1/health", timeout=2)
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError("serve did not answer within 60 s")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill9()


def connect(path, timeout=5):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s


def read_answer(s, timeout=5):
    """One HTTP answer with a Content-Length body: (status, headers, body); status 0 when closed or timed out."""
    s.settimeout(timeout)
    data = b""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if b"\r\n\r\n" in data:
            head, _, rest = data.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            status = int(lines[0].split(" ")[1]) if len(lines[0].split(" ")) > 1 else 0
            headers = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}
            length = int(headers.get("content-length", "0") or 0)
            if len(rest) >= length:
                return status, headers, rest[:length]
        try:
            chunk = s.recv(65536)
        except (socket.timeout, OSError):
            break
        if not chunk:
            break
        data += chunk
    return 0, {}, data


def request(path, method, target, body=None, headers=None, timeout=5):
    s = connect(path, timeout)
    try:
        h = {"Host": "ledger"}
        if body is not None:
            h["Content-Type"] = "application/json"
            h["Content-Length"] = str(len(body))
        h.update(headers or {})
        head = f"{method} {target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items()) + "\r\n"
        s.sendall(head.encode() + (body or b""))
        return read_answer(s, timeout)
    finally:
        s.close()


def envelope(tid, user="u1"):
    t = 1_700_000_000_000
    return json.dumps({"type": "transaction", "appUserId": user, "receivedAt": t, "payload": {
        "transactionId": tid, "originalTransactionId": tid, "productId": "com.example.premium.monthly",
        "purchaseDate": t, "expiresDate": t + 2_592_000_000, "type": "Auto-Renewable Subscription",
        "environment": "Production"}}).encode()


def normal_client(server, count=64):
    """`count` health requests, each on a connection of its own: how many answered 200, and the slowest (s)."""
    ok, slowest = 0, 0.0
    for _ in range(count):
        t0 = time.time()
        try:
            status, _, _ = request(server.socket, "GET", "/v1/health", timeout=3)
        except OSError:
            status = 0
        slowest = max(slowest, time.time() - t0)
        ok += status == 200
    return ok, slowest


def check_normal(server, phase, count=64):
    ok, slowest = normal_client(server, count)
    record(f"{phase}: a normal client after it", ok == count and server.alive(),
           f"{ok}/{count} answered, slowest {slowest * 1000:.0f} ms, server {'running' if server.alive() else 'DEAD'}")
    if not server.alive():
        FIGURES["crashes"] += 1
        server.start()


# MARK: - Phases

def kill_nine_under_writers(server, binary, seconds):
    """8 writers post inputs as fast as acknowledged; kill -9 mid-stream; every acknowledged id must be there."""
    acked, lock, stop = [], threading.Lock(), threading.Event()

    def writer(w):
        i = 0
        while not stop.is_set():
            tid = f"9{w}{i:08d}"
            try:
                status, _, _ = request(server.socket, "POST", "/v1/events", envelope(tid), timeout=5)
            except OSError:
                status = 0
            if status == 200:
                with lock:
                    acked.append(tid)
            i += 1

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    time.sleep(seconds)
    server.kill9()
    stop.set()
    for t in threads:
        t.join()
    server.start()
    FIGURES["acknowledged"] += len(acked)
    missing = 0
    for tid in acked:
        status, _, body = request(server.socket, "GET", f"/v1/transactions/{tid}", timeout=5)
        if status != 200 or tid.encode() not in body:
            missing += 1
    FIGURES["acknowledged lost"] += missing
    record("kill -9 under 8 writers", missing == 0, f"{len(acked)} acknowledged, {missing} lost")
    server.stop()
    verify = subprocess.run([binary, "verify", "--data", server.data], capture_output=True, text=True)
    record("kill -9 under 8 writers: verify", verify.returncode == 0, (verify.stdout + verify.stderr).strip()[:160])
    server.start()


HOSTILE_BODIES = [
    b"", b"{", b"}", b"[]", b"null", b"{}x", b"{}}", b'{"type":"transaction"}', b'{"payload":1}',
    b'{"type":"receipt","payload":{"status":21007}}', b'{"type":"receipt","payload":{"status":"0"}}',
    b'{"transactionId":null,"originalTransactionId":"1"}', b'{"transactionId":[],"originalTransactionId":"1"}',
    b'{"transactionId":"1","originalTransactionId":"1","productId":"p","purchaseDate":-9223372036854775808}',
    b'{"transactionId":"1","originalTransactionId":"1","productId":"p","purchaseDate":1e400}',
    b'{"transactionId":"1","originalTransactionId":"1","productId":"p","purchaseDate":1700000000000,"price":-9223372036854775808}',
    b'{"signedPayload":"a.b.c"}', b'{"signedPayload":"eyJhbGciOiJub25lIn0.e30."}',
    b'{"signedPayload":"' + b"A" * 100_000 + b'"}', b"\xff\xfe\x00\x00", b'{"a":' * 10_000, b"[" * 100_000,
    b'{"notification_type":"REFUND","unified_receipt":{"latest_receipt_info":[{"transaction_id":{}}]}}',
    b'{"type":"binding","payload":{"appUserId":"' + b"u" * 5000 + b'","originalTransactionId":"1"}}',
    b'{"transactionId":"1","originalTransactionId":"1","productId":"' + b"p" * 2_000_000 + b'","purchaseDate":1700000000000}',
]


def hostile_bodies(server):
    """Every hostile body on every write route: a coded 4xx each, never a 5xx, never a crash."""
    routes = ["/v1/events", "/v1/apple/notifications", "/v1/apple/receipts?appUserId=a", "/v1/apple/transactions",
              "/v1/bindings", "/v1/customers/a/grants"]
    bad_status, tried = [], 0
    for route in routes:
        for body in HOSTILE_BODIES:
            tried += 1
            try:
                status, _, answer = request(server.socket, "POST", route, body, timeout=10)
            except OSError:
                status, answer = 0, b""
            if status >= 500 or status == 0 or (status >= 400 and b'"code"' not in answer):
                bad_status.append((route, status, body[:40]))
            if not server.alive():
                FIGURES["crashes"] += 1
                server.start()
    FIGURES["bad inputs tried"] += tried
    FIGURES["5xx answers"] += sum(1 for _, s, _ in bad_status if s >= 500)
    record("hostile bodies", not bad_status, f"{tried} tried, {len(bad_status)} not a coded 4xx {bad_status[:3]}")
    check_normal(server, "hostile bodies")


CRASHING_READS = [
    "/v1/subscriptions/1/timeline.svg?at=-9223372036854775808", "/v1/subscriptions/1/timeline.html?at=-9223372036854775807",
    "/v1/subscriptions/1/timeline.svg?at=9223372036854775807", "/v1/events?follow=true&timeout=1e16",
    "/v1/events?follow=true&timeout=inf", "/v1/events?follow=true&timeout=nan", "/v1/lifecycle?follow=true&timeout=1e308",
    "/v1/events?after=18446744073709551615", "/v1/events?limit=9223372036854775807", "/v1/customers/u1?at=1e99",
    "/v1/customers/u1?asOf=-1", "/v1/customers/u1?at=1700000000000&at=1", "/v1/revenue?from=-9223372036854775808&to=9223372036854775807",
    "/v1/subscriptions/%ff%fe", "/v1/customers/" + "x" * 10_000,
]


def crashing_reads(server):
    bad = []
    for target in CRASHING_READS:
        FIGURES["bad inputs tried"] += 1
        try:
            status, _, answer = request(server.socket, "GET", target, timeout=10)
        except OSError:
            status, answer = 0, b""
        if not server.alive():
            FIGURES["crashes"] += 1
            bad.append((target, "server died"))
            server.start()
        elif status >= 500 or status == 0:
            FIGURES["5xx answers"] += status >= 500
            bad.append((target, status))
    record("reads with extreme parameters", not bad, f"{len(CRASHING_READS)} tried, {len(bad)} bad {bad[:3]}")
    check_normal(server, "extreme reads")


def idle_flood(server, count):
    """`count` connections opened and left idle by one client."""
    held, refused = [], 0
    for _ in range(count):
        try:
            held.append(connect(server.socket, 2))
        except OSError:
            refused += 1  # the listen queue was full for a moment: the next one may get in
            time.sleep(0.01)
    FIGURES["connections held"] = max(FIGURES["connections held"], len(held))
    time.sleep(0.5)
    ok, slowest = normal_client(server, 128)
    record("idle connections", ok == 128,
           f"{len(held)} opened ({refused} connects failed); a normal client: {ok}/128 answered, slowest {slowest * 1000:.0f} ms")
    for s in held:
        s.close()


def slowloris(server, count, seconds):
    """`count` connections each sending a request head one byte at a time: closed by the header timeout."""
    held = []
    for _ in range(count):
        try:
            s = connect(server.socket, 2)
            s.sendall(b"G")
            held.append(s)
        except OSError:
            break
    FIGURES["connections held"] = max(FIGURES["connections held"], len(held))
    deadline = time.time() + seconds
    while time.time() < deadline:
        for s in held:
            try:
                s.sendall(b"E")
            except OSError:
                pass
        time.sleep(1)
    ok, slowest = normal_client(server, 64)
    record("slowloris heads", ok == 64, f"{len(held)} trickling heads for {seconds} s; a normal client: {ok}/64, slowest {slowest * 1000:.0f} ms")
    for s in held:
        s.close()


def trickle_as_nobody(server, count, seconds):
    """A user who may not write trickles `count` bodies; root's writes must all be acknowledged."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        record("bodies trickled by nobody", True, "skipped: needs root and setpriv")
        return
    script = f"""
import socket, time
held = []
for i in range({count}):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect({server.socket!r})
        s.sendall(b"POST /v1/events HTTP/1.1\\r\\nHost: l\\r\\nContent-Type: application/json\\r\\nContent-Length: 1000\\r\\n\\r\\n{{")
        held.append(s)
    except OSError:
        pass
print(len(held), flush=True)
end = time.time() + {seconds}
while time.time() < end:
    for s in held:
        try: s.send(b" ")
        except OSError: pass
    time.sleep(5)
"""
    path = os.path.join(os.path.dirname(server.data), "trickle.py")
    with open(path, "w") as f:
        f.write(script)
    os.chmod(path, 0o644)
    attacker = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", path],
                                stdout=subprocess.PIPE, text=True)
    opened = int((attacker.stdout.readline() or "0").strip() or 0)
    FIGURES["connections held"] = max(FIGURES["connections held"], opened)
    time.sleep(1)
    statuses = []
    for i in range(100):
        status, _, _ = request(server.socket, "POST", "/v1/events", envelope(f"77{i:06d}", "root"), timeout=10)
        statuses.append(status)
    FIGURES["acknowledged"] += statuses.count(200)
    attacker.kill()
    attacker.wait()
    record("bodies trickled by nobody", statuses.count(200) == 100,
           f"nobody held {opened}; root's writes: {statuses.count(200)}/100 acknowledged, statuses {sorted(set(statuses))}")


def encoded_ids(server):
    """Ids as clients send them: each written percent-encoded (and as-is where the grammar allows) must be the same
    customer; targets that do not decode must be refused with invalid_query, and nothing appended."""
    from urllib.parse import quote
    ids = ["user+1@example.org", "o/x 1", "100%", "Zo\u00eb", "\U0001F98A fox"]
    same, tried = 0, 0
    for i, user in enumerate(ids):
        body = envelope(f"88{i:06d}", user)
        status, _, _ = request(server.socket, "POST", "/v1/events", body)
        FIGURES["acknowledged"] += status == 200
        enc = quote(user, safe="")
        answers = [request(server.socket, "GET", f"/v1/customers/{enc}?at=1700000100000")]
        if all(c.isascii() and (c.isalnum() or c in "-._~!$&'()*+,;=:@") for c in user):
            answers.append(request(server.socket, "GET", f"/v1/customers/{user}?at=1700000100000"))
        for st, _, b in answers:
            tried += 1
            doc = json.loads(b or b"{}") if st == 200 else {}
            same += st == 200 and doc.get("appUserId") == user and doc.get("subscriptions") == [f"88{i:06d}"]
    record("ids sent percent-encoded", same == tried, f"{same}/{tried} answers name the customer and its subscription")
    before = request(server.socket, "GET", "/v1/health")[2]
    bad = ["/v1/customers/a%zz", "/v1/customers/a%", "/v1/customers/a%00b", "/v1/customers/%C3%28",
           "/v1/subscriptions/%FF", "/v1/customers/u1?at=%zz", "/v1/events?after=1%00"]
    refused = 0
    for target in bad:
        st, _, b = request(server.socket, "GET", target)
        FIGURES["bad inputs tried"] += 1
        FIGURES["5xx answers"] += st >= 500
        refused += st == 400 and b'"invalid_query"' in b
    for target in ["/v1/customers/a%zz/grants", "/v1/events?appUserId=%FF"]:
        st, _, b = request(server.socket, "POST", target, envelope("89000001"))
        FIGURES["bad inputs tried"] += 1
        FIGURES["5xx answers"] += st >= 500
        refused += st == 400 and b'"invalid_query"' in b
    after = request(server.socket, "GET", "/v1/health")[2]
    record("targets that do not decode", refused == len(bad) + 2 and before == after,
           f"{refused}/{len(bad) + 2} refused with invalid_query; log {'unchanged' if before == after else 'CHANGED'}")


def followers_closed_early(server, count):
    """A reader that may not write opens `count` follow requests and closes each at once, or after the first bytes,
    with or without a reset: every follower's place must come back, and root's follower must be answered 200."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        record("followers closed early", True, "skipped: needs root and setpriv")
        return
    script = f"""
import socket, struct, time
opened = 0
routes = [b"/v1/events?after=0&follow=true", b"/v1/lifecycle?after=0&follow=true"]
end = time.time() + 150
for i in range({count}):
    if time.time() > end:
        break
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    try:
        s.connect({server.socket!r})
        opened += 1
        s.sendall(b"GET " + routes[i % 2] + b" HTTP/1.1\\r\\nHost: l\\r\\n\\r\\n")
        step = (i // 2) % 4
        if step >= 2:
            s.recv(64)
        if step % 2 == 1:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    finally:
        s.close()
print(opened, flush=True)
"""
    path = os.path.join(os.path.dirname(server.data), "followers.py")
    with open(path, "w") as f:
        f.write(script)
    os.chmod(path, 0o644)
    t0 = time.time()
    attacker = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", path],
                              capture_output=True, text=True, timeout=200)
    opened = int((attacker.stdout.strip() or "0"))
    took = time.time() - t0
    gauge, deadline = None, time.time() + 60
    while time.time() < deadline:
        st, _, body = request(server.socket, "GET", "/metrics")
        line = next((l for l in body.decode().splitlines() if l.startswith("storeledger_event_followers ")), None)
        gauge = float(line.split()[-1]) if line else None
        if gauge == 0:
            break
        time.sleep(0.2)
    st, _, _ = request(server.socket, "GET", "/v1/events?after=0&follow=true&timeout=0.5", timeout=10)
    record("followers closed early", gauge == 0 and st == 200,
           f"nobody opened and closed {opened} follows in {took:.0f} s; followers counted after: {gauge}; root's follower: {st}")


def whole_request_deadline(server):
    s = connect(server.socket, 60)
    s.sendall(b"POST /v1/events HTTP/1.1\r\nHost: l\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
    t0 = time.time()
    status = 0
    while time.time() - t0 < 60:
        try:
            s.sendall(b" ")
        except OSError:
            break
        s.settimeout(2)
        try:
            data = s.recv(4096)
            if not data:
                break
            status = int(data.split(b" ")[1])
            break
        except socket.timeout:
            continue
        except OSError:
            break
    held = time.time() - t0
    record("a body trickled a byte every 2 s", status == 408 and held < 45, f"answered {status} after {held:.1f} s")
    for declared in ["9223372036854775807", "18446744073709551616"]:
        s = connect(server.socket, 10)
        s.sendall(f"POST /v1/events HTTP/1.1\r\nHost: l\r\nContent-Type: application/json\r\nContent-Length: {declared}\r\n\r\n".encode())
        t0 = time.time()
        status, _, _ = read_answer(s, 10)
        record(f"Content-Length {declared}", status in (400, 413) and time.time() - t0 < 2,
               f"answered {status} after {time.time() - t0:.2f} s")
    # A chunk of 2^64 bytes or more does not parse: refused at once. One of 2^63 the decoder takes; its bytes never
    # come, so it is a stalled body, ended by the request deadline.
    for size, expected, within in [("10000000000000000", 400, 2), ("8000000000000000", 408, 45)]:
        s = connect(server.socket, 60)
        s.sendall(("POST /v1/events HTTP/1.1\r\nHost: l\r\nContent-Type: application/json\r\n"
                   f"Transfer-Encoding: chunked\r\n\r\n{size}\r\n").encode())
        t0 = time.time()
        status, _, _ = read_answer(s, 60)
        record(f"a chunk of 0x{size} bytes", status == expected and time.time() - t0 < within,
               f"answered {status} after {time.time() - t0:.2f} s")


def http10(server):
    s = connect(server.socket, 5)
    s.sendall(b"GET /v1/health HTTP/1.0\r\nHost: l\r\n\r\n")
    data, t0 = b"", time.time()
    while time.time() - t0 < 5:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    closed = time.time() - t0 < 5
    record("HTTP/1.0 request", data.startswith(b"HTTP/1.1 200") and closed, f"answered, connection {'closed' if closed else 'held open'}")


def emptied_data_file(server, binary):
    server.stop()
    data_file = os.path.join(server.data, "data.mdb")
    copy = data_file + ".kept"
    shutil.copy(data_file, copy)
    os.truncate(data_file, 0)
    out = subprocess.run([binary, "serve", "--data", server.data, "--config", server.config], capture_output=True,
                         text=True, timeout=60)
    refused = out.returncode == 1 and "corrupted" in out.stderr
    record("an emptied data file", refused, (out.stderr.strip().splitlines() or ["(nothing)"])[-1][:160])
    os.replace(copy, data_file)
    server.start()


def damaged_pages(server, binary, trials):
    """The data file damaged at random between its meta pages and its end (the server stopped): every command either
    answers or refuses with `corrupted`, exit 1; none ends by a signal. Then the file is put back."""
    server.stop()
    data_file = os.path.join(server.data, "data.mdb")
    kept = open(data_file, "rb").read()
    page = 4096
    rng = random.Random(31)
    commands = [["stats"], ["customer", "u1"], ["events", "--limit", "50"], ["verify"], ["export"],
                ["timeline", "o1"], ["replay", "--check"]]
    runs = refused = signalled = 0
    worst = ""
    for trial in range(trials):
        damaged = bytearray(kept)
        if trial % 2 == 0:
            # Every page's kind, in the middle half of the file: inner pages of every tree among them.
            for n in range(len(damaged) // page // 4, 3 * len(damaged) // page // 4):
                damaged[n * page + 10:n * page + 12] = bytes([rng.randrange(256), 0])
        else:
            for _ in range(64):
                at = rng.randrange(2 * page, len(damaged))
                damaged[at] = rng.randrange(256)
        with open(data_file, "wb") as f:
            f.write(damaged)
        for command in commands:
            out = subprocess.run([binary] + command + ["--data", server.data], capture_output=True, text=True,
                                 timeout=120)
            runs += 1
            if out.returncode < 0:
                signalled += 1
                worst = f"{' '.join(command)} ended by signal {-out.returncode}"
            elif out.returncode != 0:
                if "corrupted" in out.stderr:
                    refused += 1
                elif out.returncode != 1 or "error: " not in out.stderr:
                    signalled += 1
                    worst = f"{' '.join(command)} exit {out.returncode}: {out.stderr.strip()[:120]}"
    with open(data_file, "wb") as f:
        f.write(kept)
    FIGURES["crashes"] += signalled
    record("damaged data files", signalled == 0,
           f"{trials} files x {len(commands)} commands: {runs} runs, {refused} refused as corrupted, "
           f"{signalled} crashed {worst}")
    server.start()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--quick", action="store_true", help="shorter phases (a smoke run)")
    args = parser.parse_args()
    quick = args.quick
    tmp = tempfile.mkdtemp(prefix="sl-adversary-")
    os.chmod(tmp, 0o755)
    data = os.path.join(tmp, "ledger")
    os.makedirs(data)
    os.chmod(data, 0o755)
    config = os.path.join(tmp, "config.json")
    uid = os.geteuid()
    with open(config, "w") as f:
        json.dump({"socket": {"mode": "0666", "writers": {"uids": [uid]}},
                   "limits": {"headerTimeoutSeconds": 5, "requestTimeoutSeconds": 20}}, f)
    server = Server(args.binary, data, config)
    started = time.time()
    try:
        server.start()
        kill_nine_under_writers(server, args.binary, 3 if quick else 15)
        hostile_bodies(server)
        crashing_reads(server)
        idle_flood(server, 600 if quick else 2000)
        slowloris(server, 200 if quick else 600, 3 if quick else 8)
        trickle_as_nobody(server, 520, 20 if quick else 40)
        whole_request_deadline(server)
        encoded_ids(server)
        followers_closed_early(server, 2000 if quick else 20000)
        http10(server)
        emptied_data_file(server, args.binary)
        damaged_pages(server, args.binary, 4 if quick else 20)
        check_normal(server, "the whole run")
        server.stop()
        verify = subprocess.run([args.binary, "verify", "--data", data], capture_output=True, text=True)
        record("verify at the end", verify.returncode == 0, (verify.stdout + verify.stderr).strip()[:160])
    finally:
        server.stop()
    print()
    print(f"run of {time.time() - started:.0f} s, binary {args.binary}, ledger {tmp}")
    print(", ".join(f"{k}: {v}" for k, v in FIGURES.items()))
    failed = sum(1 for _, ok, _ in RESULTS if not ok)
    print(f"{len(RESULTS) - failed} passed, {failed} failed")
    if failed == 0:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
