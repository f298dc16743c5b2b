// MARK: - A read route and its query string, from the fuzzer's bytes

/// A GET route of the server, as `FuzzQuery` asks it.
public struct ReadRoute: Sendable {
    /// What a 200 answer's body is.
    public enum Body: Sendable { case json, ndjson, svg, html, text, console }

    /// What a path segment names; the ids of each kind come from the ledger the target populated.
    public enum ID: Sendable, CaseIterable { case subscription, user, entitlement, transaction, metric }

    /// The route as `LedgerRoutes.queryParameters` names it (`GET /v1/customers/{appUserId}`).
    public var name: String
    /// The query parameters it reads.
    public var parameters: [String]
    public var body: Body
    /// Whether the fast path (`FastPathHandler`) may answer it.
    public var fastRead = false

    /// Its path template's placeholders, in order, by the kind of id each takes.
    public var ids: [ID] {
        var out: [ID] = []
        var rest = Substring(name)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            switch rest[rest.index(after: open)..<close] {
            case "otid": out.append(.subscription)
            case "appUserId": out.append(.user)
            case "entitlement": out.append(.entitlement)
            case "name": out.append(.metric)
            default: out.append(.transaction)
            }
            rest = rest[rest.index(after: close)...]
        }
        return out
    }

    /// The path with each placeholder replaced by the (already encoded) segment of `segments`, in order.
    public func path(_ segments: [String]) -> String {
        var out = ""
        var rest = Substring(name.dropFirst("GET ".count))
        var next = segments.makeIterator()
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            out += rest[..<open]
            out += next.next() ?? ""
            rest = rest[rest.index(after: close)...]
        }
        return out + rest
    }
}

/// Every GET route of the router with the parameters it reads: a copy of `LedgerRoutes.queryParameters` (internal to
/// LedgerServer), which `FuzzQuery` checks against the router when it starts, plus one route the router does not
/// have (its answer: 404 `not_found`).
public enum ReadRoutes {
    public static let all: [ReadRoute] = [
        ReadRoute(name: "GET /v1/events", parameters: ["after", "limit", "follow", "timeout"], body: .ndjson),
        ReadRoute(name: "GET /v1/lifecycle", parameters: ["after", "limit", "follow", "timeout"], body: .ndjson),
        ReadRoute(name: "GET /v1/subscriptions/{otid}", parameters: clocks, body: .json, fastRead: true),
        ReadRoute(name: "GET /v1/customers/{appUserId}", parameters: clocks, body: .json, fastRead: true),
        ReadRoute(name: "GET /v1/customers/{appUserId}/entitlements/{entitlement}/why", parameters: clocks, body: .json),
        ReadRoute(name: "GET /v1/revenue", parameters: revenue, body: .json),
        ReadRoute(name: "GET /v1/customers/{appUserId}/revenue", parameters: revenue, body: .json),
        ReadRoute(
            name: "GET /v1/metrics/{name}",
            parameters: ["from", "to", "interval", "timeZone", "productId", "entitlement", "asOf", "environment", "format"],
            body: .json),
        ReadRoute(name: "GET /v1/customers/{appUserId}/grants", parameters: clocks, body: .json),
        ReadRoute(name: "GET /v1/subscriptions/{otid}/timeline.svg", parameters: clocks, body: .svg),
        ReadRoute(name: "GET /v1/subscriptions/{otid}/timeline.html", parameters: clocks, body: .html),
        ReadRoute(name: "GET /v1/transactions/{transactionId}", parameters: [], body: .json),
        ReadRoute(name: "GET /v1/health", parameters: [], body: .json, fastRead: true),
        ReadRoute(name: "GET /metrics", parameters: [], body: .text),
        ReadRoute(
            name: "GET /console", parameters: ["environment", "asOf", "to", "productId", "entitlement"], body: .console),
        ReadRoute(name: "GET /console/customers", parameters: ["appUserId", "environment", "at", "asOf"], body: .console),
        ReadRoute(name: "GET /console/subscriptions/{otid}", parameters: ["environment", "at", "asOf"], body: .console),
    ]

    /// A path no route serves.
    public static let missing = ReadRoute(name: "GET /v1/rules", parameters: [], body: .json)

