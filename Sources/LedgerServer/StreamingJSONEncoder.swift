// MARK: - StreamingJSONEncoder

/// A JSON encoder that writes straight into a byte buffer, with no intermediate tree: the answers of the read routes
/// are encoded several times faster than with Foundation's `JSONEncoder`, which dominated their cost.
///
/// Keys come out in the order the value encodes them (its declaration order for synthesized `Codable`). Containers
/// are closed lazily: a write at depth d first closes every container deeper than d, which is exact for the
/// depth-first way `Encodable` types use their containers. Non-finite floating-point values are refused.
struct StreamingJSONEncoder {
    /// The JSON text of `value`.
    static func encode(_ value: some Encodable) throws -> [UInt8] {
        let state = State()
        try value.encode(to: Writer(state: state, codingPath: []))
        state.closeAll()
        return state.bytes
    }

    struct NonFiniteNumber: Error {}

    // MARK: - Output state

    final class State {
        var bytes: [UInt8] = []
        /// Open containers, outermost first: whether each is an object, and whether it holds an element yet.
        var open: [(isObject: Bool, hasElement: Bool)] = []

        init() { bytes.reserveCapacity(1024) }

        /// Closes containers deeper than `depth`.
        @inline(__always) func close(deeperThan depth: Int) {
            while open.count > depth {
                bytes.append(open.removeLast().isObject ? UInt8(ascii: "}") : UInt8(ascii: "]"))
            }
        }

        func closeAll() { close(deeperThan: 0) }

        /// Starts the next element of the container at `depth` (1-based).
        @inline(__always) func beginElement(depth: Int) {
            close(deeperThan: depth)
            if open[depth - 1].hasElement { bytes.append(UInt8(ascii: ",")) } else { open[depth - 1].hasElement = true }
        }

        func openContainer(object: Bool) {
            bytes.append(object ? UInt8(ascii: "{") : UInt8(ascii: "["))
            open.append((object, false))
        }

        func writeKey(_ key: String, depth: Int) {
            beginElement(depth: depth)
            writeString(key)
            bytes.append(UInt8(ascii: ":"))
        }

        func writeString(_ s: String) { appendJSONString(s, to: &bytes) }

        func writeRaw(_ s: String) { bytes.append(contentsOf: s.utf8) }

        func writeDouble(_ d: Double) throws {
            guard d.isFinite else { throw NonFiniteNumber() }
            if d == d.rounded(), abs(d) < 1e15 { writeRaw(String(Int64(d))) } else { writeRaw("\(d)") }
        }
    }

    // MARK: - Encoder

    struct Writer: Encoder {
        let state: State
        var codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        /// The depth this encoder's value is written at (containers it opens sit at depth + 1).
        var depth: Int { codingPath.count }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            state.close(deeperThan: depth)
            state.openContainer(object: true)
            return KeyedEncodingContainer(Keyed<Key>(state: state, codingPath: codingPath, depth: state.open.count))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            state.close(deeperThan: depth)
            state.openContainer(object: false)
            return Unkeyed(state: state, codingPath: codingPath, depth: state.open.count)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer {
            Single(state: state, codingPath: codingPath)
        }
    }

    // MARK: - Containers

    struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let state: State
        var codingPath: [any CodingKey]
        let depth: Int

        private func key(_ k: Key) { state.writeKey(k.stringValue, depth: depth) }
        private func child(_ k: Key) -> Writer { Writer(state: state, codingPath: codingPath + [k]) }

        mutating func encodeNil(forKey k: Key) throws { key(k); state.writeRaw("null") }
        mutating func encode(_ v: Bool, forKey k: Key) throws { key(k); state.writeRaw(v ? "true" : "false") }
        mutating func encode(_ v: String, forKey k: Key) throws { key(k); state.writeString(v) }
        mutating func encode(_ v: Double, forKey k: Key) throws { key(k); try state.writeDouble(v) }
        mutating func encode(_ v: Float, forKey k: Key) throws { key(k); try state.writeDouble(Double(v)) }
        mutating func encode(_ v: Int, forKey k: Key) throws { key(k); state.writeRaw(String(v)) }
        mutating func encode(_ v: Int8, forKey k: Key) throws { key(k); state.writeRaw(String(v)) }
        mutating func encode(_ v: Int16, forKey k: Key) throws { key(k); state.writeRaw(String(v)) }
        mutating func encode(_ v: Int32, forKey k: Key) throws { key(k); state.writeRaw(String(v)) }
        mutating func encode(_ v: Int64, forKey k: Key) throws { key(k); state.writeRaw(String(v)) }
        mutating func encode(_ v: UInt, forKey k: Key) throws { key(k); state.writeRaw(String(v)) }
        mutating func encode(_ v: UInt8, forKey k: Key) throws { key(k); state.writeRaw(String(v)) }
        mutating func encode(_ v: UInt16, forKey k: Key) throws { key(k); state.writeRaw(String(v)) }
        mutating func encode(_ v: UInt32, forKey k: Key) throws { key(k); state.writeRaw(String(v)) }
        mutating func encode(_ v: UInt64, forKey k: Key) throws { key(k); state.writeRaw(String(v)) }
        mutating func encode<T: Encodable>(_ v: T, forKey k: Key) throws {
            key(k)
            try v.encode(to: child(k))
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey k: Key)
            -> KeyedEncodingContainer<NestedKey>
        {
            key(k)
            return child(k).container(keyedBy: type)
        }

