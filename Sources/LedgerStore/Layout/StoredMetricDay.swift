import LMDB
import LedgerCodec
import LedgerCore

/// One entry of `metric_days`: the sum of every subscription's metric changes (`Metrics.contributions`) dated in one
/// UTC day, of one environment and one product.
///
/// Key: environment prefix ‖ day (days since 1970-01-01 UTC, as a signed 64-bit number with its sign bit flipped,
/// big-endian, so that keys sort by day) ‖ product id (UTF-8; empty for a change that names no period). Value: a
/// varint count, then per counter its tag (1 byte), its argument (a currency or product-less string as varint
/// length ‖ UTF-8, or a period number as a varint) and its sum as a zigzag varint. A counter whose sum is zero is
/// left out, and a day with none is deleted: the table holds exactly what the timelines sum to.
struct MetricDayKey: Hashable, Comparable {
    var environment: AppStoreEnvironment
    var day: Int64
    var product: String

    static let millisPerDay: Int64 = 86_400_000

    /// The UTC day holding `instant`.
    static func day(of instant: UnixMillis) -> Int64 {
        let (q, r) = instant.quotientAndRemainder(dividingBy: millisPerDay)
        return r < 0 ? q - 1 : q
    }

    var bytes: [UInt8] {
        var k = StoreLayout.environmentPrefix(environment)
        k.append(contentsOf: BigEndian.bytes(UInt64(bitPattern: day) ^ (1 << 63)))
        k.append(contentsOf: product.utf8)
        return k
    }

    init(environment: AppStoreEnvironment, day: Int64, product: String) {
        self.environment = environment
        self.day = day
        self.product = product
    }

    /// The key stored as `bytes`, when it is one of `environment`'s.
    init?(_ bytes: UnsafeRawBufferPointer, of environment: AppStoreEnvironment) {
        let prefix = StoreLayout.environmentPrefix(environment)
        guard bytes.count >= prefix.count + 8, bytes.prefix(prefix.count).elementsEqual(prefix) else { return nil }
        var day: UInt64 = 0
        for b in bytes[prefix.count..<(prefix.count + 8)] { day = day << 8 | UInt64(b) }
        self.environment = environment
        self.day = Int64(bitPattern: day ^ (1 << 63))
        product = String(decoding: bytes[(prefix.count + 8)...], as: UTF8.self)
    }

    /// In the order of the stored keys.
    static func < (a: MetricDayKey, b: MetricDayKey) -> Bool {
        if a.environment != b.environment {
            return StoreLayout.environmentPrefix(a.environment).lexicographicallyPrecedes(StoreLayout.environmentPrefix(b.environment))
        }
        if a.day != b.day { return a.day < b.day }
        return a.product.utf8.lexicographicallyPrecedes(b.product.utf8)
    }
}

/// The value of a `metric_days` entry: counters and their sums.
enum StoredMetricDay {
    /// The stored form of a day's counters (each once), in counter order, zero sums left out.
    static func encode(_ counters: [(counter: MetricCounter, sum: Int64)]) -> [UInt8] {
        var w = BinaryWriter(capacity: 16 * counters.count + 2)
        let nonzero = counters.filter { $0.sum != 0 }.sorted { precedes($0.counter, $1.counter) }
        w.writeVarint(UInt64(nonzero.count))
        for (counter, sum) in nonzero {
            write(counter, into: &w)
            w.writeVarint(zigzag(sum))
        }
        return w.finish()
    }

    /// Adds the sums stored in `bytes` to `sums`.
    static func decode(_ bytes: UnsafeRawBufferPointer, into sums: inout [MetricCounter: Int64]) throws {
        try decode(bytes) { counter, sum in sums[counter, default: 0] &+= sum }
    }

    /// The counters stored in `bytes`, in their stored order.
    static func decode(_ bytes: UnsafeRawBufferPointer) throws -> [(counter: MetricCounter, sum: Int64)] {
        var counters: [(counter: MetricCounter, sum: Int64)] = []
        try decode(bytes) { counters.append(($0, $1)) }
        return counters
    }

