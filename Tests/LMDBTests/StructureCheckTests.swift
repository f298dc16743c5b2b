import Foundation
import LMDB
import Testing

/// `Environment.checkStructure`: every page a sound file holds is accounted for, and each kind of damage LMDB would
/// trip on inside a tree (not only at its root) is named before LMDB reads it.
@Suite struct StructureCheckTests {
    static let pageSize = sysconf(Int32(_SC_PAGESIZE))

    /// A file with every shape of tree LMDB writes: a tree of several levels (`big`), values on overflow pages
    /// (`blobs`), duplicates in sub-pages (`few`) and in trees of their own (`many`), an empty database, and a free
    /// list (the deletes and the later commits free pages).
    func makeEnvironment(_ dir: String) throws {
        let env = try Environment(path: dir)
        let big = try env.openDatabase("big")
        let blobs = try env.openDatabase("blobs")
        let few = try env.openDatabase("few", flags: [.dupSort])
        let many = try env.openDatabase("many", flags: [.dupSort])
        _ = try env.openDatabase("empty")
        try env.write { txn in
            for i in 0..<5_000 { try txn.put(big, key: bigEndian(UInt64(i)), value: [UInt8](repeating: 1, count: 100)) }
            for i in 0..<20 { try txn.put(blobs, key: bigEndian(UInt64(i)), value: [UInt8](repeating: 2, count: 10_000 + i)) }
            for i in 0..<300 { try txn.put(few, key: bigEndian(UInt64(i / 3)), value: bigEndian(UInt64(i))) }
            for i in 0..<3_000 { try txn.put(many, key: bigEndian(UInt64(i % 3)), value: bigEndian(UInt64(i))) }
        }
        try env.write { txn in for i in 0..<2_500 { _ = try txn.delete(big, key: bigEndian(UInt64(i * 2))) } }
        try env.write { txn in for i in 0..<5 { _ = try txn.delete(blobs, key: bigEndian(UInt64(i))) } }
    }

