#!/usr/bin/env python3
"""Answers unchanged across builds: a ledger written by OLD, opened by NEW, answers every customer and timeline with
the same bytes.

    tools/compare-answers.py --old OLD_STORELEDGER --new NEW_STORELEDGER [--customers 1000] [--keep DIR]

1. Writes an NDJSON history of N customers (monthly subscriptions renewing up to five times, refunds, restores by a
   second app user that move the owner, upgrades to a yearly product, renewal infos turning auto-renew off, and
   verifyReceipt copies of first purchases, some of them stale) and ingests it with OLD.
2. Copies the ledger; NEW opens the copy for writing (`replay`, which upgrades an older schema), then `verify` and
   `replay --check` must pass on it.
3. Serves each ledger with its own build and asks both the same questions over their sockets: each customer at
   three instants and as known at the middle of the log, each subscription's timeline at two instants and at the
   middle of the log. Prints how many answers were compared and every one that differs; exits 1 on a difference.
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

DAY = 86_400_000
BASE = 1_704_067_200_000  # 2024-01-01T00:00:00Z
MONTHLY, YEARLY = "com.example.premium.monthly", "com.example.premium.yearly"


def user(i):
    return f"person+{i}@example.org"


def transaction(tid, otid, product, purchase, expires, **extra):
    body = {"transactionId": str(tid), "originalTransactionId": str(otid), "productId": product,
            "purchaseDate": purchase, "originalPurchaseDate": BASE, "expiresDate": expires,
            "type": "Auto-Renewable Subscription", "environment": "Production", "signedDate": purchase,
            "price": 9990 if product == MONTHLY else 99990, "currency": "USD", "transactionReason": "PURCHASE"}
    body.update(extra)
    return body


def envelope(kind, payload, received, app_user=None):
    e = {"type": kind, "receivedAt": received, "payload": payload}
    if app_user:
        e["appUserId"] = app_user
    return json.dumps(e, separators=(",", ":"), sort_keys=True)


def history(customers):
    """The inputs of the history, in the order they are ingested, and every subscription's id."""
    lines, otids = [], []
    for i in range(customers):
        otid = 7_000_000_000 + i
        otids.append(otid)
        start = BASE + i * 3_600_000
        renewals = i % 6
        tid = otid * 10
        first = transaction(tid, otid, MONTHLY, start, start + 30 * DAY)
        lines.append(envelope("transaction", first, start + 1_000, user(i)))
        for k in range(1, renewals + 1):
            purchase = start + 30 * DAY * k
            reason = {"transactionReason": "RENEWAL"}
            lines.append(envelope("transaction", transaction(tid + k, otid, MONTHLY, purchase, purchase + 30 * DAY,
                                                             **reason), purchase + 2_000))
        last = start + 30 * DAY * renewals
        if i % 7 == 3:  # the last period refunded
            refunded = transaction(tid + renewals, otid, MONTHLY, last, last + 30 * DAY,
                                   revocationDate=last + 5 * DAY, revocationReason=0, revocationType="REFUND_FULL",
                                   signedDate=last + 5 * DAY)
            lines.append(envelope("transaction", refunded, last + 5 * DAY + 3_000))
        if i % 11 == 5:  # another app user restores it: the owner moves
            lines.append(envelope("binding", {"appUserId": user(i + 100_000), "originalTransactionId": str(otid)},
                                  last + 7 * DAY, None))
        if i % 13 == 6:  # upgraded to yearly mid-period
            at = last + 10 * DAY
            old = transaction(tid + renewals, otid, MONTHLY, last, last + 30 * DAY, revocationDate=at,
                              revocationReason=0, isUpgraded=True, signedDate=at)
            lines.append(envelope("transaction", old, at + 1_000))
            lines.append(envelope("transaction", transaction(tid + 90, otid, YEARLY, at, at + 365 * DAY,
                                                             transactionReason="PURCHASE"), at + 1_000))
        if i % 3 == 1:  # auto-renew turned off
            renewal = {"originalTransactionId": str(otid), "autoRenewProductId": MONTHLY, "productId": MONTHLY,
                       "autoRenewStatus": 0, "environment": "Production", "signedDate": last + 3 * DAY}
            lines.append(envelope("renewal", renewal, last + 3 * DAY + 500))
        if i % 5 == 2:  # a device receipt of the first purchase, posted late (stale when made long ago)
            created = start + 60_000
            request = last + 12 * DAY
            receipt = {"status": 0, "environment": "Production", "receipt": {
                "receipt_type": "Production", "bundle_id": "com.example.app",
                "receipt_creation_date_ms": str(created), "request_date_ms": str(request),
                "in_app": [{"transaction_id": str(tid), "original_transaction_id": str(otid),
                            "product_id": MONTHLY, "purchase_date_ms": str(start),
                            "expires_date_ms": str(start + 30 * DAY), "quantity": "1"}]}}
            lines.append(envelope("receipt", receipt, request + 700, user(i)))
    return lines, otids


