import LedgerCore
import LedgerTestSupport
import Testing

/// The configuration types the fold reads: calendar durations and the catalog.
@Suite struct CatalogTests {
    @Test func durationsParseAndAddCalendarTime() {
        #expect(CalendarDuration(iso8601: "P1M") == CalendarDuration(months: 1))
        #expect(CalendarDuration(iso8601: "P1Y") == CalendarDuration(months: 12))
        #expect(CalendarDuration(iso8601: "P2W") == CalendarDuration(days: 14))
        #expect(CalendarDuration(iso8601: "P1Y2M3D") == CalendarDuration(months: 14, days: 3))
        for bad in ["", "P", "1M", "PM", "P1H", "P1D1M", "PT1H"] { #expect(CalendarDuration(iso8601: bad) == nil, "\(bad)") }
        #expect(CalendarDuration(months: 1).added(to: Scenario.utc(2023, 1, 31, 8)) == Scenario.utc(2023, 2, 28, 8))
        #expect(CalendarDuration(months: 12).added(to: Scenario.utc(2024, 2, 29)) == Scenario.utc(2025, 2, 28))
        #expect(CalendarDuration(days: 7).added(to: Scenario.utc(2023, 12, 28, 23, 59)) == Scenario.utc(2024, 1, 4, 23, 59))
        #expect(CalendarDuration(months: 1).added(to: Scenario.utc(1969, 12, 15)) == Scenario.utc(1970, 1, 15))
    }

    @Test func catalogDefaults() {
        let catalog = Catalog(products: [
            "gems": ProductConfiguration(type: .consumable, credits: ["gems": 60]),
            "plain": ProductConfiguration(type: .autoRenewable),
        ])
        #expect(catalog.entitlements(for: "unknown") == ["unknown"])
        #expect(catalog.entitlements(for: "plain") == ["plain"])
        #expect(catalog.entitlements(for: "gems").isEmpty)
        #expect(catalog.credits(for: "gems") == ["gems": 60])
    }
}