    private static func decode(_ bytes: UnsafeRawBufferPointer, _ each: (MetricCounter, Int64) -> Void) throws {
        do {
            var r = BinaryReader(bytes)
            let count = try r.readVarint()
            for _ in 0..<count {
                let counter = try read(&r)
                each(counter, try r.readInt64())
            }
        } catch {
            throw LedgerError.corrupted("a metric_days value does not decode: \(error)")
        }
    }

    static func zigzag(_ n: Int64) -> UInt64 { UInt64(bitPattern: (n << 1) ^ (n >> 63)) }

    /// A counter: its tag, then its argument (a currency as varint length ‖ UTF-8, or a period number as a varint).
    static func write(_ counter: MetricCounter, into w: inout BinaryWriter) {
        let (tag, text, number) = parts(counter)
        w.writeVarint(UInt64(tag))
        if let text {
            w.writeVarint(UInt64(text.utf8.count))
            var t = text
            t.withUTF8 { w.append(raw: UnsafeRawBufferPointer($0)) }
        } else if let number {
            w.writeVarint(UInt64(number))
        }
    }

    static func read(_ r: inout BinaryReader) throws(FactDecodingError) -> MetricCounter {
        let tag = try r.readVarint()
        if let counter = plainByTag[tag] { return counter }
        switch tag {
        case 7: return .mrr(try r.readString())
        case 8: return .priced(try r.readString())
        case 16...20: return .churned(ChurnReason.allCases[Int(tag - 16)])
        case 21: return .refunded(try r.readString())
        case 26: return .retained(Int(truncatingIfNeeded: try r.readVarint()))
        default: throw FactDecodingError("metric counter \(tag) is unknown")
        }
    }

    /// The counters without an argument by their tag, from `parts`, the one place tags are given.
    private static let plainByTag: [UInt64: MetricCounter] = Dictionary(
        uniqueKeysWithValues: MetricCounter.plain.map { (UInt64(parts($0).tag), $0) })

    /// A counter's tag and its argument.
    private static func parts(_ c: MetricCounter) -> (tag: Int, text: String?, number: Int?) {
        switch c {
        case .live: (0, nil, nil)
        case .active: (1, nil, nil)
        case .trials: (2, nil, nil)
        case .offers: (3, nil, nil)
        case .inGracePeriod: (4, nil, nil)
        case .inBillingRetry: (5, nil, nil)
        case .unpriced: (6, nil, nil)
        case .mrr(let currency): (7, currency, nil)
        case .priced(let currency): (8, currency, nil)
        case .new: (9, nil, nil)
        case .renewals: (10, nil, nil)
        case .reactivations: (11, nil, nil)
        case .trialsEnded: (12, nil, nil)
        case .trialsConverted: (13, nil, nil)
        case .refunds: (14, nil, nil)
        case .reversals: (15, nil, nil)
        case .churned(let reason): (16 + ChurnReason.allCases.firstIndex(of: reason)!, nil, nil)
        case .refunded(let currency): (21, currency, nil)
        case .cohort: (25, nil, nil)
        case .retained(let n): (26, nil, n)
        case .purchases: (27, nil, nil)
        }
    }

    /// A total order of counters, so that equal sums encode to equal bytes: by tag, then by argument.
    static func precedes(_ a: MetricCounter, _ b: MetricCounter) -> Bool {
        let (tagA, textA, numberA) = parts(a)
        let (tagB, textB, numberB) = parts(b)
        if tagA != tagB { return tagA < tagB }
        if let textA, let textB { return textA < textB }
        return (numberA ?? 0) < (numberB ?? 0)
    }
}

/// The value of a `metric_points` entry: what one subscription's timeline contributed to `metric_days` when it was
/// last summed in, as (day, product, counter, sum) in key order, zero sums left out.
///
/// Form: varint count of products, each as varint length ‖ UTF-8; varint count of points, each as its day's
/// difference from the point before (zigzag varint), its product's index + 1 (0: none), its counter
/// (`StoredMetricDay.write`) and its sum (zigzag varint).
struct MetricPoints: Equatable {
    struct Point: Equatable {
        var day: Int64
        var product: String?
        var counter: MetricCounter
        var sum: Int64
    }
    var points: [Point] = []

