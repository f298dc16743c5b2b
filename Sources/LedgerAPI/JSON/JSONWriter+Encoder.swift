// MARK: - Encodable values through the writer

extension JSONWriter {
    /// Writes `value`'s `Codable` form as the next value: its keys in the order it encodes them (declaration order for
    /// synthesized conformances), absent optionals left out as `Codable` leaves them. Throws only for a non-finite
    /// floating-point number.
    public mutating func encodable(_ value: some Encodable) throws {
        let sink = Sink(self)
        // The sink holds the only copy while the value encodes, so the writer's buffer is never copied.
        self = JSONWriter(capacity: 0, sortedKeys: sortedKeys)
        defer { self = sink.writer }
        let base = sink.writer.depth
        try value.encode(to: Bridge(sink: sink, base: base, codingPath: []))
        sink.close(deeperThan: base)
    }

    /// The writer, shared by the `Encoder` and its containers while a value encodes.
    ///
    /// Containers are closed lazily: a write at depth d first closes every container deeper than d, which is exact
    /// for the depth-first way `Encodable` types use their containers.
    final class Sink {
        var writer: JSONWriter
        init(_ writer: JSONWriter) { self.writer = writer }

        @inline(__always)
        func close(deeperThan depth: Int) {
            while writer.depth > depth { writer.endContainer() }
        }

        func number(_ d: Double) throws {
            try writer.number(d)
        }
    }

    // MARK: - Encoder

    struct Bridge: Encoder {
        let sink: Sink
        /// The writer's depth where the value began.
        let base: Int
        var codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        /// The depth this encoder's value is written at (containers it opens sit one deeper).
        var depth: Int { base + codingPath.count }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            sink.close(deeperThan: depth)
            sink.writer.beginObject()
            return KeyedEncodingContainer(Keyed<Key>(sink: sink, base: base, codingPath: codingPath, depth: depth + 1))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            sink.close(deeperThan: depth)
            sink.writer.beginArray()
            return Unkeyed(sink: sink, base: base, codingPath: codingPath, depth: depth + 1)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer {
            Single(sink: sink, depth: depth, bridge: self)
        }
    }

    // MARK: - Containers

    struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let sink: Sink
        let base: Int
        var codingPath: [any CodingKey]
        /// The depth of this object.
        let depth: Int

        private func key(_ k: Key) {
            sink.close(deeperThan: depth)
            sink.writer.key(k.stringValue)
        }
        private func child(_ k: Key) -> Bridge { Bridge(sink: sink, base: base, codingPath: codingPath + [k]) }

