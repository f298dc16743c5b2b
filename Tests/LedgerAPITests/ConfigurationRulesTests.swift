import Foundation
import LedgerAPI
import LedgerCore
import Testing

/// What a configuration's rules must say before the ledger folds with them.
@Suite struct ConfigurationRulesTests {
    /// Apple states no expiry for a non-renewing product: without a catalog duration it would grant forever. Such a
    /// catalog is refused, naming the product.
    @Test func aNonRenewingProductWithoutADurationIsRefusedByName() throws {
        let json = #"{"products":{"pass.month":{"type":"nonRenewing","entitlements":["premium"]},"pass.year":{"type":"nonRenewing","duration":"P1Y"}}}"#
        #expect {
            _ = try LedgerConfiguration(json: Array(json.utf8), baseDirectory: "/")
        } throws: { error in
            let message = "\(error)"
            return message.contains("products.pass.month") && message.contains("duration") && !message.contains("pass.year")
        }
        let fine = #"{"products":{"pass.month":{"type":"nonRenewing","duration":"P1M"}}}"#
        let configuration = try LedgerConfiguration(json: Array(fine.utf8), baseDirectory: "/")
        #expect(configuration.rules.catalog.products["pass.month"]?.duration == CalendarDuration(months: 1))
        #expect(configuration.statesRules)
        #expect(try !LedgerConfiguration(json: Array(#"{"limits":{"maxConnections":10}}"#.utf8), baseDirectory: "/").statesRules)
    }
}
