#!/usr/bin/env python3
"""Which database each page of an LMDB file belongs to, and what the writer's commits wrote.

    lmdb-pages.py DATA.mdb                 pages per database and kind (branch, leaf, overflow) in the newest snapshot
    lmdb-pages.py DATA.mdb STRACE.txt      plus: the commits in an strace of the writer (`strace -f -y -s 0 -e
                                           trace=pwrite64,lseek,writev,fdatasync,fsync`), bytes and pages each, and
                                           the last complete commit's pages by database and kind

Reads LMDB 0.9's on-disk format (64-bit): the newer of the two meta pages, then every tree from its root (the free
list, the catalog, each named database, the sub-trees of sorted duplicates, overflow runs). A page written by the last
commit is part of the newest snapshot, so its owner is exact; older commits' pages may have been replaced since.
See benchmarks/README.md, "The write path".
"""
import collections
import re
import struct
import sys

HEADER = 16
P_BRANCH, P_LEAF, P_OVERFLOW, P_LEAF2, P_SUBP = 0x01, 0x02, 0x04, 0x20, 0x40
F_BIGDATA, F_SUBDATA, F_DUPDATA = 0x01, 0x02, 0x04


def read_db(buf, off):
    _pad, flags, depth, branch, leaf, overflow, entries, root = struct.unpack_from("<IHHQQQQQ", buf, off)
    return {"flags": flags, "depth": depth, "entries": entries, "root": root}


class Snapshot:
    def __init__(self, path):
        self.data = open(path, "rb").read()
        metas = []
        for page in (0, 1):
            base = page * 4096
            magic, version = struct.unpack_from("<II", self.data, base + HEADER)
            if magic != 0xBEEFC0DE:
                continue
            free = read_db(self.data, base + HEADER + 24)
            main = read_db(self.data, base + HEADER + 24 + 48)
            last_pg, txnid = struct.unpack_from("<QQ", self.data, base + HEADER + 24 + 96)
            metas.append((txnid, page, free, main, last_pg))
        self.txnid, self.meta_page, free, main, self.last_pg = max(metas)
        # FREE_DBI's pad holds the page size.
        self.psize = struct.unpack_from("<I", self.data, self.meta_page * 4096 + HEADER + 24)[0] or 4096
        self.owner = {0: ("(meta)", "meta"), 1: ("(meta)", "meta")}
        self.walk(free["root"], "(free list)")
        self.walk(main["root"], "(catalog)", catalog=True)

    def page(self, pgno):
        return pgno * self.psize

    def nodes(self, base):
        lower = struct.unpack_from("<H", self.data, base + 12)[0]
        for i in range((lower - HEADER) // 2):
            yield base + struct.unpack_from("<H", self.data, base + HEADER + 2 * i)[0]

    def walk(self, pgno, name, catalog=False):
        if pgno == 0xFFFFFFFFFFFFFFFF:
            return
        base = self.page(pgno)
        flags = struct.unpack_from("<H", self.data, base + 10)[0]
        if flags & P_BRANCH:
            self.owner[pgno] = (name, "branch")
            for node in self.nodes(base):
                lo, hi, nflags = struct.unpack_from("<HHH", self.data, node)
                self.walk(lo | hi << 16 | nflags << 32, name, catalog)
            return
        self.owner[pgno] = (name, "leaf")
        if flags & P_LEAF2:
            return
        for node in self.nodes(base):
            lo, hi, nflags, ksize = struct.unpack_from("<HHHH", self.data, node)
            key = self.data[node + 8:node + 8 + ksize]
            value = node + 8 + ksize
            if catalog and nflags & F_SUBDATA:
                sub = read_db(self.data, value)
                self.walk(sub["root"], key.decode("utf-8", "replace"))
            elif nflags & F_SUBDATA:
                self.walk(read_db(self.data, value)["root"], name)
            elif nflags & F_BIGDATA:
                first = struct.unpack_from("<Q", self.data, value)[0]
                pages = struct.unpack_from("<I", self.data, self.page(first) + 12)[0]
                for p in range(first, first + pages):
                    self.owner[p] = (name, "overflow")


def commits(strace_path, data_name):
    """Per commit (ended by the write of a meta page): [(offset, bytes)] written to the data file, and fdatasyncs."""
    fd_re = re.compile(r"^(?:\d+\s+)?(\w+)\((\d+)<([^>]*)>(.*)= (-?\d+)")
    position = collections.defaultdict(int)
    current, syncs, done = [], 0, []
    pending = {}
    for line in open(strace_path):
        # A syscall interrupted by another thread's is printed in two parts: join them.
        pid = line.split(" ", 1)[0]
        if "<unfinished ...>" in line:
            pending[pid] = line.split("<unfinished ...>")[0]
            continue
        if "resumed>" in line and pid in pending:
            line = pending.pop(pid) + line.split("resumed>", 1)[1]
        m = fd_re.match(line)
        if not m or not m.group(3).endswith(data_name):
            continue
        call, fd, rest, result = m.group(1), m.group(2), m.group(4), int(m.group(5))
        if call == "lseek":
            position[fd] = result
        elif call == "pwrite64":
            offset = int(rest.rsplit(",", 1)[1].strip(" )"))
            if offset < 8192:  # the meta page: the commit is complete
                done.append((current, syncs))
                current, syncs = [], 0
            else:
                current.append((offset, result))
        elif call == "writev":
            current.append((position[fd], result))
            position[fd] += result
        elif call in ("fdatasync", "fsync"):
            syncs += 1
    return done


def main():
    snap = Snapshot(sys.argv[1])
    per = collections.Counter(snap.owner.values())
    print(f"snapshot txn {snap.txnid}, last page {snap.last_pg}, page size {snap.psize}")
    print("pages in the snapshot by database and kind:")
    for (name, kind), n in sorted(per.items()):
        print(f"  {name:14} {kind:9} {n}")
    if len(sys.argv) < 3:
        return
    done = commits(sys.argv[2], "data.mdb")
    if not done:
        print("no complete commit in the strace")
        return
    sizes = [sum(b for _, b in c) for c, _ in done]
    print(f"\ncommits traced: {len(done)}; bytes per commit (meta excluded): mean {sum(sizes) / len(sizes):.0f}, "
          f"pages {sum(sizes) / len(sizes) / snap.psize:.1f}; writes per commit {sum(len(c) for c, _ in done) / len(done):.1f}; "
          f"fdatasyncs per commit {sum(s for _, s in done[1:]) / max(1, len(done) - 1):.2f}")
    last, _ = done[-1]
    tally = collections.Counter()
    for offset, length in last:
        for p in range(offset // snap.psize, (offset + length + snap.psize - 1) // snap.psize):
            tally[snap.owner.get(p, ("(not in the snapshot)", "-"))] += 1
    print(f"the last complete commit: {sum(tally.values())} pages")
    for (name, kind), n in sorted(tally.items(), key=lambda x: -x[1]):
        print(f"  {name:22} {kind:9} {n}")


if __name__ == "__main__":
    main()