    /// None.
    init() {}

    /// `t`'s contributions (`Metrics.contributions`) summed by day, product and counter, in key order.
    init(_ t: Timeline) {
        (self, _) = Self.summed(t, restatingFrom: .min)
    }

    /// What `t` contributes now, and how that differs from `before` (what the subscription contributed when last
    /// summed), restated only from the UTC day of `from` on (or earlier, `Metrics.contributions(of:restatingFrom:
    /// roundedDown:_:)`) where the timeline's states and periods before `from` are still those `before` was made
    /// of (`Metrics.firstChange`): the points of the days before are `before`'s, but those stated whole. So a tail
    /// step sums its tail, and copies the rest.
    static func restating(_ t: Timeline, from: UnixMillis, before: MetricPoints) -> (now: MetricPoints, difference: [Point]) {
        let (restated, start) = summed(t, restatingFrom: from)
        guard start != .min else { return (restated, difference(from: before, to: restated)) }
        let firstDay = MetricDayKey.day(of: start)
        var kept = MetricPoints()
        var replaced = MetricPoints()
        for p in before.points {
            if !p.counter.isStatedWhole && p.day < firstDay { kept.points.append(p) } else { replaced.points.append(p) }
        }
        return (merged(kept, restated), difference(from: replaced, to: restated))
    }

    /// Points of two lists in key order, in key order (a key in both summed).
    private static func merged(_ a: MetricPoints, _ b: MetricPoints) -> MetricPoints {
        var out = MetricPoints()
        out.points.reserveCapacity(a.points.count + b.points.count)
        var i = 0
        var j = 0
        while i < a.points.count || j < b.points.count {
            if j == b.points.count || (i < a.points.count && precedes(a.points[i], b.points[j])) {
                out.points.append(a.points[i])
                i += 1
            } else if i == a.points.count || precedes(b.points[j], a.points[i]) {
                out.points.append(b.points[j])
                j += 1
            } else {
                var p = a.points[i]
                p.sum &+= b.points[j].sum
                if p.sum != 0 { out.points.append(p) }
                i += 1
                j += 1
            }
        }
        return out
    }

    /// `t`'s contributions from the window `Metrics.contributions(of:restatingFrom:roundedDown:_:)` begins at
    /// `from` (whole days), summed; and where the window began.
    ///
    /// A subscription names few products and counters but makes many contributions: each product and counter is
    /// ranked once, so that the contributions sort by integers alone, and equal keys are then summed in one pass.
    private static func summed(_ t: Timeline, restatingFrom from: UnixMillis) -> (MetricPoints, UnixMillis) {
        var products: [String?] = []
        var counters: [MetricCounter] = []
        var all: [(day: Int64, product: Int, counter: Int, sum: Int64)] = []
        let start = Metrics.contributions(of: t, restatingFrom: from, roundedDown: startOfDay) { instant, product, counter, delta in
            let p = products.firstIndex(of: product) ?? { products.append(product); return products.count - 1 }()
            let c = counters.firstIndex(of: counter) ?? { counters.append(counter); return counters.count - 1 }()
            all.append((MetricDayKey.day(of: instant), p, c, delta))
        }
        let productRank = ranks(of: products.indices.sorted { productPrecedes(products[$0], products[$1]) })
        let counterRank = ranks(of: counters.indices.sorted { StoredMetricDay.precedes(counters[$0], counters[$1]) })
        all.sort { a, b in
            if a.day != b.day { return a.day < b.day }
            if a.product != b.product { return productRank[a.product] < productRank[b.product] }
            return counterRank[a.counter] < counterRank[b.counter]
        }
        var points = MetricPoints()
        var last: (day: Int64, product: Int, counter: Int)?
        for x in all {
            if let l = last, l.day == x.day, l.product == x.product, l.counter == x.counter {
                points.points[points.points.count - 1].sum &+= x.sum
            } else {
                points.points.append(Point(day: x.day, product: products[x.product], counter: counters[x.counter], sum: x.sum))
                last = (x.day, x.product, x.counter)
            }
        }
        points.points.removeAll { $0.sum == 0 }
        return (points, start)
    }

