import Foundation
import LMDB
import Testing

/// A fresh directory under the system temp dir, removed when the test ends.
func withTemporaryDirectory<R>(_ body: (String) throws -> R) throws -> R {
    let path = NSTemporaryDirectory() + "lmdb-test-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try body(path)
}

struct Boom: Error {}

/// `value` as eight big-endian bytes: keys that sort numerically.
func bigEndian(_ value: UInt64) -> [UInt8] { withUnsafeBytes(of: value.bigEndian) { Array($0) } }

@Suite struct EnvironmentTests {
    /// A file that is not LMDB is refused with an error, never a crash: a failed open must not close its handle twice
    /// (once in the `catch`, once in `deinit`).
    @Test func openingGarbageThrowsInsteadOfCrashing() throws {
        try withTemporaryDirectory { dir in
            try Data(repeating: 0xA5, count: 16_384).write(to: URL(fileURLWithPath: dir + "/data.mdb"))
            for readOnly in [false, true] {
                var options = Environment.Options()
                options.readOnly = readOnly
                #expect(throws: LMDBError.self) { _ = try Environment(path: dir, options: options) }
                do { _ = try Environment(path: dir, options: options) } catch let error as LMDBError {
                    #expect(error.isDamaged, "\(error)")
                }
            }
        }
    }

    @Test func databasesOpenedTogetherAreCreatedInOneCommit() throws {
        try withTemporaryDirectory { dir in
            let env = try Environment(path: dir)
            let before = env.info.lastTransactionID
            let dbs = try env.openDatabases([("a", []), ("b", [.dupSort]), ("c", [])])
            #expect(dbs.count == 3)
            #expect(env.info.lastTransactionID == before + 1)
            var options = Environment.Options()
            options.readOnly = true
            let reader = try Environment(path: dir, options: options)
            #expect(try reader.openDatabases([("a", []), ("b", [.dupSort]), ("c", [])]).count == 3)
            #expect(throws: LMDBError.notFound) { _ = try reader.openDatabases([("a", []), ("missing", [])]) }
        }
    }

    @Test func writeCommitsOnReturn() throws {
        try withTemporaryDirectory { dir in
            let env = try Environment(path: dir)
            let db = try env.openDatabase("kv")
            try env.write { txn in try txn.put(db, key: Array("a".utf8), value: [1, 2, 3]) }
            let value = try env.read { txn in try txn.value(db, key: Array("a".utf8)) }
            #expect(value == [1, 2, 3])
        }
    }

    /// `findForward` looks at the next entry before searching (comparing keys with `sameBytes(as:)`): whatever the order of the lookups (forward, skipping,
    /// backward, missing keys, the first lookup of a fresh cursor), it must find exactly what `find` finds.
    @Test func findForwardFindsWhatFindFinds() throws {
        try withTemporaryDirectory { dir in
            let env = try Environment(path: dir)
            let db = try env.openDatabase("kv")
            let keys = (0..<500).map { i in Array(String(format: "k%05d", i * 2).utf8) }  // even numbers only
            try env.write { txn in for (i, k) in keys.enumerated() { try txn.put(db, key: k, value: [UInt8(i % 256)]) } }
            // Mostly the next key; every fourth lookup a jump either way, often to an odd (absent) number.
            let lookups = (0..<3_000).map { n in n % 4 == 0 ? (n * 7_919) % 1_000 : (n * 2) % 1_000 }
            try env.read { txn in
                let forward = try txn.cursor(db)
                let search = try txn.cursor(db)
                for n in lookups {
                    let key = Array(String(format: "k%05d", n).utf8)
                    let expected = try search.find(key).map { (Array($0.key), Array($0.value)) }
                    let found = try key.withUnsafeBytes { k in try forward.findForward(k) }.map { (Array($0.key), Array($0.value)) }
                    #expect(found?.0 == expected?.0 && found?.1 == expected?.1, "k\(n)")
                    #expect((found != nil) == (n % 2 == 0))
                }
            }
        }
    }