    func data(_ dir: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "/data.mdb"))) }

    func patch(_ dir: String, at offset: Int, _ bytes: [UInt8]) throws {
        let handle = try #require(FileHandle(forUpdatingAtPath: dir + "/data.mdb"))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: Data(bytes))
    }

    /// Reads LMDB's layout of the newest snapshot (as mdb.c defines it) to find the pages a test damages.
    struct Layout {
        let bytes: [UInt8]
        let size = StructureCheckTests.pageSize
        func u16(_ at: Int) -> Int { Int(bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt16.self) }) }
        func u64(_ at: Int) -> Int { Int(bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt64.self) }) }
        var meta: Int { u64(size + 144) > u64(144) ? size : 0 }
        var freeRoot: Int { u64(meta + 80) }
        var mainRoot: Int { u64(meta + 128) }
        /// The offset in the file of node `index` of page `page`.
        func node(_ page: Int, _ index: Int) -> Int { page * size + u16(page * size + 16 + 2 * index) }
        /// The offset of the record of the named database `name` in the main database's root leaf.
        func record(_ name: String) throws -> Int {
            let count = (u16(mainRoot * size + 12) - 16) / 2
            let found = (0..<count).map { node(mainRoot, $0) }.first { at in
                bytes[(at + 8)..<(at + 8 + u16(at + 6))].elementsEqual(Array(name.utf8))
            }
            let at = try #require(found, "no record of \(name)")
            return at + 8 + name.utf8.count
        }
        func root(_ name: String) throws -> Int { u64(try record(name) + 40) }
        /// The child page a branch node names.
        func child(_ node: Int) -> Int { u16(node) | u16(node + 2) << 16 | u16(node + 4) << 32 }
        /// The first leaf of the named database `name`.
        func firstLeaf(_ name: String) throws -> Int {
            var page = try root(name)
            while u16(page * size + 10) == 1 { page = child(node(page, 0)) }
            return page
        }
    }

    func expectCorrupted(_ dir: String, mentioning hint: String, sourceLocation: SourceLocation = #_sourceLocation) {
        var options = Environment.Options()
        options.readOnly = true
        do {
            let structure = try Environment(path: dir, options: options).checkStructure()
            Issue.record("passed: \(structure)", sourceLocation: sourceLocation)
        } catch let error as LMDBError {
            #expect(error.isDamaged && error.reason.contains(hint), "\(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(error)", sourceLocation: sourceLocation)
        }
    }

    /// Damages a fresh file with `damage` (given its layout), then expects the walk to refuse it naming `hint`.
    func expectDamage(
        mentioning hint: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ damage: (Layout) throws -> (offset: Int, bytes: [UInt8])
    ) throws {
        try withTemporaryDirectory { dir in
            try makeEnvironment(dir)
            let (offset, bytes) = try damage(Layout(bytes: try data(dir)))
            try patch(dir, at: offset, bytes)
            expectCorrupted(dir, mentioning: hint, sourceLocation: sourceLocation)
        }
    }

    @Test func everyPageOfASoundFileIsReachedOnce() throws {
        try withTemporaryDirectory { dir in
            try makeEnvironment(dir)
            for readOnly in [true, false] {
                var options = Environment.Options()
                options.readOnly = readOnly
                let env = try Environment(path: dir, options: options)
                let structure = try env.checkStructure()
                #expect(structure.databases == 5)
                #expect(structure.transactionID == env.info.lastTransactionID)
                #expect(
                    structure.branchPages + structure.leafPages + structure.overflowPages + structure.freePages + 2
                        == structure.lastPage + 1)
                // 15 blobs of 10 KB on 3 pages each (4 KiB pages) or 1 (16 KiB and more).
                #expect(structure.overflowPages >= 15)
                #expect(structure.freePages > 0)
                // The walk counts what LMDB's own statistics count, for every database.
                let databases = try ["big", "blobs", "few", "many", "empty"].map { try env.openDatabase($0) }
                let counted = try env.read { txn in
                    try databases.reduce(0) { sum, db in
                        let s = try txn.statistics(db)
                        return sum + s.branchPages + s.leafPages + s.overflowPages
                    }
                }
                #expect(counted <= structure.branchPages + structure.leafPages + structure.overflowPages)
            }
        }
    }

    /// A writer in another process keeps committing while the walk runs: the walk reads its own snapshot.
    @Test func aWalkDuringWritesSeesOneSnapshot() throws {
        try withTemporaryDirectory { dir in
            try makeEnvironment(dir)
            let writer = try Environment(path: dir)
            let big = try writer.openDatabase("big")
            let reader = try Environment(path: dir)
            for round in 0..<30 {
                try writer.write { txn in
                    for i in 0..<200 { try txn.put(big, key: bigEndian(UInt64(10_000 + round * 200 + i)), value: [3]) }
                }
                let structure = try reader.checkStructure()
                #expect(structure.lastPage >= 2)
            }
        }
    }

    @Test func anInnerLeafThatIsNotALeaf() throws {
        try expectDamage(mentioning: "must be a leaf") { layout in
            let leaf = layout.child(layout.node(try layout.root("big"), 1))
            return (leaf * layout.size + 10, [1, 0])
        }
    }

    @Test func anInnerLeafWithItsFreeSpaceOutsideThePage() throws {
        try expectDamage(mentioning: "free space") { layout in
            let leaf = layout.child(layout.node(try layout.root("big"), 1))
            return (leaf * layout.size + 12, [0xFF, 0x7F])
        }
    }

    @Test func anInnerLeafNodeOutsideThePage() throws {
        try expectDamage(mentioning: "has node 0 at") { layout in
            let leaf = layout.child(layout.node(try layout.root("big"), 1))
            return (leaf * layout.size + 16, [0xFC, 0xFF])
        }
    }

    @Test func aValueLongerThanItsPage() throws {
        try expectDamage(mentioning: "past the end of its page") { layout in
            let leaf = layout.child(layout.node(try layout.root("big"), 1))
            return (layout.node(leaf, 0), [0xFF, 0xFF])
        }
    }

    @Test func aChildPastTheLastPage() throws {
        try expectDamage(mentioning: "outside 2...") { layout in
            (layout.node(try layout.root("big"), 1), [0xFF, 0xFF, 0xFF, 0x0F])
        }
    }

    @Test func aChildThatIsItsOwnParent() throws {
        try expectDamage(mentioning: "reached twice") { layout in
            let root = try layout.root("big")
            return (layout.node(root, 1), withUnsafeBytes(of: UInt16(root & 0xFFFF).littleEndian) { Array($0) } + [0, 0])
        }
    }

    @Test func anOverflowRunTooShortForItsValue() throws {
        try expectDamage(mentioning: "counts 0 pages") { layout in
            let node = layout.node(try layout.firstLeaf("blobs"), 0)
            let first = layout.u64(node + 8 + layout.u16(node + 6))
            return (first * layout.size + 12, [0, 0, 0, 0])
        }
    }

    @Test func aFreePageThatATreeUses() throws {
        try expectDamage(mentioning: "reached twice") { layout in
            let node = layout.node(layout.freeRoot, 0)
            let list = node + 8 + layout.u16(node + 6)
            #expect(layout.u64(list) > 0, "the free list's first entry lists pages")
            return (list + 8, withUnsafeBytes(of: UInt64(try layout.root("big")).littleEndian) { Array($0) })
        }
    }

    @Test func aDepthTheTreeDoesNotHave() throws {
        try expectDamage(mentioning: "must be a branch") { layout in (try layout.record("big") + 6, [3, 0]) }
    }

    @Test func aCountTheTreeDoesNotHold() throws {
        try expectDamage(mentioning: "entries; its tree holds") { layout in (try layout.record("few") + 32, [9]) }
    }

    @Test func aSubPageWithOtherFlags() throws {
        try expectDamage(mentioning: "sub-page with the flags") { layout in
            let node = layout.node(try layout.firstLeaf("few"), 0)
            #expect(layout.u16(node + 4) == 4, "the first key of few keeps its duplicates in a sub-page")
            return (node + 8 + layout.u16(node + 6) + 10, [2, 0])
        }
    }

    @Test func aSubDatabaseOfDuplicatesWithAForeignRoot() throws {
        try expectDamage(mentioning: "reached twice") { layout in
            let node = layout.node(try layout.firstLeaf("many"), 0)
            #expect(layout.u16(node + 4) == 6, "the first key of many keeps its duplicates in a tree of their own")
            let record = node + 8 + layout.u16(node + 6)
            return (record + 40, withUnsafeBytes(of: UInt64(try layout.root("big")).littleEndian) { Array($0) })
        }
    }
}
