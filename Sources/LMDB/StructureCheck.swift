internal import CLMDB

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a structure check walked.
public struct Structure: Sendable, Equatable {
    /// The commit whose snapshot was walked.
    public var transactionID: Int
    /// The page size and the last page of that snapshot.
    public var pageSize: Int
    public var lastPage: Int
    /// Pages in a database's tree: branch, leaf and overflow pages, of every database (free, main, named, and the
    /// duplicates of a key held in a tree of their own).
    public var branchPages: Int
    public var leafPages: Int
    public var overflowPages: Int
    /// Pages the free database lists as reusable.
    public var freePages: Int
    /// Named databases.
    public var databases: Int
}

extension Environment {
    /// Walks every page of the newest snapshot the way LMDB would reach it, and checks each before anything reads it
    /// through LMDB: the meta page's roots, every branch, leaf and overflow page reachable from them (its number,
    /// kind, the bounds of its free space, each node inside the page, each child and overflow run inside the file),
    /// every database record (depth, page and entry counts), the duplicates kept in sub-pages and sub-databases, and
    /// the free list. Every page from 2 to the last must be reached exactly once: by one tree, or by the free list.
    ///
    /// LMDB trusts the file: a damaged page makes it assert, read outside the page, loop, or fault. A snapshot that
    /// passes this walk gives LMDB nothing of that kind to trip on, so a command that reads all of it (a backup's
    /// compacting copy, a verification) or a writer that is about to build on it checks it first. The walk reads the
    /// file through a mapping of its own, inside a read transaction, so a writer in another process reuses none of
    /// the pages it looks at.
    ///
    /// Throws `LMDBError` with code `MDB_CORRUPTED`, naming the page and what is wrong with it.
    public func checkStructure() throws -> Structure {
        let dataFile = options.noSubdirectory ? path : path + "/data.mdb"
        for _ in 0..<8 {
            let walked: Structure? = try read { txn in
                try Self.walk(dataFile: dataFile, snapshot: UInt64(UInt(bitPattern: txn.id)), pageSize: info.pageSize)
            }
            if let walked { return walked }
        }
        throw LMDBError(code: MDB_CORRUPTED, operation: "\(dataFile): no meta page names the snapshot being read")
    }

    /// The walk touches every page: mapping them all at once costs less than a page fault per page.
    #if os(Linux)
    private static let populate = MAP_POPULATE
    #else
    private static let populate: Int32 = 0
    #endif

    /// Walks the snapshot of commit `snapshot`; nil when both meta pages were written again since the read
    /// transaction began (two commits by a writer meanwhile), so the snapshot's roots are no longer on disk.
    private static func walk(dataFile: String, snapshot: UInt64, pageSize: Int) throws -> Structure? {
        let fd = open(dataFile, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw LMDBError(code: errno, operation: "open(\(dataFile))") }
        defer { close(fd) }
        var metas = [UInt8](repeating: 0, count: 2 * pageSize)
        let got = metas.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard got == metas.count else {
            throw LMDBError(code: MDB_CORRUPTED, operation: "\(dataFile) is shorter than its two meta pages")
        }
        let both = metas.withUnsafeBytes { raw in
            (0..<2).map { index -> SnapshotRoots in
                SnapshotRoots(UnsafeRawBufferPointer(rebasing: raw[(index * pageSize)..<((index + 1) * pageSize)]))
            }
        }
        guard let meta = both.first(where: { $0.transactionID == snapshot }) else { return nil }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw LMDBError(code: errno, operation: "fstat(\(dataFile))") }
        let fileSize = UInt64(max(st.st_size, 0))
        guard meta.lastPage >= 1, meta.lastPage < fileSize / UInt64(pageSize) else {
            throw LMDBError(
                code: MDB_CORRUPTED,
                operation: "\(dataFile) holds \(fileSize) bytes but its meta page names page \(meta.lastPage) as its last")
        }
        let length = Int(meta.lastPage + 1) * pageSize
        guard let mapped = mmap(nil, length, PROT_READ, MAP_SHARED | Self.populate, fd, 0), mapped != MAP_FAILED else {
            throw LMDBError(code: errno, operation: "mmap(\(dataFile))")
        }
        defer { munmap(mapped, length) }
        var walker = PageWalker(
            file: UnsafeRawBufferPointer(start: mapped, count: length), pageSize: pageSize, lastPage: meta.lastPage)
        try walker.walk(meta.free, .free, "the free database")
        try walker.walk(meta.main, .main(meta.main.flags), "the main database")
        try walker.checkEveryPageReachedOnce()
        return Structure(
            transactionID: Int(truncatingIfNeeded: snapshot), pageSize: pageSize, lastPage: Int(meta.lastPage),
            branchPages: walker.branchPages, leafPages: walker.leafPages, overflowPages: walker.overflowPages,
            freePages: walker.freePages, databases: walker.databases)
    }
}