def run(binary, *args, check=True):
    out = subprocess.run([binary, *args], capture_output=True, text=True)
    if check and out.returncode != 0:
        sys.exit(f"{os.path.basename(binary)} {' '.join(args)} exited {out.returncode}: {out.stderr.strip()[-2000:]}")
    return out


class Served:
    """`storeledger serve` on one ledger, asked over its socket with one keep-alive connection."""

    def __init__(self, binary, data, log):
        self.socket = os.path.join(data, "ledger.sock")
        env = dict(os.environ, STORELEDGER_LOG_LEVEL="warning")
        self.proc = subprocess.Popen([binary, "serve", "--data", data], stdout=subprocess.DEVNULL,
                                     stderr=open(log, "ab"), env=env)
        deadline = time.time() + 60
        while True:
            if self.proc.poll() is not None:
                sys.exit(f"serve on {data} exited {self.proc.returncode} (see {log})")
            try:
                self.conn = socket.socket(socket.AF_UNIX)
                self.conn.connect(self.socket)
                if self.get("/v1/health")[0] == 200:
                    return
            except OSError:
                pass
            if time.time() > deadline:
                sys.exit(f"serve on {data} did not answer within 60 s")
            time.sleep(0.1)

    def get(self, target):
        self.conn.sendall(f"GET {target} HTTP/1.1\r\nHost: ledger\r\n\r\n".encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = self.conn.recv(65536)
            if not chunk:
                raise OSError("closed")
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        length = next(int(l.split(":", 1)[1]) for l in lines if l.lower().startswith("content-length:"))
        while len(body) < length:
            body += self.conn.recv(65536)
        return int(lines[0].split(" ")[1]), body

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", required=True)
    parser.add_argument("--new", required=True)
    parser.add_argument("--customers", type=int, default=1000)
    parser.add_argument("--keep", help="a directory to keep the ledgers and logs in (default: a temporary one)")
    args = parser.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="compare-answers-")
    os.makedirs(work, exist_ok=True)
    old_data, new_data = os.path.join(work, "old"), os.path.join(work, "new")
    for d in (old_data, new_data):
        shutil.rmtree(d, ignore_errors=True)

    lines, otids = history(args.customers)
    inputs = os.path.join(work, "history.ndjson")
    with open(inputs, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"history: {len(lines)} inputs, {args.customers} customers", flush=True)
    ingested = run(args.old, "ingest", "--quiet", "--data", old_data, inputs).stdout.strip()
    print(f"old build: {ingested}", flush=True)
    shutil.copytree(old_data, new_data)
    for name in ("lock.mdb", "ledger.sock"):
        if os.path.exists(os.path.join(new_data, name)):
            os.remove(os.path.join(new_data, name))
    print("new build opens the copy:", run(args.new, "replay", "--data", new_data).stdout.strip().splitlines()[-1:],
          flush=True)
    print("new build verify:", run(args.new, "verify", "--data", new_data).stdout.strip().splitlines()[-1:], flush=True)
    print("new build replay --check:", run(args.new, "replay", "--check", "--data", new_data).stdout.strip()
          .splitlines()[-1:], flush=True)

    old = Served(args.old, old_data, os.path.join(work, "old-serve.log"))
    new = Served(args.new, new_data, os.path.join(work, "new-serve.log"))
    try:
        last = json.loads(old.get("/v1/health")[1])["lastSeq"]
        middle = last // 2
        end = BASE + args.customers * 3_600_000 + 200 * DAY
        instants = [BASE + 45 * DAY, BASE + 120 * DAY, end]
        targets = []
        for i in range(args.customers):
            who = user(i).replace("+", "%2B").replace("@", "%40")
            targets += [f"/v1/customers/{who}?at={t}" for t in instants]
            targets.append(f"/v1/customers/{who}?at={end}&asOf={middle}")
            if i % 11 == 5:
                targets.append(f"/v1/customers/{user(i + 100_000).replace('+', '%2B').replace('@', '%40')}?at={end}")
        for otid in otids:
            targets += [f"/v1/subscriptions/{otid}?at={instants[0]}", f"/v1/subscriptions/{otid}?at={end}",
                        f"/v1/subscriptions/{otid}?at={end}&asOf={middle}"]
        differ, refused = [], 0
        for target in targets:
            a, b = old.get(target), new.get(target)
            if a[0] != 200:
                refused += 1
            if a != b:
                differ.append((target, a, b))
        print(f"compared {len(targets)} answers ({refused} not 200 on the old build): {len(differ)} differ")
        for target, a, b in differ[:20]:
            print(f"  {target}\n    old {a[0]} {a[1][:400]!r}\n    new {b[0]} {b[1][:400]!r}")
    finally:
        old.stop()
        new.stop()
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
