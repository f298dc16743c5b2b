internal import CLMDB

/// A handle on one database inside an environment (`MDB_dbi`). Cheap to copy; valid for the environment's life.
public struct Database: Sendable, Hashable {
    let dbi: UInt32
    public let name: String?
    public let flags: Flags

    /// Database flags (`mdb_dbi_open`).
    public struct Flags: OptionSet, Sendable, Hashable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        /// Keys compared in reverse byte order.
        public static let reverseKey = Flags(rawValue: UInt32(MDB_REVERSEKEY))
        /// Several sorted values per key.
        public static let dupSort = Flags(rawValue: UInt32(MDB_DUPSORT))
        /// Keys are native unsigned integers (all the same size).
        public static let integerKey = Flags(rawValue: UInt32(MDB_INTEGERKEY))
        /// With `dupSort`: every value has the same size (enables packed duplicates).
        public static let dupFixed = Flags(rawValue: UInt32(MDB_DUPFIXED))
        public static let integerDup = Flags(rawValue: UInt32(MDB_INTEGERDUP))
        public static let reverseDup = Flags(rawValue: UInt32(MDB_REVERSEDUP))
        /// Create the database if it does not exist.
        public static let create = Flags(rawValue: UInt32(MDB_CREATE))
    }

    /// Statistics of one database (`mdb_stat`).
    public struct Statistics: Sendable {
        public var entries: Int
        public var depth: Int
        public var branchPages: Int
        public var leafPages: Int
        public var overflowPages: Int
        public var pageSize: Int
        public var bytes: Int { (branchPages + leafPages + overflowPages) * pageSize }
    }
}

/// Flags for a put (`mdb_put`, `mdb_cursor_put`).
public struct PutFlags: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Fail with `LMDBError.keyExists` if the key is present.
    public static let noOverwrite = PutFlags(rawValue: UInt32(MDB_NOOVERWRITE))
    /// dupSort: fail if the key/value pair is present.
    public static let noDuplicateData = PutFlags(rawValue: UInt32(MDB_NODUPDATA))
    /// The key sorts after every key present: a fast append (fails with `keyExists` otherwise).
    public static let append = PutFlags(rawValue: UInt32(MDB_APPEND))
    /// dupSort: the value sorts after every value of its key.
    public static let appendDuplicate = PutFlags(rawValue: UInt32(MDB_APPENDDUP))
}
