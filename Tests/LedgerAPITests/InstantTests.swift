import Foundation
import LedgerAPI
import Testing

/// The instants callers write: milliseconds, ISO-8601, and a calendar date alone (its midnight in the reading's time
/// zone), which is what people type (docs/cli.md, docs/socket-api.md).
@Suite struct InstantTests {
    static let paris = TimeZone(identifier: "Europe/Paris")!

    @Test func aDateAloneIsItsMidnightInTheTimeZoneUTCByDefault() {
        #expect(Instant.parse("2024-01-01") == 1_704_067_200_000)
        #expect(Instant.parse("2024-01-01", timeZone: Self.paris) == 1_704_063_600_000, "UTC+1 in winter")
        #expect(Instant.parse("2024-07-01", timeZone: Self.paris) == 1_719_784_800_000, "UTC+2 in summer")
        #expect(Instant.parse("2024-02-29") == 1_709_164_800_000, "a leap day")
        #expect(Instant.parse("1970-01-01") == 0)
        #expect(Instant.parseInQueryRange("9999-12-31") == 253_402_214_400_000)
    }

    @Test func whatIsNoDateIsNoInstant() {
        for text in ["2024-02-30", "2023-02-29", "2024-13-01", "2024-00-10", "2024-01-00", "2024-1-01", "2024/01/01",
            "2024-01-01 ", "+024-01-01", "2024-01-0a", "2024-01-01T", ""]
        {
            #expect(Instant.parse(text) == nil, "\(text)")
        }
    }

    @Test func millisecondsAndISO8601ReadAsBefore() {
        #expect(Instant.parse("1704067200000") == 1_704_067_200_000)
        #expect(Instant.parse("2024-01-01T00:00:00Z", timeZone: Self.paris) == 1_704_067_200_000, "an instant names its zone")
        #expect(Instant.parse("2024-01-01T00:00:00.250Z") == 1_704_067_200_250)
    }
}
