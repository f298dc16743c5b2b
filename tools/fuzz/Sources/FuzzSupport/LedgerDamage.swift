// MARK: - Damage to a data file, from the fuzzer's bytes

/// One fuzzer input read as damage done to a ledger's `data.mdb`:
///
///     flags        1 byte: bit 0 cut the file short, bit 1 cut it at a page boundary (with bit 0)
///     length       4 bytes little-endian, only with bit 0: the length to cut to, modulo the file's size + 1
///     patch        repeated to the end:
///       offset     4 bytes little-endian, modulo the file's size (after any cut)
///       count      1 byte: count % 16 + 1 bytes follow
///       bytes      written over the file from `offset` on (as many as fit; a short last patch writes what it has)
///
/// The empty input is the file undamaged.
public struct LedgerDamage: Sendable {
    /// The length to cut the file to, if any.
    public var length: Int?
    public var patches: [(offset: Int, bytes: [UInt8])] = []

    /// LMDB's page size on the platforms the ledger runs on.
    public static let pageSize = 4096

    public init(_ input: [UInt8], fileSize: Int) {
        var reader = ByteReader(input)
        guard !reader.atEnd else { return }
        let flags = reader.byte()
        var size = fileSize
        if flags & 1 != 0 {
            var cut = Int(reader.uint32() % UInt32(truncatingIfNeeded: fileSize + 1))
            if flags & 2 != 0 { cut -= cut % Self.pageSize }
            length = cut
            size = cut
        }
        while !reader.atEnd {
            let offset = Int(reader.uint32())
            let count = Int(reader.byte() % 16) + 1
            let bytes = reader.bytes(count)
            if size > 0, !bytes.isEmpty { patches.append((offset % size, bytes)) }
        }
    }

    /// `file` with the damage done.
    public func apply(to file: [UInt8]) -> [UInt8] {
        var out = length.map { Array(file.prefix($0)) } ?? file
        for (offset, bytes) in patches {
            let end = min(offset + bytes.count, out.count)
            out.replaceSubrange(offset..<end, with: bytes.prefix(end - offset))
        }
        return out
    }

    /// The bytes of an input (for seeds).
    public static func input(cutTo length: UInt32? = nil, atPage: Bool = false, _ patches: [(UInt32, [UInt8])] = [])
        -> [UInt8]
    {
        var out: [UInt8] = [(length == nil ? 0 : 1) | (atPage ? 2 : 0)]
        if let length { out += withUnsafeBytes(of: length.littleEndian) { Array($0) } }
        for (offset, bytes) in patches {
            precondition((1...16).contains(bytes.count), "a patch writes 1 to 16 bytes")
            out += withUnsafeBytes(of: offset.littleEndian) { Array($0) } + [UInt8(bytes.count - 1)] + bytes
        }
        return out
    }

    /// Seeds: the file undamaged; every field of both meta pages LMDB or the wrapper reads (the page header's
    /// number and flags; magic, version, map size; each database record's flags, depth, page counts, entries and
    /// root; the last page; the transaction id) set to 0, 1, a small page number and all ones; the header of the
    /// first pages (number, flags, free-space bounds) likewise; the file cut at page boundaries and in a page.
    public static func seeds() -> [[UInt8]] {
        let page = UInt32(pageSize)
        let u64: [[UInt8]] = [0, 1, 2, 3, 40, 0x7FFF_FFFF_FFFF_FFFF, UInt64.max].map {
            withUnsafeBytes(of: UInt64($0).littleEndian) { Array($0) }
        }
        // Offsets within a meta page: page number, flags; magic, version; map size; the free database's record
        // (flags, depth, branch, leaf, overflow pages, entries, root); the main database's; last page; txn id.
        let metaFields: [UInt32] = [0, 10, 16, 20, 32, 44, 46, 48, 56, 64, 72, 80, 92, 94, 96, 104, 112, 120, 128, 136, 144]
        var seeds: [[UInt8]] = [[]]
        for meta in [0, page] {
            for field in metaFields {
                for value in u64 { seeds.append(input([(meta + field, value)])) }
            }
        }
        // Both meta pages' main root and last page at once (LMDB picks the one with the newer transaction).
        for value in u64 { seeds.append(input([(128, value), (page + 128, value), (136, value), (page + 136, value)])) }
        for number in 2..<24 {
            let start = UInt32(number) * page
            // Page header: number (8), pad (2), flags (2), lower and upper free-space bounds (2 each) or overflow
            // count (4); then the node pointers.
            for (field, values) in [
                (0, [[0], [1], [0xFF, 0xFF, 0xFF, 0xFF]]), (10, [[1, 0], [2, 0], [4, 0], [8, 0], [0x20, 0], [0x40, 0]]),
                (12, [[0, 0], [0xFF, 0xFF], [0x10, 0]]), (14, [[0, 0], [0xFF, 0xFF], [0x10, 0]]),
                (16, [[0, 0], [0xFF, 0x0F], [0xFF, 0xFF]]),
            ] as [(UInt32, [[UInt8]])] {
                for value in values { seeds.append(input([(start + field, value)])) }
            }
            seeds.append(input(cutTo: start, atPage: true))
            seeds.append(input(cutTo: start + 100))
        }
        return seeds
    }
}

extension ByteReader {
    mutating func uint32() -> UInt32 {
        bytes(4).reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }
}