    static let clocks = ["at", "asOf", "environment"]
    static let revenue = ["from", "to", "product", "asOf", "environment"]

    /// Every name some route reads, and near misses of them (another case, a trailing space or dot, brackets), and
    /// the write routes' names.
    public static let names: [String] = {
        var names: [String] = []
        for route in all { for name in route.parameters where !names.contains(name) { names.append(name) } }
        return names + [
            "AT", "asof", "AsOf", "at ", "at.", "at[]", "env", "Environment", "FOLLOW", "limit ", "type", "appUserId",
            "receivedAt", "otid", "user",
        ]
    }()

    /// Values with a history of breaking parsers: signs and zeros, floating-point words, numbers at and past every
    /// integer width, instants at and past the query range, ISO dates with odd years, fields and offsets, the
    /// environments, booleans. `follow`'s true values are here too; `FuzzQuery` turns them off.
    public static let values: [String] = [
        "", "0", "-0", "+0", "1", "-1", "+1", "2", "3", "5", "1000", "10000", "10001", "00", "007", "1.0", "1.5", "1e3", "1E3", "0x10", " 1", "1 ", "1_000",
        "inf", "-inf", "+inf", "Infinity", "infinity", "nan", "NaN", "-nan", "snan", "1e308", "1e309", "-1e309",
        "4.9e-324", "2.2250738585072014e-308", "86400", "86400.0000001", "86401", "0.000001", "1e-320",
        "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
        "18446744073709551615", "18446744073709551616", "99999999999999999999999999999999999999",
        String(repeating: "9", count: 400), String(repeating: "0", count: 300) + "1",
        "253402300799999", "253402300800000", "-62135596800000", "-62135596800001", "-8640000000000000",
        "8640000000000001", "1700000000000", "1605243570000", "1605243570000.5",
        "2023-11-14T22:13:20Z", "2023-11-14T22:13:20.123Z", "2023-11-14T22:13:20.123456789Z", "2023-11-14T22:13:20.Z",
        "2023-11-14T22:13:20+14:00", "2023-11-14T22:13:20-23:59", "2023-11-14T22:13:20+99:99", "2023-11-14T22:13:20z",
        "2023-11-14t22:13:20Z", "2023-11-14 22:13:20Z", "0000-01-01T00:00:00Z", "0001-01-01T00:00:00Z",
        "1969-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999Z", "-0001-01-01T00:00:00Z", "+10000-01-01T00:00:00Z",
        "99999-01-01T00:00:00Z", "292278994-08-17T07:12:55Z", "-292275055-05-16T16:47:04Z",
        "2024-02-29T00:00:00Z", "2023-02-29T00:00:00Z", "2024-02-30T00:00:00Z", "2023-13-01T00:00:00Z",
        "2023-00-10T00:00:00Z", "2023-11-00T00:00:00Z", "2023-11-14T24:00:00Z", "2023-11-14T23:59:60Z",
        "2023-11-14T23:60:00Z", "2023-11-14", "2023-11-14T22:13Z", "20231114T221320Z", "2023-W46-2",
        "Production", "Sandbox", "Xcode", "LocalTesting", "production", "PRODUCTION", "Preview",
        "true", "false", "TRUE", "yes", "com.example.premium.monthly", "com.example.gems60",
    ]

    /// The index of `value` in `values` (for building seeds).
    public static func value(_ value: String) -> UInt8 {
        UInt8(values.firstIndex(of: value)!)
    }

    /// The name byte that reads as `name` of `names` (for building seeds).
    public static func name(_ name: String) -> UInt8 {
        let index = names.firstIndex(of: name)!
        return UInt8((0x80..<0xC0).first { $0 % names.count == index }!)
    }

