import Foundation
import LedgerAPI
import LedgerCore
import LedgerTestSupport
import Testing

@testable import LedgerAPI

/// Buckets of UTC by the civil calendar, the ISO-8601 text of their boundaries, and a metric's table and CSV.
@Suite struct MetricTableTests {
    static let utc = TimeZone(secondsFromGMT: 0)!

    @Test func utcBucketsStartAtMidnightOnMondayOrOnTheFirst() throws {
        let from = Scenario.utc(2024, 1, 17, 15)  // a Wednesday
        let to = Scenario.utc(2024, 4, 1)
        #expect(
            MetricBuckets.boundaries(from: from, to: to, interval: .month, timeZone: Self.utc)
                == [Scenario.utc(2024, 1, 1), Scenario.utc(2024, 2, 1), Scenario.utc(2024, 3, 1), Scenario.utc(2024, 4, 1)])
        let weeks = try #require(MetricBuckets.boundaries(from: from, to: Scenario.utc(2024, 1, 30), interval: .week, timeZone: Self.utc))
        #expect(weeks == [Scenario.utc(2024, 1, 15), Scenario.utc(2024, 1, 22), Scenario.utc(2024, 1, 29), Scenario.utc(2024, 2, 5)])
        let days = try #require(MetricBuckets.boundaries(from: from, to: Scenario.utc(2024, 1, 19), interval: .day, timeZone: Self.utc))
        #expect(days == [Scenario.utc(2024, 1, 17), Scenario.utc(2024, 1, 18), Scenario.utc(2024, 1, 19)])
        // Across a year and a leap day; before 1970.
        #expect(
            MetricBuckets.boundaries(from: Scenario.utc(1969, 12, 31, 23), to: Scenario.utc(1970, 1, 2), interval: .day, timeZone: Self.utc)
                == [Scenario.utc(1969, 12, 31), Scenario.utc(1970, 1, 1), Scenario.utc(1970, 1, 2)])
        #expect(
            MetricBuckets.boundaries(from: Scenario.utc(2023, 12, 5), to: Scenario.utc(2024, 1, 2), interval: .month, timeZone: Self.utc)
                == [Scenario.utc(2023, 12, 1), Scenario.utc(2024, 1, 1), Scenario.utc(2024, 2, 1)])
        #expect(MetricBuckets.boundaries(from: to, to: from, interval: .day, timeZone: Self.utc) == nil)
        #expect(
            MetricBuckets.boundaries(from: 0, to: 4000 * Scenario.day, interval: .day, timeZone: Self.utc) == nil,
            "more than 3,660 buckets")
    }

    @Test func boundariesAreWrittenAsISO8601InUTC() {
        #expect(MetricTable.iso(Scenario.utc(2024, 2, 29, 13, 5, 9)) == "2024-02-29T13:05:09Z")
        #expect(MetricTable.iso(0) == "1970-01-01T00:00:00Z")
        #expect(MetricTable.iso(Scenario.utc(1969, 12, 31, 23, 59, 59)) == "1969-12-31T23:59:59Z")
    }

    @Test func aTableHasOneColumnPerCurrencyAndTheConversionWithRates() {
        var january = MetricBucket(start: Scenario.utc(2024, 1, 1), end: Scenario.utc(2024, 2, 1))
        january.mrr = ["USD": 10_000, "EUR": 9_000]
        january.unpriced = 2
        var february = MetricBucket(start: Scenario.utc(2024, 2, 1), end: Scenario.utc(2024, 3, 1))
        february.mrr = ["USD": 20_000, "JPY": 1_500_000]
        let rates = ExchangeRates(currency: "EUR", micros: ["USD": 900_000])
        let table = MetricTable(
            .mrr, buckets: [january, february], environment: .production, interval: .month, timeZone: "UTC",
            productId: nil, asOf: 7, rates: rates)
        #expect(table.columns == ["mrr_EUR", "mrr_JPY", "mrr_USD", "unpriced", "mrr_in_EUR", "unconverted"])
        #expect(table.rows.map(\.values) == [[9_000, 0, 10_000, 2, 18_000, 0], [0, 1_500_000, 20_000, 0, 18_000, 1]])
        #expect(
            table.csv
                == "start,end,mrr_EUR,mrr_JPY,mrr_USD,unpriced,mrr_in_EUR,unconverted\r\n"
                + "2024-01-01T00:00:00Z,2024-02-01T00:00:00Z,9000,0,10000,2,18000,0\r\n"
                + "2024-02-01T00:00:00Z,2024-03-01T00:00:00Z,0,1500000,20000,0,18000,1\r\n")
    }
}