        mutating func encodeNil(forKey k: Key) throws { key(k); sink.writer.null() }
        mutating func encode(_ v: Bool, forKey k: Key) throws { key(k); sink.writer.bool(v) }
        mutating func encode(_ v: String, forKey k: Key) throws { key(k); sink.writer.string(v) }
        mutating func encode(_ v: Double, forKey k: Key) throws { key(k); try sink.number(v) }
        mutating func encode(_ v: Float, forKey k: Key) throws { key(k); try sink.number(Double(v)) }
        mutating func encode(_ v: Int, forKey k: Key) throws { key(k); sink.writer.number(Int64(v)) }
        mutating func encode(_ v: Int8, forKey k: Key) throws { key(k); sink.writer.number(Int64(v)) }
        mutating func encode(_ v: Int16, forKey k: Key) throws { key(k); sink.writer.number(Int64(v)) }
        mutating func encode(_ v: Int32, forKey k: Key) throws { key(k); sink.writer.number(Int64(v)) }
        mutating func encode(_ v: Int64, forKey k: Key) throws { key(k); sink.writer.number(v) }
        mutating func encode(_ v: UInt, forKey k: Key) throws { key(k); sink.writer.number(UInt64(v)) }
        mutating func encode(_ v: UInt8, forKey k: Key) throws { key(k); sink.writer.number(UInt64(v)) }
        mutating func encode(_ v: UInt16, forKey k: Key) throws { key(k); sink.writer.number(UInt64(v)) }
        mutating func encode(_ v: UInt32, forKey k: Key) throws { key(k); sink.writer.number(UInt64(v)) }
        mutating func encode(_ v: UInt64, forKey k: Key) throws { key(k); sink.writer.number(v) }
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
            sink.close(deeperThan: depth)
            sink.writer.key("super")
            return Bridge(sink: sink, base: base, codingPath: codingPath + [IndexKey(stringValue: "super")])
        }

        mutating func superEncoder(forKey k: Key) -> any Encoder {
            key(k)
            return child(k)
        }
    }

    struct Unkeyed: UnkeyedEncodingContainer {
        let sink: Sink
        let base: Int
        var codingPath: [any CodingKey]
        /// The depth of this array.
        let depth: Int
        private(set) var count = 0

        init(sink: Sink, base: Int, codingPath: [any CodingKey], depth: Int) {
            self.sink = sink
            self.base = base
            self.codingPath = codingPath
            self.depth = depth
        }

        /// Closes what the previous element left open; the writer separates the element when it is written.
        private mutating func element() -> Bridge {
            sink.close(deeperThan: depth)
            defer { count += 1 }
            return Bridge(sink: sink, base: base, codingPath: codingPath + [IndexKey(intValue: count)])
        }

        mutating func encodeNil() throws { _ = element(); sink.writer.null() }
        mutating func encode(_ v: Bool) throws { _ = element(); sink.writer.bool(v) }
        mutating func encode(_ v: String) throws { _ = element(); sink.writer.string(v) }
        mutating func encode(_ v: Double) throws { _ = element(); try sink.number(v) }
        mutating func encode(_ v: Float) throws { _ = element(); try sink.number(Double(v)) }
        mutating func encode(_ v: Int) throws { _ = element(); sink.writer.number(Int64(v)) }
        mutating func encode(_ v: Int8) throws { _ = element(); sink.writer.number(Int64(v)) }
        mutating func encode(_ v: Int16) throws { _ = element(); sink.writer.number(Int64(v)) }
        mutating func encode(_ v: Int32) throws { _ = element(); sink.writer.number(Int64(v)) }
        mutating func encode(_ v: Int64) throws { _ = element(); sink.writer.number(v) }
        mutating func encode(_ v: UInt) throws { _ = element(); sink.writer.number(UInt64(v)) }
        mutating func encode(_ v: UInt8) throws { _ = element(); sink.writer.number(UInt64(v)) }
        mutating func encode(_ v: UInt16) throws { _ = element(); sink.writer.number(UInt64(v)) }
        mutating func encode(_ v: UInt32) throws { _ = element(); sink.writer.number(UInt64(v)) }
        mutating func encode(_ v: UInt64) throws { _ = element(); sink.writer.number(v) }
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
        let sink: Sink
        /// The depth this value is written at.
        let depth: Int
        let bridge: Bridge
        var codingPath: [any CodingKey] { bridge.codingPath }

        private func begin() { sink.close(deeperThan: depth) }

        mutating func encodeNil() throws { begin(); sink.writer.null() }
        mutating func encode(_ v: Bool) throws { begin(); sink.writer.bool(v) }
        mutating func encode(_ v: String) throws { begin(); sink.writer.string(v) }
        mutating func encode(_ v: Double) throws { begin(); try sink.number(v) }
        mutating func encode(_ v: Float) throws { begin(); try sink.number(Double(v)) }
        mutating func encode(_ v: Int) throws { begin(); sink.writer.number(Int64(v)) }
        mutating func encode(_ v: Int8) throws { begin(); sink.writer.number(Int64(v)) }
        mutating func encode(_ v: Int16) throws { begin(); sink.writer.number(Int64(v)) }
        mutating func encode(_ v: Int32) throws { begin(); sink.writer.number(Int64(v)) }
        mutating func encode(_ v: Int64) throws { begin(); sink.writer.number(v) }
        mutating func encode(_ v: UInt) throws { begin(); sink.writer.number(UInt64(v)) }
        mutating func encode(_ v: UInt8) throws { begin(); sink.writer.number(UInt64(v)) }
        mutating func encode(_ v: UInt16) throws { begin(); sink.writer.number(UInt64(v)) }
        mutating func encode(_ v: UInt32) throws { begin(); sink.writer.number(UInt64(v)) }
        mutating func encode(_ v: UInt64) throws { begin(); sink.writer.number(v) }
        mutating func encode<T: Encodable>(_ v: T) throws { try v.encode(to: bridge) }
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