/// The fields of a meta page the walk needs: after the page header (16 bytes), the magic and version (4 + 4), the
/// address and map size (8 + 8), the free and main databases' records (48 each), the last page and the transaction
/// id (8 each).
private struct SnapshotRoots {
    var free: DatabaseRecord
    var main: DatabaseRecord
    var lastPage: UInt64
    var transactionID: UInt64

    init(_ page: UnsafeRawBufferPointer) {
        free = DatabaseRecord(UnsafeRawBufferPointer(rebasing: page[40..<88]))
        main = DatabaseRecord(UnsafeRawBufferPointer(rebasing: page[88..<136]))
        lastPage = page.loadUnaligned(fromByteOffset: 136, as: UInt64.self).littleEndian
        transactionID = page.loadUnaligned(fromByteOffset: 144, as: UInt64.self).littleEndian
    }
}

/// A database's record (`MDB_db`, 48 bytes): the key size of packed duplicates (4), flags (2), depth (2), its
/// branch, leaf and overflow page counts, its entries, and its root page (8 each).
private struct DatabaseRecord {
    var flags: UInt16
    var depth: UInt16
    var branchPages: UInt64
    var leafPages: UInt64
    var overflowPages: UInt64
    var entries: UInt64
    var root: UInt64

    init(_ bytes: UnsafeRawBufferPointer) {
        func word(_ at: Int) -> UInt64 { bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self).littleEndian }
        flags = bytes.loadUnaligned(fromByteOffset: 4, as: UInt16.self).littleEndian
        depth = bytes.loadUnaligned(fromByteOffset: 6, as: UInt16.self).littleEndian
        branchPages = word(8)
        leafPages = word(16)
        overflowPages = word(24)
        entries = word(32)
        root = word(40)
    }

    static let size = 48
    /// `P_INVALID`: the root of an empty database.
    static let noRoot = UInt64.max
}

/// Walks the trees of one snapshot through a read-only mapping of its pages `0...lastPage`. Every offset, size and
/// page number read from the file is checked against the page or the file before it is followed.
private struct PageWalker {
    let file: UnsafeRawBufferPointer
    let pageSize: Int
    let lastPage: UInt64
    /// Pages reached so far, by a tree or by the free list: a page reached twice is damage (a cycle, or two owners).
    private var reached: [UInt64]
    private(set) var branchPages = 0
    private(set) var leafPages = 0
    private(set) var overflowPages = 0
    private(set) var freePages = 0
    private(set) var databases = 0

    // LMDB's page and node layout (mdb.c): flags of a page and of a leaf node, and the sizes of their headers.
    static let header = 16
    static let nodeHeader = 8
    static let branch: UInt16 = 0x01
    static let leaf: UInt16 = 0x02
    static let overflow: UInt16 = 0x04
    static let dirty: UInt16 = 0x10
    static let leaf2: UInt16 = 0x20
    static let subPage: UInt16 = 0x40
    static let bigData: UInt16 = 0x01
    static let subData: UInt16 = 0x02
    static let dupData: UInt16 = 0x04
    static let dupSort: UInt16 = 0x04
    static let dupFixed: UInt16 = 0x10
    /// LMDB's default largest key (`mdb_env_get_maxkeysize`).
    static let maxKeySize = 511
    /// Deeper than any tree of 2^64 pages: a depth past it is damage, and keeps the walk's recursion bounded.
    static let maxDepth = 48