    /// Each cursor of a `ForwardCursors` keeps its own place: three ascending sequences of lookups, interleaved, each
    /// through its own cursor (with missing keys and the odd jump back), find exactly what `find` finds.
    @Test func forwardCursorsFindWhatFindFinds() throws {
        try withTemporaryDirectory { dir in
            let env = try Environment(path: dir)
            let db = try env.openDatabase("kv")
            let keys = (0..<500).map { i in Array(String(format: "k%05d", i * 2).utf8) }  // even numbers only
            try env.write { txn in for (i, k) in keys.enumerated() { try txn.put(db, key: k, value: [UInt8(i % 256)]) } }
            try env.read { txn in
                let cursors = ForwardCursors(txn, db, count: 3)
                #expect(cursors.count == 3)
                let search = try txn.cursor(db)
                for step in 0..<900 {
                    let lane = step % 3
                    let n = step % 97 == 0 ? (step * 7_919) % 1_000 : (lane * 300 + step / 3) % 1_000
                    let key = Array(String(format: "k%05d", n).utf8)
                    let expected = try search.find(key).map { (Array($0.key), Array($0.value)) }
                    let found = try key.withUnsafeBytes { k in try cursors.find(k, through: lane) }
                        .map { (Array($0.key), Array($0.value)) }
                    #expect(found?.0 == expected?.0 && found?.1 == expected?.1, "k\(n) through cursor \(lane)")
                    #expect((found != nil) == (n % 2 == 0))
                }
            }
        }
    }

    /// A value read in place reads like an array of its bytes, and a part of it like that part.
    @Test func mappedBytesReadLikeTheirBytes() throws {
        try withTemporaryDirectory { dir in
            let env = try Environment(path: dir)
            let db = try env.openDatabase("kv")
            let bytes = (0..<100).map { UInt8(truncatingIfNeeded: $0 &* 13) }
            try env.write { txn in try txn.put(db, key: [1], value: bytes) }
            try env.read { txn in
                let value = try #require(try txn.get(db, key: [1]))
                #expect(value.count == 100)
                #expect(Array(value) == bytes)
                #expect(value[42] == bytes[42])
                #expect(Array(value.extracting(8..<40)) == Array(bytes[8..<40]))
                #expect(value.extracting(8..<40).hasSameBytes(as: Array(bytes[8..<40])))
                #expect(value.extracting(100..<100).isEmpty)
                #expect(value.withUnsafeBytes { $0.count } == 100)
            }
        }
    }

    /// Both ways of comparing (inline up to 64 bytes, `memcmp` past that) tell equal bytes from bytes that differ
    /// anywhere, or in length.
    @Test func sameBytesSeesEveryDifference() throws {
        try withTemporaryDirectory { dir in
            let env = try Environment(path: dir)
            let db = try env.openDatabase("kv")
            for length in [0, 1, 7, 8, 9, 63, 64, 65, 200] {
                let a = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37) }
                try env.write { txn in try txn.put(db, key: bigEndian(UInt64(length)), value: a) }
                try env.read { txn in
                    let x = try #require(try txn.get(db, key: bigEndian(UInt64(length))))
                    #expect(x.hasSameBytes(as: a))
                    a.withUnsafeBytes { y in #expect(x.hasSameBytes(as: y)) }
                    #expect(!x.hasSameBytes(as: a + [0]), "length \(length) vs \(length + 1)")
                    for position in 0..<length {
                        var b = a
                        b[position] ^= 0x40
                        #expect(!x.hasSameBytes(as: b), "length \(length), byte \(position)")
                        b.withUnsafeBytes { y in #expect(!x.hasSameBytes(as: y), "length \(length), byte \(position)") }
                    }
                }
            }
        }
    }

