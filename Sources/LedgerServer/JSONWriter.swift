import LedgerCore
import LedgerStore

/// Writes JSON straight into bytes, for the answer read most often (`GET /v1/customers/{id}`): no `Encoder`
/// machinery, no boxing, dictionary keys in sorted order. Its output parses to the same document as the `Codable`
/// encoding of the same value (a test holds them together).
struct JSONWriter {
    private(set) var bytes: [UInt8] = []
    /// One entry per open container: whether its next member is its first (no comma before it).
    private var first: [Bool] = []
    /// A key was just written: the next value is its value, not a new member.
    private var afterKey = false

    init(capacity: Int = 1024) { bytes.reserveCapacity(capacity) }

    private mutating func beginValue() {
        if afterKey {
            afterKey = false
            return
        }
        guard let isFirst = first.last else { return }
        if !isFirst { bytes.append(UInt8(ascii: ",")) }
        first[first.count - 1] = false
    }

    /// Writes an object; `body` writes its members with `key` followed by one value each.
    mutating func object(_ body: (inout JSONWriter) -> Void) {
        beginValue()
        bytes.append(UInt8(ascii: "{"))
        first.append(true)
        body(&self)
        first.removeLast()
        bytes.append(UInt8(ascii: "}"))
    }

    /// Writes an array of `items`, each with `write`.
    mutating func array<S: Sequence>(_ items: S, _ write: (inout JSONWriter, S.Element) -> Void) {
        beginValue()
        bytes.append(UInt8(ascii: "["))
        first.append(true)
        for item in items { write(&self, item) }
        first.removeLast()
        bytes.append(UInt8(ascii: "]"))
    }

    /// Starts a member of the enclosing object.
    mutating func key(_ name: String) {
        beginValue()
        writeString(name)
        bytes.append(UInt8(ascii: ":"))
        afterKey = true
    }

    mutating func string(_ s: String) {
        beginValue()
        writeString(s)
    }

    mutating func number(_ n: Int64) {
        beginValue()
        bytes.append(contentsOf: String(n).utf8)
    }

    mutating func number(_ n: UInt64) {
        beginValue()
        bytes.append(contentsOf: String(n).utf8)
    }

    mutating func number(_ n: Int64?) {
        guard let n else { return null() }
        number(n)
    }

    mutating func number(_ n: UInt64?) {
        guard let n else { return null() }
        number(n)
    }

    mutating func bool(_ b: Bool) {
        beginValue()
        bytes.append(contentsOf: (b ? "true" : "false").utf8)
    }

    mutating func null() {
        beginValue()
        bytes.append(contentsOf: "null".utf8)
    }

    private mutating func writeString(_ s: String) { appendJSONString(s, to: &bytes) }
}

/// An answer that writes itself with `JSONWriter` (the hot read paths); others go through `Codable`.
protocol DirectJSON {
    func write(to json: inout JSONWriter)
}

// MARK: - The customer answer (API.md "Customer")

extension CustomerView: DirectJSON {
    func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("appUserId"); o.string(appUserId)
            o.key("environment"); o.string(environment)
            o.key("at"); o.number(at)
            o.key("asOf"); o.number(asOf)
            o.key("entitlements")
            o.object { e in
                for name in entitlements.keys.sorted() {
                    e.key(name)
                    entitlements[name]!.write(to: &e)
                }
            }
            o.key("subscriptions"); o.array(subscriptions) { $0.string($1) }
            o.key("credits")
            o.object { c in
                for name in credits.keys.sorted() {
                    c.key(name); c.number(credits[name]!)
                }
            }
            o.key("bindings"); o.array(bindings) { $1.write(to: &$0) }
            o.key("refusedClaims"); o.array(refusedClaims) { $1.write(to: &$0) }
        }
    }
}

extension EntitlementView: DirectJSON {
    func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("active"); o.bool(active)
            o.key("expiresAt"); o.number(expiresAt)
            o.key("productId"); o.string(productId)
            o.key("originalTransactionId"); o.string(originalTransactionId)
            o.key("grantedBy")
            o.array(grantedBy) { j, g in
                j.object { o in
                    o.key("originalTransactionId"); o.string(g.originalTransactionId)
                    o.key("transactionId"); o.string(g.transactionId)
                    o.key("productId"); o.string(g.productId)
                    if let expiresAt = g.expiresAt { o.key("expiresAt"); o.number(expiresAt) }
                }
            }
        }
    }
}

extension BindingView: DirectJSON {
    func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("originalTransactionId"); o.string(originalTransactionId)
            o.key("from"); o.number(from)
            o.key("to"); o.number(to)
            o.key("cause"); o.string(cause)
            o.key("seq"); o.number(seq)
        }
    }
}

// MARK: - Append results (API.md "Result")

extension AppendResult: DirectJSON {
    func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("status"); o.string(status.rawValue)
            if let seq { o.key("seq"); o.number(seq) }
            o.key("events")
            o.array(events) { j, e in
                j.object { o in
                    o.key("seq"); o.number(e.seq)
                    o.key("kind"); o.string(e.kind.rawValue)
                    if let t = e.transactionId { o.key("transactionId"); o.string(t) }
                    if let t = e.originalTransactionId { o.key("originalTransactionId"); o.string(t) }
                }
            }
            if let error {
                o.key("error")
                o.object { o in
                    o.key("code"); o.string(error.code)
                    o.key("message"); o.string(error.message)
                }
            }
        }
    }
}

extension LedgerAPI.ResultsDocument: DirectJSON {
    func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("results"); o.array(results) { $1.write(to: &$0) }
        }
    }
}

/// `s` as a JSON string literal (quotes, escapes for quote, backslash and control characters), appended to `bytes`.
/// Shared by `JSONWriter` and `StreamingJSONEncoder`.
func appendJSONString(_ s: String, to bytes: inout [UInt8]) {
    bytes.append(UInt8(ascii: "\""))
    for b in s.utf8 {
        switch b {
        case UInt8(ascii: "\""): bytes.append(contentsOf: [92, 34])
        case UInt8(ascii: "\\"): bytes.append(contentsOf: [92, 92])
        case 0x0A: bytes.append(contentsOf: [92, UInt8(ascii: "n")])
        case 0x0D: bytes.append(contentsOf: [92, UInt8(ascii: "r")])
        case 0x09: bytes.append(contentsOf: [92, UInt8(ascii: "t")])
        case 0..<0x20:
            let hex = Array("0123456789abcdef".utf8)
            bytes.append(contentsOf: [92, UInt8(ascii: "u"), 48, 48, hex[Int(b >> 4)], hex[Int(b & 15)]])
        default: bytes.append(b)
        }
    }
    bytes.append(UInt8(ascii: "\""))
}