    init(file: UnsafeRawBufferPointer, pageSize: Int, lastPage: UInt64) {
        self.file = file
        self.pageSize = pageSize
        self.lastPage = lastPage
        reached = [UInt64](repeating: 0, count: Int(lastPage) / 64 + 1)
    }

    /// What the leaves of a tree hold.
    enum Kind {
        /// The free database: transaction ids, each with a list of reusable pages.
        case free
        /// The main database, with its flags: named databases' records, and whatever a caller kept in it.
        case main(UInt16)
        /// A named database with its flags.
        case named(UInt16)
        /// The duplicates of one key, held in a tree of their own: keys only.
        case duplicates
    }

    /// One tree being walked: what its leaves hold, the node flags they may carry, its depth, and its name.
    private struct Tree {
        var kind: Kind
        var leafNodeFlags: UInt8
        var depth: Int
        var what: String
    }

    /// What one tree held, to compare with its record.
    private struct Tally {
        var branchPages: UInt64 = 0
        var leafPages: UInt64 = 0
        var overflowPages: UInt64 = 0
        var entries: UInt64 = 0
    }

    mutating func walk(_ record: DatabaseRecord, _ kind: Kind, _ what: String) throws {
        if record.root == DatabaseRecord.noRoot {
            guard record.depth == 0, record.entries == 0,
                record.branchPages == 0, record.leafPages == 0, record.overflowPages == 0
            else { throw damaged("\(what) has no root page but a depth of \(record.depth) and \(record.entries) entries") }
            return
        }
        guard record.depth >= 1, record.depth <= Self.maxDepth else {
            throw damaged("\(what) has a depth of \(record.depth)")
        }
        var tally = Tally()
        let tree = Tree(kind: kind, leafNodeFlags: Self.leafNodeFlags(kind), depth: Int(record.depth), what: what)
        try visit(record.root, level: 1, tree, &tally)
        guard tally.branchPages == record.branchPages, tally.leafPages == record.leafPages,
            tally.overflowPages == record.overflowPages, tally.entries == record.entries
        else {
            throw damaged(
                "\(what) records \(record.branchPages) branch, \(record.leafPages) leaf, \(record.overflowPages) "
                    + "overflow pages and \(record.entries) entries; its tree holds \(tally.branchPages), "
                    + "\(tally.leafPages), \(tally.overflowPages) and \(tally.entries)")
        }
    }

    /// Every page after the two meta pages belongs to exactly one tree or to the free list; one that nothing reaches
    /// is a page LMDB lost track of, which a compacting copy refuses.
    func checkEveryPageReachedOnce() throws {
        for page in stride(from: 2, through: lastPage, by: 1) where !isReached(page) {
            throw damaged("page \(page) belongs to no database and is not in the free list")
        }
    }

