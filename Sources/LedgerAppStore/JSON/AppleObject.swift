import LedgerCore

// MARK: - AppleObject

/// One JSON object from Apple with accessors that say which field was wrong when it is.
///
/// These accessors expect JSON's own types (V2 documents); the V1 ones (`v1…`, in `AppleObject+V1.swift`) expect
/// Apple's V1 habit of sending numbers and booleans as strings. JSON `null` reads as absent.
struct AppleObject {
    let fields: [String: JSON]
    /// Where this object sits in the document (`unified_receipt.latest_receipt_info[2]`), for error messages.
    let path: String

    init(_ fields: [String: JSON], path: String = "") {
        self.fields = fields
        self.path = path
    }

    func name(_ key: String) -> String { path.isEmpty ? key : path + "." + key }

    @inline(__always)
    func value(_ key: String) -> JSON? {
        guard let v = fields[key], !v.isNull else { return nil }
        return v
    }

    func has(_ key: String) -> Bool { value(key) != nil }

    // MARK: - JSON types

    /// The most bytes a field the ledger models may hold. Apple's ids, product ids, tokens, codes and names are far
    /// shorter; a longer one is not Apple's, and it would be copied into every timeline and answer that names it (a
    /// product id of megabytes made one customer read take hundreds of megabytes). Fields the ledger does not model
    /// are kept whole, with the raw input, and never copied into an answer.
    static let maxFieldBytes = 1024

    func string(_ key: String) throws(InputError) -> String? {
        guard let v = value(key) else { return nil }
        guard case .string(let s) = v else { throw .wrongType(name(key), expected: "a string") }
        try checkLength(s, key)
        return s
    }

    /// Refuses a modeled text field over `maxFieldBytes` (`out_of_range`). Apple's `signed…` fields carry a JWS
    /// (a few KB, with its certificate chain): those are parsed into fields of their own, which are checked then.
    @inline(__always)
    func checkLength(_ s: String, _ key: String) throws(InputError) {
        guard s.utf8.count > Self.maxFieldBytes, !key.hasPrefix("signed") else { return }
        throw .outOfRange("\(name(key)) is \(s.utf8.count) bytes long; a field the ledger keeps holds at most \(Self.maxFieldBytes)")
    }

    /// A string every input of its kind carries; an empty one names nothing, so it is as good as missing.
    func requiredString(_ key: String) throws(InputError) -> String {
        guard let s = try string(key) else { throw .missingField(name(key)) }
        guard !s.isEmpty else { throw .emptyField(name(key)) }
        return s
    }

    /// An id that should be a string but is tolerated as an integer number.
    func identifier(_ key: String) throws(InputError) -> String? {
        guard let v = value(key) else { return nil }
        if case .string(let s) = v {
            guard !s.isEmpty else { throw .wrongType(name(key), expected: "a non-empty id") }
            try checkLength(s, key)
            return s
        }
        if let i = JSONValue.int64(v) { return String(i) }
        throw .wrongType(name(key), expected: "an id string")
    }

    func requiredIdentifier(_ key: String) throws(InputError) -> String {
        if case .string(let s)? = value(key), s.isEmpty { throw .emptyField(name(key)) }
        guard let s = try identifier(key) else { throw .missingField(name(key)) }
        return s
    }

    func int64(_ key: String) throws(InputError) -> Int64? {
        guard let v = value(key) else { return nil }
        guard let i = JSONValue.int64(v) else { throw .wrongType(name(key), expected: "an integer number") }
        return i
    }

    /// A JSON boolean, or the integers 0 / 1 (V2 `autoRenewStatus`).
    func bool(_ key: String) throws(InputError) -> Bool? {
        guard let v = value(key) else { return nil }
        if case .bool(let b) = v { return b }
        if let i = JSONValue.int64(v), i == 0 || i == 1 { return i == 1 }
        throw .wrongType(name(key), expected: "a boolean")
    }

    func object(_ key: String) throws(InputError) -> AppleObject? {
        guard let v = value(key) else { return nil }
        guard case .object(let o) = v else { throw .wrongType(name(key), expected: "an object") }
        return AppleObject(o, path: name(key))
    }

    /// The objects of an array field; a single object is read as a one-element array (iOS 6 receipts).
    func objects(_ key: String) throws(InputError) -> [AppleObject] {
        guard let v = value(key) else { return [] }
        if case .object(let o) = v { return [AppleObject(o, path: name(key))] }
        guard case .array(let a) = v else { throw .wrongType(name(key), expected: "an array of objects") }
        var result = [AppleObject]()
        result.reserveCapacity(a.count)
        for (i, element) in a.enumerated() {
            guard case .object(let o) = element else {
                throw .wrongType("\(name(key))[\(i)]", expected: "an object")
            }
            result.append(AppleObject(o, path: "\(name(key))[\(i)]"))
        }
        return result
    }

    /// An array of strings.
    func strings(_ key: String) throws(InputError) -> [String]? {
        guard let v = value(key) else { return nil }
        guard case .array(let a) = v else { throw .wrongType(name(key), expected: "an array of strings") }
        var result: [String] = []
        result.reserveCapacity(a.count)
        for (i, element) in a.enumerated() {
            guard case .string(let s) = element else { throw .wrongType("\(name(key))[\(i)]", expected: "a string") }
            try checkLength(s, "\(key)[\(i)]")
            result.append(s)
        }
        return result
    }

    func environment(_ key: String) throws(InputError) -> AppStoreEnvironment? {
        guard let s = try string(key) else { return nil }
        guard let e = AppStoreEnvironment(appleName: s) else { throw .unknownEnvironment(s, field: name(key)) }
        return e
    }

    // MARK: - Unknown fields

    /// Every field not in `known`, as compact JSON text: what Apple sent that this version does not model.
    func extras(excluding known: Set<String>) -> [String: String] {
        var extra = [String: String]()
        for (key, value) in fields where !known.contains(key) {
            extra[key] = JSONText.compact(value)
        }
        return extra
    }
}