    @Test func writeAbortsOnThrow() throws {
        try withTemporaryDirectory { dir in
            let env = try Environment(path: dir)
            let db = try env.openDatabase("kv")
            try env.write { txn in try txn.put(db, key: [1], value: [1]) }
            #expect(throws: Boom.self) {
                try env.write { txn in
                    try txn.put(db, key: [1], value: [9])
                    try txn.put(db, key: [2], value: [2])
                    throw Boom()
                }
            }
            let (one, two) = try env.read { txn in (try txn.value(db, key: [1]), try txn.value(db, key: [2])) }
            #expect(one == [1], "the aborted overwrite must not be visible")
            #expect(two == nil, "the aborted insert must not be visible")
        }
    }

    @Test func dataSurvivesReopen() throws {
        try withTemporaryDirectory { dir in
            do {
                let env = try Environment(path: dir)
                let db = try env.openDatabase("kv")
                try env.write { txn in try txn.put(db, key: [7], value: Array("kept".utf8)) }
            }
            let env = try Environment(path: dir)
            let db = try env.openDatabase("kv")
            #expect(try env.read { try $0.value(db, key: [7]) } == Array("kept".utf8))
        }
    }

    @Test func mapGrowsWhenFullWithoutLosingTheWrite() throws {
        try withTemporaryDirectory { dir in
            var options = Environment.Options()
            options.mapSize = 64 * 1024  // 16 pages: full after a few writes
            let env = try Environment(path: dir, options: options)
            let db = try env.openDatabase("kv")
            let before = env.info.mapSize
            let value = [UInt8](repeating: 0xAB, count: 3000)
            var attempts = 0
            // One transaction of 1000 × 3 KB: far beyond the initial map, so it must grow (and run the body again).
            try env.write { txn in
                attempts += 1
                for i in 0..<1000 { try txn.put(db, key: bigEndian(UInt64(i)), value: value) }
            }
            #expect(attempts > 1, "the body runs again after the map grew")
            #expect(env.info.mapSize > before)
            let count = try env.read { try $0.statistics(db).entries }
            #expect(count == 1000)
            let last = try env.read { try $0.value(db, key: bigEndian(UInt64(999))) }
            #expect(last == value)
        }
    }

    @Test func mapAtItsMaximumFailsWithMapFull() throws {
        try withTemporaryDirectory { dir in
            var options = Environment.Options()
            options.mapSize = 64 * 1024
            options.maxMapSize = 128 * 1024
            let env = try Environment(path: dir, options: options)
            let db = try env.openDatabase("kv")
            #expect(throws: LMDBError.mapFull) {
                try env.write { txn in
                    for i in 0..<1000 { try txn.put(db, key: bigEndian(UInt64(i)), value: [UInt8](repeating: 1, count: 3000)) }
                }
            }
            #expect(try env.read { try $0.statistics(db).entries } == 0)
        }
    }

    @Test func appendRefusesOutOfOrderKeys() throws {
        try withTemporaryDirectory { dir in
            let env = try Environment(path: dir)
            let db = try env.openDatabase("log")
            try env.write { txn in
                try txn.put(db, key: bigEndian(UInt64(1)), value: [1], flags: .append)
                try txn.put(db, key: bigEndian(UInt64(2)), value: [2], flags: .append)
            }
            #expect(throws: LMDBError.keyExists) {
                try env.write { txn in try txn.put(db, key: bigEndian(UInt64(1)), value: [3], flags: .append) }
            }
        }
    }
}

@Suite struct CursorTests {
    @Test func dupSortKeepsValuesSortedPerKey() throws {
        try withTemporaryDirectory { dir in
            let env = try Environment(path: dir)
            let db = try env.openDatabase("index", flags: [.dupSort, .dupFixed])
            try env.write { txn in
                for seq: UInt64 in [5, 1, 3] { try txn.put(db, key: Array("b".utf8), value: bigEndian(seq)) }
                try txn.put(db, key: Array("a".utf8), value: bigEndian(UInt64(9)))
                try txn.put(db, key: Array("c".utf8), value: bigEndian(UInt64(2)))
            }
            let (values, count, keys) = try env.read { txn in
                let cursor = try txn.cursor(db)
                var values: [UInt64] = []
                var entry = try cursor.find(Array("b".utf8))
                let count = try cursor.duplicateCount()
                while let e = entry {
                    values.append(e.value.reduce(0) { $0 << 8 | UInt64($1) })
                    entry = try cursor.nextDuplicate()
                }
                var keys: [String] = []
                var k = try cursor.first()
                while let e = k {
                    keys.append(String(decoding: e.key, as: UTF8.self))
                    k = try cursor.nextKey()
                }
                return (values, count, keys)
            }
            #expect(values == [1, 3, 5])
            #expect(count == 3)
            #expect(keys == ["a", "b", "c"])
        }
    }