    private mutating func visit(_ number: UInt64, level: Int, _ tree: Tree, _ tally: inout Tally) throws {
        let (kind, depth, what) = (tree.kind, tree.depth, tree.what)
        let page = try claim(number, what)
        let flags = page.loadUnaligned(fromByteOffset: 10, as: UInt16.self).littleEndian
        let isLeaf = level == depth
        let expected = isLeaf ? Self.leaf : Self.branch
        guard flags == expected else {
            throw damaged(
                "page \(number) of \(what) has the flags 0x\(String(flags, radix: 16)); at level \(level) of \(depth) "
                    + "it must be a \(isLeaf ? "leaf" : "branch") (0x\(String(expected, radix: 16)))")
        }
        let count = try checkNodeOffsets(page, "page \(number) of \(what)")
        if isLeaf {
            tally.leafPages += 1
            leafPages += 1
            for index in 0..<count {
                try leafNode(
                    page, at: Self.nodeOffset(page, index), tree.leafNodeFlags, kind, &tally,
                    "node \(index) of page \(number) of \(what)")
            }
        } else {
            tally.branchPages += 1
            branchPages += 1
            // LMDB keeps two keys in every branch page but in the free database's, which may shrink to one.
            let fewest: Int
            if case .free = kind { fewest = 1 } else { fewest = 2 }
            guard count >= fewest else {
                throw damaged("page \(number) of \(what) is a branch of \(count) keys")
            }
            for index in 0..<count {
                let offset = Self.nodeOffset(page, index)
                let keySize = try keySize(page, at: offset, "node \(index) of page \(number) of \(what)")
                guard offset + Self.nodeHeader + keySize <= page.count else {
                    throw damaged(
                        "node \(index) of page \(number) of \(what) has a key of \(keySize) bytes past the end of the page")
                }
                let child =
                    UInt64(page.loadUnaligned(fromByteOffset: offset, as: UInt16.self).littleEndian)
                    | UInt64(page.loadUnaligned(fromByteOffset: offset + 2, as: UInt16.self).littleEndian) << 16
                    | UInt64(page.loadUnaligned(fromByteOffset: offset + 4, as: UInt16.self).littleEndian) << 32
                try visit(child, level: level + 1, tree, &tally)
            }
        }
    }

    /// Checks the offsets of a page's nodes (or a sub-page's): each leaves room for a node header in the page, at or
    /// after the free space. Returns how many nodes there are.
    private func checkNodeOffsets(_ page: UnsafeRawBufferPointer, _ what: @autoclosure () -> String) throws -> Int {
        let lower = Int(page.loadUnaligned(fromByteOffset: 12, as: UInt16.self).littleEndian)
        let upper = Int(page.loadUnaligned(fromByteOffset: 14, as: UInt16.self).littleEndian)
        guard Self.header <= lower, lower <= upper, upper <= page.count, (lower - Self.header) % 2 == 0 else {
            throw damaged("\(what()) has its free space at \(lower)..<\(upper), outside \(Self.header)..<\(page.count)")
        }
        let count = (lower - Self.header) / 2
        for index in 0..<count {
            let offset = Self.nodeOffset(page, index)
            guard offset >= upper, offset + Self.nodeHeader <= page.count else {
                throw damaged("\(what()) has node \(index) at \(offset), outside \(upper)..<\(page.count)")
            }
        }
        return count
    }

    @inline(__always)
    private static func nodeOffset(_ page: UnsafeRawBufferPointer, _ index: Int) -> Int {
        Int(page.loadUnaligned(fromByteOffset: header + 2 * index, as: UInt16.self).littleEndian)
    }

    private func keySize(_ page: UnsafeRawBufferPointer, at offset: Int, _ what: @autoclosure () -> String) throws -> Int {
        let size = Int(page.loadUnaligned(fromByteOffset: offset + 6, as: UInt16.self).littleEndian)
        guard size <= Self.maxKeySize else { throw damaged("\(what()) has a key of \(size) bytes") }
        return size
    }

    /// The node flags a leaf of `kind` may hold, one bit per value (they are below 8): a value inline or on
    /// overflow pages; in the main database a named database's record; in a database of sorted duplicates (never
    /// that large) one value, or several in a sub-page or a tree of their own.
    private static func leafNodeFlags(_ kind: Kind) -> UInt8 {
        func bits(_ flags: UInt16...) -> UInt8 { flags.reduce(0) { $0 | 1 << $1 } }
        func plain(_ flags: UInt16) -> UInt8 {
            flags & dupSort != 0 ? bits(0, dupData, dupData | subData) : bits(0, bigData)
        }
        switch kind {
        case .free, .duplicates: return bits(0, bigData)
        case .main(let flags): return plain(flags) | bits(subData)
        case .named(let flags): return plain(flags)
        }
    }