    /// Seeds: every route without a query, then with each of its parameters given a usual value and a few unusual
    /// ones, with every encoding, an unknown name, a name twice, a name without a value, and all of them at once.
    public static func seeds() -> [[UInt8]] {
        let usual: [String: [String]] = [
            "at": ["2023-11-14T22:13:20Z", "1700000000000", "1605243570000"], "asOf": ["3", "0"],
            "environment": ["Sandbox", "Production"], "after": ["0", "2"], "limit": ["5", "10001"],
            "follow": ["false", "true"], "timeout": ["1.5", "86401"], "from": ["1605243570000", "2023-11-14T22:13:20Z"],
            "to": ["1700000000000", "9999-12-31T23:59:59.999Z"], "product": ["com.example.premium.monthly", ""],
        ]
        let unusual = [
            "inf", "nan", "-0", "1e309", String(repeating: "9", count: 400), "18446744073709551616",
            "-0001-01-01T00:00:00Z", "+10000-01-01T00:00:00Z", "2023-11-14T23:59:60Z", "2023-11-14T22:13:20+99:99",
        ]
        var seeds: [[UInt8]] = []
        for (index, route) in (all + [missing]).enumerated() {
            let ids = [UInt8](repeating: 0, count: route.ids.count)
            seeds.append(ReadQuery.input(route: index, ids: ids))
            for (p, name) in route.parameters.enumerated() {
                for text in (usual[name] ?? []) + unusual {
                    seeds.append(ReadQuery.input(route: index, ids: ids, [(UInt8(p), value(text), .plain)]))
                }
                for encoding in [TargetEncoding.unreserved, .everything, .raw] {
                    seeds.append(
                        ReadQuery.input(route: index, ids: ids, [(UInt8(p), value(usual[name]?.first ?? "1"), encoding)]))
                }
                seeds.append(ReadQuery.input(route: index, ids: ids, [(UInt8(p), 0xFF, .plain)]))
                seeds.append(
                    ReadQuery.input(route: index, ids: ids, [(UInt8(p), value("1"), .plain), (UInt8(p), value("2"), .plain)]))
            }
            seeds.append(ReadQuery.input(route: index, ids: ids, [(self.name("asof"), value("1"), .plain)]))
            seeds.append(ReadQuery.input(route: index, ids: ids, [(0xFF, value("1"), .plain)]))
            seeds.append(
                ReadQuery.input(
                    route: index, ids: ids,
                    route.parameters.indices.map { (UInt8($0), value(usual[route.parameters[$0]]?.first ?? "1"), .plain) }))
            // An id of arbitrary bytes: 0xE0 and up, 5 bytes, some of them reserved.
            if !ids.isEmpty {
                seeds.append([UInt8(index)] + ids.flatMap { _ in [0xE1, 5] + Array("a/b%c".utf8) })
            }
        }
        return seeds
    }
}

/// How a byte string is written into the request target.
public enum TargetEncoding: UInt8, Sendable {
    /// Letters, digits and `-._~:` as they are (what the fast path takes), the rest `%XX`.
    case plain
    /// RFC 3986's unreserved characters as they are, the rest `%XX`.
    case unreserved
    /// Every byte `%XX`.
    case everything
    /// Every visible ASCII byte but `#` as it is (`%`, `&`, `=`, `+`, `?` and `/` included), the rest `%XX`.
    case raw

    public func encode(_ bytes: some Sequence<UInt8>) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for byte in bytes {
            let keep: Bool
            switch self {
            case .plain: keep = Self.isUnreserved(byte) || byte == UInt8(ascii: ":")
            case .unreserved: keep = Self.isUnreserved(byte)
            case .everything: keep = false
            case .raw: keep = (0x21...0x7E).contains(byte) && byte != UInt8(ascii: "#")
            }
            if keep {
                out.append(byte)
            } else {
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            true
        default: false
        }
    }
}

/// One fuzzer input read as a GET request target:
///
///     route        1 byte: an index into `ReadRoutes.all` (one past it: `ReadRoutes.missing`)
///     id           per placeholder of the route: 1 byte; below 0xE0 a known id of its kind (by index), else
///                  arbitrary bytes (1 length byte, mod 32, then the bytes) written with the encoding its low 2 bits
///                  name
///     parameter    repeated to the end, at most 16:
///       name       1 byte: below 0x80 one of the route's parameters, below 0xC0 one of `ReadRoutes.names`, 0xFF
///                  no name, else arbitrary (1 length byte, mod 24, then the bytes)
///       value      1 byte: an index into `ReadRoutes.values`; 0xFF no `=` at all; else arbitrary (1 length byte,
///                  mod 160, then the bytes)
///       encoding   1 byte: `TargetEncoding` (low 2 bits) for the name and value
///
/// A missing byte reads as 0, so every input is a request.
public struct ReadQuery: Sendable {
    public var route: ReadRoute
    /// The request target: the path, then `?` and the parameters joined by `&` when there are any.
    public var target: String
    /// `target` with each id the ledger holds written plainly (letters, digits and `-._~:` as they are): a known id
    /// percent-encoded otherwise must be answered exactly as this one.
    public var plainTarget: String
    /// The parameters as written, before encoding (name, value; nil value: no `=`).
    public var parameters: [(name: [UInt8], value: [UInt8]?)]