    @Test func seekFindsTheFirstKeyAtOrAfter() throws {
        try withTemporaryDirectory { dir in
            let env = try Environment(path: dir)
            let db = try env.openDatabase("kv")
            try env.write { txn in
                for k in ["apple", "banana", "cherry"] { try txn.put(db, key: Array(k.utf8), value: Array(k.utf8)) }
            }
            let found = try env.read { txn -> [String] in
                let c = try txn.cursor(db)
                return [
                    try c.seek(Array("b".utf8)), try c.seek(Array("banana".utf8)), try c.seek(Array("zzz".utf8)),
                ].map { $0.map { String(decoding: $0.key, as: UTF8.self) } ?? "-" }
            }
            #expect(found == ["banana", "banana", "-"])
        }
    }

    @Test func getBothFindsOneDuplicate() throws {
        try withTemporaryDirectory { dir in
            let env = try Environment(path: dir)
            let db = try env.openDatabase("index", flags: [.dupSort])
            try env.write { txn in
                try txn.put(db, key: [1], value: [10])
                try txn.put(db, key: [1], value: [20])
            }
            let (hit, miss) = try env.read { txn in
                let c = try txn.cursor(db)
                return (try c.find([1], value: [20]) != nil, try c.find([1], value: [30]) != nil)
            }
            #expect(hit)
            #expect(!miss)
        }
    }

}

/// Damaged files the wrapper refuses before LMDB reads them: LMDB trusts its meta pages' numbers and its root pages'
/// headers, and asserts, reads outside a page, or searches forever on some of them.
@Suite struct DamagedFileTests {
    static let pageSize = sysconf(Int32(_SC_PAGESIZE))

    /// An environment with one named database `d` of a few entries (its root one leaf page), closed again.
    func makeEnvironment(_ dir: String) throws {
        let env = try Environment(path: dir)
        let db = try env.openDatabase("d")
        try env.write { txn in
            for i in 0..<20 { try txn.put(db, key: bigEndian(UInt64(i)), value: [UInt8](repeating: 7, count: 40)) }
        }
    }

    /// Writes `bytes` at `offset` of the data file.
    func patch(_ dir: String, at offset: Int, _ bytes: [UInt8]) throws {
        let handle = try #require(FileHandle(forUpdatingAtPath: dir + "/data.mdb"))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: Data(bytes))
    }

    func read(_ dir: String, at offset: Int, count: Int) throws -> [UInt8] {
        let data = try Data(contentsOf: URL(fileURLWithPath: dir + "/data.mdb"))
        return Array(data[offset..<(offset + count)])
    }