    /// The first instant of `instant`'s UTC day; the beginning of time for a day before the first instant there is.
    static func startOfDay(_ instant: UnixMillis) -> UnixMillis {
        let (start, overflow) = MetricDayKey.day(of: instant).multipliedReportingOverflow(by: MetricDayKey.millisPerDay)
        return overflow ? .min : start
    }

    /// `ranks[i]`: the place of `i` in `order`.
    private static func ranks(of order: [Int]) -> [Int] {
        var ranks = [Int](repeating: 0, count: order.count)
        for (place, i) in order.enumerated() { ranks[i] = place }
        return ranks
    }

    /// The order of products: by id, none first.
    private static func productPrecedes(_ a: String?, _ b: String?) -> Bool {
        guard let b else { return false }
        guard let a else { return true }
        return a < b
    }

    /// The order of points: day, product, counter.
    static func precedes(_ a: Point, _ b: Point) -> Bool {
        if a.day != b.day { return a.day < b.day }
        if a.product != b.product { return productPrecedes(a.product, b.product) }
        return StoredMetricDay.precedes(a.counter, b.counter)
    }

    /// What changes from `before` to `now`: the points whose sums differ, with the difference (both in key order).
    static func difference(from before: MetricPoints, to now: MetricPoints) -> [Point] {
        var out: [Point] = []
        var i = 0
        var j = 0
        let a = before.points
        let b = now.points
        while i < a.count || j < b.count {
            if j == b.count || (i < a.count && precedes(a[i], b[j])) {
                var gone = a[i]
                gone.sum = 0 &- gone.sum
                out.append(gone)
                i += 1
            } else if i == a.count || precedes(b[j], a[i]) {
                out.append(b[j])
                j += 1
            } else {
                if a[i].sum != b[j].sum {
                    var changed = b[j]
                    changed.sum = b[j].sum &- a[i].sum
                    out.append(changed)
                }
                i += 1
                j += 1
            }
        }
        return out
    }

    init(decoding bytes: UnsafeRawBufferPointer) throws {
        do {
            var r = BinaryReader(bytes)
            var products: [String] = []
            for _ in 0..<(try r.readVarint()) { products.append(try r.readString()) }
            var day: Int64 = 0
            for _ in 0..<(try r.readVarint()) {
                day &+= try r.readInt64()
                let index = Int(truncatingIfNeeded: try r.readVarint())
                guard index <= products.count else { throw FactDecodingError("product \(index) of \(products.count)") }
                let counter = try StoredMetricDay.read(&r)
                points.append(Point(day: day, product: index == 0 ? nil : products[index - 1], counter: counter, sum: try r.readInt64()))
            }
        } catch {
            throw LedgerError.corrupted("a metric_points value does not decode: \(error)")
        }
    }

    var encoded: [UInt8] {
        var products: [String] = []
        for p in points { if let name = p.product, !products.contains(name) { products.append(name) } }
        var w = BinaryWriter(capacity: 8 + 8 * points.count)
        w.writeVarint(UInt64(products.count))
        for var name in products {
            w.writeVarint(UInt64(name.utf8.count))
            name.withUTF8 { w.append(raw: UnsafeRawBufferPointer($0)) }
        }
        w.writeVarint(UInt64(points.count))
        var day: Int64 = 0
        for p in points {
            w.writeVarint(StoredMetricDay.zigzag(p.day &- day))
            day = p.day
            w.writeVarint(UInt64(p.product.map { products.firstIndex(of: $0)! + 1 } ?? 0))
            StoredMetricDay.write(p.counter, into: &w)
            w.writeVarint(StoredMetricDay.zigzag(p.sum))
        }
        return w.finish()
    }
}