    private mutating func leafNode(
        _ page: UnsafeRawBufferPointer, at offset: Int, _ allowed: UInt8, _ kind: Kind, _ tally: inout Tally,
        _ what: @autoclosure () -> String
    ) throws {
        let dataSize =
            Int(page.loadUnaligned(fromByteOffset: offset, as: UInt16.self).littleEndian)
            | Int(page.loadUnaligned(fromByteOffset: offset + 2, as: UInt16.self).littleEndian) << 16
        let nodeFlags = page.loadUnaligned(fromByteOffset: offset + 4, as: UInt16.self).littleEndian
        let keySize = try keySize(page, at: offset, what())
        let dataStart = offset + Self.nodeHeader + keySize
        guard nodeFlags < 8, allowed & (1 << nodeFlags) != 0 else {
            throw damaged("\(what()) has the node flags 0x\(String(nodeFlags, radix: 16))")
        }
        if case .free = kind, keySize != 8 { throw damaged("\(what()) has a key of \(keySize) bytes, not a transaction id") }
        if case .duplicates = kind, dataSize != 0 { throw damaged("\(what()) is a duplicate with \(dataSize) bytes of data") }
        if nodeFlags == Self.bigData {
            guard dataStart + 8 <= page.count else { throw damaged("\(what()) runs past the end of its page") }
            let first = page.loadUnaligned(fromByteOffset: dataStart, as: UInt64.self).littleEndian
            let data = try overflowRun(first, holding: dataSize, &tally, what())
            if case .free = kind { try freeList(data, what()) }
            tally.entries += 1
            return
        }
        guard dataStart + dataSize <= page.count else {
            throw damaged("\(what()) holds \(dataSize) bytes of data past the end of its page")
        }
        let data = UnsafeRawBufferPointer(rebasing: page[dataStart..<(dataStart + dataSize)])
        switch nodeFlags {
        case Self.subData:
            guard dataSize == DatabaseRecord.size else { throw damaged("\(what()) holds a database record of \(dataSize) bytes") }
            let record = DatabaseRecord(data)
            guard record.flags & Self.dupFixed == 0 else {
                throw damaged("\(what()) names a database of packed duplicates (flags 0x\(String(record.flags, radix: 16)))")
            }
            let name = String(decoding: page[(offset + Self.nodeHeader)..<dataStart], as: UTF8.self)
            databases += 1
            tally.entries += 1
            try walk(record, .named(record.flags), "the database '\(name)'")
        case Self.dupData | Self.subData:
            guard dataSize == DatabaseRecord.size else { throw damaged("\(what()) holds a record of \(dataSize) bytes") }
            let record = DatabaseRecord(data)
            try walk(record, .duplicates, "the duplicates of \(what())")
            tally.entries += record.entries
        case Self.dupData:
            tally.entries += try subPage(data, what())
        default:
            if case .free = kind { try freeList(data, what()) }
            tally.entries += 1
        }
    }

    /// The duplicates of one key kept inline: a small leaf page (`P_LEAF | P_SUBP`, with LMDB's dirty bit) whose
    /// bounds and nodes lie within the node's data. Returns how many it holds.
    private func subPage(_ data: UnsafeRawBufferPointer, _ what: @autoclosure () -> String) throws -> UInt64 {
        guard data.count >= Self.header else { throw damaged("\(what()) holds a sub-page of \(data.count) bytes") }
        let flags = data.loadUnaligned(fromByteOffset: 10, as: UInt16.self).littleEndian & ~Self.dirty
        guard flags == Self.leaf | Self.subPage else {
            throw damaged("\(what()) holds a sub-page with the flags 0x\(String(flags, radix: 16))")
        }
        let count = try checkNodeOffsets(data, "the sub-page of \(what())")
        for index in 0..<count {
            let offset = Self.nodeOffset(data, index)
            let keySize = try keySize(data, at: offset, "duplicate \(index) of \(what())")
            let dataSize =
                Int(data.loadUnaligned(fromByteOffset: offset, as: UInt16.self).littleEndian)
                | Int(data.loadUnaligned(fromByteOffset: offset + 2, as: UInt16.self).littleEndian) << 16
            let nodeFlags = data.loadUnaligned(fromByteOffset: offset + 4, as: UInt16.self).littleEndian
            guard nodeFlags == 0, dataSize == 0, offset + Self.nodeHeader + keySize <= data.count else {
                throw damaged(
                    "duplicate \(index) of \(what()) does not fit its sub-page (flags 0x\(String(nodeFlags, radix: 16)), "
                        + "\(keySize) + \(dataSize) bytes)")
            }
        }
        return UInt64(count)
    }