    public static let maxParameters = 16

    /// Reads `bytes`; `known` lists the ids of each kind that the ledger holds.
    public init(_ bytes: [UInt8], known: [ReadRoute.ID: [String]]) {
        var reader = ByteReader(bytes)
        let choice = Int(reader.byte()) % (ReadRoutes.all.count + 1)
        route = choice < ReadRoutes.all.count ? ReadRoutes.all[choice] : ReadRoutes.missing
        var segments: [String] = []
        var plainSegments: [String] = []
        for kind in route.ids {
            let b = reader.byte()
            let ids = known[kind] ?? []
            if b < 0xE0, !ids.isEmpty {
                // A known id, written plainly, with only RFC 3986's unreserved characters as they are, or every byte
                // percent-encoded (never `.raw`, whose `/` and `?` would end the segment).
                let id = ids[Int(b) % ids.count].utf8
                segments.append(TargetEncoding(rawValue: (b >> 5) % 3)!.encode(id))
                plainSegments.append(TargetEncoding.plain.encode(id))
            } else {
                let count = Int(reader.byte()) % 32
                let segment = TargetEncoding(rawValue: b & 3)!.encode(reader.bytes(count))
                segments.append(segment)
                plainSegments.append(segment)
            }
        }
        var target = route.path(segments)
        var plainTarget = route.path(plainSegments)
        parameters = []
        var pairs: [String] = []
        while !reader.atEnd, parameters.count < Self.maxParameters {
            let n = reader.byte()
            let name: [UInt8]
            if n < 0x80 {
                let own = route.parameters.isEmpty ? ReadRoutes.names : route.parameters
                name = Array(own[Int(n) % own.count].utf8)
            } else if n < 0xC0 {
                name = Array(ReadRoutes.names[Int(n) % ReadRoutes.names.count].utf8)
            } else if n == 0xFF {
                name = []
            } else {
                name = reader.bytes(Int(reader.byte()) % 24)
            }
            let v = reader.byte()
            let value: [UInt8]?
            if Int(v) < ReadRoutes.values.count {
                value = Array(ReadRoutes.values[Int(v)].utf8)
            } else if v == 0xFF {
                value = nil
            } else {
                value = reader.bytes(Int(reader.byte()) % 160)
            }
            let encoding = TargetEncoding(rawValue: reader.byte() & 3)!
            parameters.append((name, value))
            pairs.append(encoding.encode(name) + (value.map { "=" + encoding.encode($0) } ?? ""))
        }
        if !pairs.isEmpty {
            target += "?" + pairs.joined(separator: "&")
            plainTarget += "?" + pairs.joined(separator: "&")
        }
        self.target = target
        self.plainTarget = plainTarget
    }

    /// The bytes of an input (for seeds): `route`, one byte per id (known ids by index), then each parameter as
    /// (name byte, value byte, encoding).
    public static func input(route: Int, ids: [UInt8] = [], _ parameters: [(UInt8, UInt8, TargetEncoding)] = [])
        -> [UInt8]
    {
        [UInt8(route)] + ids + parameters.flatMap { [$0.0, $0.1, $0.2.rawValue] }
    }
}

/// Reads bytes from the front; past the end it reads zeros.
struct ByteReader {
    let bytes: [UInt8]
    var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { offset >= bytes.count }

    mutating func byte() -> UInt8 {
        defer { offset += 1 }
        return offset < bytes.count ? bytes[offset] : 0
    }

    mutating func bytes(_ count: Int) -> [UInt8] {
        let end = min(offset + count, bytes.count)
        defer { offset = max(offset, end) }
        return offset < end ? Array(bytes[offset..<end]) : []
    }
}