    /// The meta page LMDB reads (the newer transaction) and the root page of `d`, found by its record in the main
    /// database's root: data size 48, node flags F_SUBDATA (2), key size 1, key "d", then the 48-byte record whose
    /// last 8 bytes are the root.
    func layout(_ dir: String) throws -> (meta: Int, root: Int) {
        let data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "/data.mdb")))
        let size = Self.pageSize
        func u64(_ at: Int) -> UInt64 { data.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt64.self) } }
        let meta = u64(size + 144) > u64(144) ? 1 : 0
        // In the main database's root (a leaf here), not in an older copy of it that the file still holds.
        let main = Int(u64(meta * size + 128))
        let pattern: [UInt8] = [48, 0, 0, 0, 2, 0, 1, 0, UInt8(ascii: "d")]
        let node = try #require(
            (main * size...((main + 1) * size - pattern.count - 48)).first { data[$0..<($0 + pattern.count)].elementsEqual(pattern) })
        return (meta, Int(u64(node + pattern.count + 40)))
    }

    func expectCorrupted(_ dir: String, mentioning hint: String, sourceLocation: SourceLocation = #_sourceLocation) {
        var options = Environment.Options()
        options.readOnly = true
        do {
            let env = try Environment(path: dir, options: options)
            _ = try env.openDatabase("d")
            Issue.record("opened", sourceLocation: sourceLocation)
        } catch let error as LMDBError {
            #expect(error.isDamaged && error.reason.contains(hint), "\(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(error)", sourceLocation: sourceLocation)
        }
    }

    /// A last page or transaction id near 2^64 in the meta page in force: refused (the last page) or read as LMDB
    /// reads it, never a trap in the arithmetic that checks them.
    @Test(arguments: [UInt64.max, UInt64(Int64.max), UInt64(1) << 52])
    func hugeMetaNumbersDoNotTrap(value: UInt64) throws {
        for field in [136, 144] {
            try withTemporaryDirectory { dir in
                try makeEnvironment(dir)
                let (meta, _) = try layout(dir)
                try patch(dir, at: meta * Self.pageSize + field, withUnsafeBytes(of: value.littleEndian) { Array($0) })
                var options = Environment.Options()
                options.readOnly = true
                do {
                    _ = try Environment(path: dir, options: options)
                    #expect(field == 144, "a last page of \(value) opened")
                } catch let error as LMDBError {
                    #expect(error.isDamaged, "\(error)")
                }
            }
        }
    }

    /// The page size LMDB divides by comes from a meta page unchecked: 0 stopped the process with SIGFPE in
    /// `mdb_env_open`; others send its arithmetic past the page or the second meta page elsewhere.
    @Test(arguments: [(0, [0, 0, 0, 0]), (0, [3, 0, 0, 0]), (0, [0, 0, 1, 0]), (1, [0, 0x20, 0, 0])])
    func aMetaPageSizeLMDBCannotUseIsCorrupted(meta: Int, size: [UInt8]) throws {
        try withTemporaryDirectory { dir in
            try makeEnvironment(dir)
            try patch(dir, at: meta * Self.pageSize + 40, size)
            for readOnly in [true, false] {
                var options = Environment.Options()
                options.readOnly = readOnly
                do {
                    _ = try Environment(path: dir, options: options)
                    Issue.record("opened")
                } catch let error as LMDBError {
                    #expect(error.isDamaged && error.reason.contains("page size"), "\(error)")
                }
            }
        }
    }

    /// Free-list flags other than integer keys (here all ones: a dupsort) sent a cursor on the free list to LMDB's
    /// assertion `mx != NULL` (a compacting copy walks it).
    @Test func freeDatabaseFlagsAreChecked() throws {
        try withTemporaryDirectory { dir in
            try makeEnvironment(dir)
            let (meta, _) = try layout(dir)
            try patch(dir, at: meta * Self.pageSize + 44, [0xFF, 0xFF])
            expectCorrupted(dir, mentioning: "free database the flags 0xffff")
        }
    }

    /// A named database's root page whose header does not hold together: LMDB would compute a huge key count from
    /// free-space bounds below the header (and search past the page, or forever), or assert on a branch of one key.
    @Test func aDamagedRootPageIsCorrupted() throws {
        let damages: [(offset: Int, bytes: [UInt8], hint: String)] = [
            (12, [7, 0], "free space at 7"), (14, [0xFF, 0xFF], "free space"), (10, [8, 0], "flags 0x8"),
            (10, [1, 0, 18, 0], "is a branch of 1 keys"), (0, [9, 9], "is numbered"), (16, [0xF0, 0xFF], "has node 0 at"),
        ]
        for damage in damages {
            try withTemporaryDirectory { dir in
                try makeEnvironment(dir)
                let (_, root) = try layout(dir)
                let start = root * Self.pageSize
                let header = try read(dir, at: start + 10, count: 2)
                #expect(header == [2, 0], "the root of d is a leaf")
                try patch(dir, at: start + damage.offset, damage.bytes)
                expectCorrupted(dir, mentioning: damage.hint)
            }
        }
    }

    /// The checks read what LMDB wrote: a sound environment, grown to several levels, opens and reads.
    @Test func soundEnvironmentsPassTheChecks() throws {
        try withTemporaryDirectory { dir in
            do {
                let env = try Environment(path: dir)
                let db = try env.openDatabase("big")
                let dups = try env.openDatabase("dups", flags: [.dupSort])
                try env.write { txn in
                    for i in 0..<5_000 {
                        try txn.put(db, key: bigEndian(UInt64(i)), value: [UInt8](repeating: 1, count: 100))
                        try txn.put(dups, key: bigEndian(UInt64(i % 10)), value: bigEndian(UInt64(i)))
                    }
                }
                try env.write { txn in for i in 0..<2_500 { _ = try txn.delete(db, key: bigEndian(UInt64(i * 2))) } }
            }
            for readOnly in [true, false] {
                var options = Environment.Options()
                options.readOnly = readOnly
                let env = try Environment(path: dir, options: options)
                let db = try env.openDatabase("big")
                _ = try env.openDatabase("dups", flags: [.dupSort])
                #expect(try env.read { try $0.statistics(db).entries } == 2_500)
            }
        }
    }
}