    /// A value kept on overflow pages: a run starting at `first` whose header counts its pages, long enough for
    /// `size` bytes. Returns the value's bytes.
    private mutating func overflowRun(
        _ first: UInt64, holding size: Int, _ tally: inout Tally, _ what: @autoclosure () -> String
    ) throws -> UnsafeRawBufferPointer {
        let page = try claim(first, "the overflow run of \(what())")
        let flags = page.loadUnaligned(fromByteOffset: 10, as: UInt16.self).littleEndian
        guard flags == Self.overflow else {
            throw damaged("page \(first), the overflow run of \(what()), has the flags 0x\(String(flags, radix: 16))")
        }
        let count = UInt64(page.loadUnaligned(fromByteOffset: 12, as: UInt32.self).littleEndian)
        let needed = UInt64((Self.header - 1 + size) / pageSize + 1)
        guard count >= needed, count <= lastPage, first <= lastPage - count + 1 else {
            throw damaged("the overflow run of \(what()) at page \(first) counts \(count) pages for \(size) bytes")
        }
        for next in (first + 1)..<(first + count) { try claimPage(next, "the overflow run of \(what())") }
        tally.overflowPages += count
        overflowPages += Int(count)
        let start = Int(first) * pageSize + Self.header
        return UnsafeRawBufferPointer(rebasing: file[start..<(start + size)])
    }

    /// A free list entry: a count, then that many page numbers, each a page the snapshot does not use.
    private mutating func freeList(_ data: UnsafeRawBufferPointer, _ what: @autoclosure () -> String) throws {
        guard data.count >= 8, data.count % 8 == 0 else { throw damaged("\(what()) is a free list of \(data.count) bytes") }
        let count = data.loadUnaligned(fromByteOffset: 0, as: UInt64.self).littleEndian
        guard count == UInt64(data.count / 8 - 1) else {
            throw damaged("\(what()) counts \(count) free pages in \(data.count) bytes")
        }
        for index in 0..<Int(count) {
            let number = data.loadUnaligned(fromByteOffset: 8 * (index + 1), as: UInt64.self).littleEndian
            try claimPage(number, "the free list \(what())")
            freePages += 1
        }
    }

    /// The page `number`, marked reached: within 2...lastPage and not reached before.
    private mutating func claim(_ number: UInt64, _ what: @autoclosure () -> String) throws -> UnsafeRawBufferPointer {
        try claimPage(number, what())
        let start = Int(number) * pageSize
        let page = UnsafeRawBufferPointer(rebasing: file[start..<(start + pageSize)])
        let stored = page.loadUnaligned(fromByteOffset: 0, as: UInt64.self).littleEndian
        guard stored == number else { throw damaged("page \(number) of \(what()) is numbered \(stored)") }
        return page
    }

    private mutating func claimPage(_ number: UInt64, _ what: @autoclosure () -> String) throws {
        guard number >= 2, number <= lastPage else {
            throw damaged("\(what()) names page \(number), outside 2...\(lastPage)")
        }
        guard !isReached(number) else { throw damaged("\(what()) names page \(number), which is reached twice") }
        reached[Int(number / 64)] |= 1 << (number % 64)
    }

    private func isReached(_ number: UInt64) -> Bool { reached[Int(number / 64)] & (1 << (number % 64)) != 0 }

    private func damaged(_ why: String) -> LMDBError { LMDBError(code: MDB_CORRUPTED, operation: why) }
}