        mutating func nestedUnkeyedContainer(forKey k: Key) -> any UnkeyedEncodingContainer {
            key(k)
            return child(k).unkeyedContainer()
        }

        mutating func superEncoder() -> any Encoder {
            state.writeKey("super", depth: depth)
            return Writer(state: state, codingPath: codingPath + [IndexKey(stringValue: "super")])
        }

        mutating func superEncoder(forKey k: Key) -> any Encoder {
            key(k)
            return child(k)
        }
    }

    struct Unkeyed: UnkeyedEncodingContainer {
        let state: State
        var codingPath: [any CodingKey]
        let depth: Int
        private(set) var count = 0

        init(state: State, codingPath: [any CodingKey], depth: Int) {
            self.state = state
            self.codingPath = codingPath
            self.depth = depth
        }

        private mutating func element() -> Writer {
            state.beginElement(depth: depth)
            defer { count += 1 }
            return Writer(state: state, codingPath: codingPath + [IndexKey(intValue: count)])
        }

        mutating func encodeNil() throws { _ = element(); state.writeRaw("null") }
        mutating func encode(_ v: Bool) throws { _ = element(); state.writeRaw(v ? "true" : "false") }
        mutating func encode(_ v: String) throws { _ = element(); state.writeString(v) }
        mutating func encode(_ v: Double) throws { _ = element(); try state.writeDouble(v) }
        mutating func encode(_ v: Float) throws { _ = element(); try state.writeDouble(Double(v)) }
        mutating func encode(_ v: Int) throws { _ = element(); state.writeRaw(String(v)) }
        mutating func encode(_ v: Int8) throws { _ = element(); state.writeRaw(String(v)) }
        mutating func encode(_ v: Int16) throws { _ = element(); state.writeRaw(String(v)) }
        mutating func encode(_ v: Int32) throws { _ = element(); state.writeRaw(String(v)) }
        mutating func encode(_ v: Int64) throws { _ = element(); state.writeRaw(String(v)) }
        mutating func encode(_ v: UInt) throws { _ = element(); state.writeRaw(String(v)) }
        mutating func encode(_ v: UInt8) throws { _ = element(); state.writeRaw(String(v)) }
        mutating func encode(_ v: UInt16) throws { _ = element(); state.writeRaw(String(v)) }
        mutating func encode(_ v: UInt32) throws { _ = element(); state.writeRaw(String(v)) }
        mutating func encode(_ v: UInt64) throws { _ = element(); state.writeRaw(String(v)) }
        mutating func encode<T: Encodable>(_ v: T) throws { try v.encode(to: element()) }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type)
            -> KeyedEncodingContainer<NestedKey>
        {
            element().container(keyedBy: type)
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { element().unkeyedContainer() }

        mutating func superEncoder() -> any Encoder { element() }
    }

    struct Single: SingleValueEncodingContainer {
        let state: State
        var codingPath: [any CodingKey]

        private func begin() { state.close(deeperThan: codingPath.count) }

        mutating func encodeNil() throws { begin(); state.writeRaw("null") }
        mutating func encode(_ v: Bool) throws { begin(); state.writeRaw(v ? "true" : "false") }
        mutating func encode(_ v: String) throws { begin(); state.writeString(v) }
        mutating func encode(_ v: Double) throws { begin(); try state.writeDouble(v) }
        mutating func encode(_ v: Float) throws { begin(); try state.writeDouble(Double(v)) }
        mutating func encode(_ v: Int) throws { begin(); state.writeRaw(String(v)) }
        mutating func encode(_ v: Int8) throws { begin(); state.writeRaw(String(v)) }
        mutating func encode(_ v: Int16) throws { begin(); state.writeRaw(String(v)) }
        mutating func encode(_ v: Int32) throws { begin(); state.writeRaw(String(v)) }
        mutating func encode(_ v: Int64) throws { begin(); state.writeRaw(String(v)) }
        mutating func encode(_ v: UInt) throws { begin(); state.writeRaw(String(v)) }
        mutating func encode(_ v: UInt8) throws { begin(); state.writeRaw(String(v)) }
        mutating func encode(_ v: UInt16) throws { begin(); state.writeRaw(String(v)) }
        mutating func encode(_ v: UInt32) throws { begin(); state.writeRaw(String(v)) }
        mutating func encode(_ v: UInt64) throws { begin(); state.writeRaw(String(v)) }
        mutating func encode<T: Encodable>(_ v: T) throws {
            try v.encode(to: Writer(state: state, codingPath: codingPath))
        }
    }

    struct IndexKey: CodingKey {
        var stringValue: String
        var intValue: Int?
        init(stringValue: String) {
            self.stringValue = stringValue
            intValue = nil
        }
        init(intValue: Int) {
            stringValue = String(intValue)
            self.intValue = intValue
        }
    }
}
