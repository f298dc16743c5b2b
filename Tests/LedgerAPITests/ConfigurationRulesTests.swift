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

/// Every key is optional, so a misspelled one would leave its setting at the default without a word: a key the
/// configuration does not know, at any level, is refused, naming it, where it is and the key meant.
@Suite struct ConfigurationKeysTests {
    func refusal(_ json: String) -> String? {
        do {
            _ = try LedgerConfiguration(json: Array(json.utf8), baseDirectory: "/")
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test func aMisspelledKeyIsNamedWithWhereItIsAndTheKeyMeant() {
        #expect(refusal(#"{"requireSignature": true}"#) == #"unknown key "requireSignature" at the top level (did you mean "requireSignatures"?)"#)
        #expect(refusal(#"{"bundleID": "com.example.app"}"#) == #"unknown key "bundleID" at the top level (did you mean "bundleId"?)"#)
        #expect(refusal(#"{"limits": {"maxBodyByte": 10}}"#) == #"unknown key "maxBodyByte" in limits (did you mean "maxBodyBytes"?)"#)
        #expect(refusal(#"{"socket": {"writers": {"gid": []}}}"#) == #"unknown key "gid" in socket.writers (did you mean "gids"?)"#)
        #expect(
            refusal(#"{"products": {"a.b": {"type": "consumable", "credit": {"gems": 1}}}}"#)
                == #"unknown key "credit" in products["a.b"] (did you mean "credits"?)"#)
        #expect(
            refusal(#"{"appStoreServerAPI": {"keyID": "K"}}"#)
                == #"unknown key "keyID" in appStoreServerAPI (did you mean "keyId"?)"#)
        #expect(refusal(#"{"webhook": {"url": "http://h/", "secret": "s", "retries": 3}}"#)?.hasPrefix(#"unknown key "retries" in webhook"#) == true)
    }

    @Test func aKeyFarFromEveryKnownOneListsTheKeysThere() throws {
        let message = try #require(refusal(#"{"revenue": {"currency": "EUR", "zzzzzzzz": 1}}"#))
        #expect(message == #"unknown key "zzzzzzzz" in revenue; the keys there are "currency", "rates""#)
    }

    @Test func theKeysOfMapsAreTheOperatorsAndTheirValuesAreChecked() throws {
        // Product ids and currency codes are any keys; what is inside a product is not.
        let configuration = try LedgerConfiguration(
            json: Array(#"{"products": {"any.id.at.all": {"type": "consumable", "credits": {"anything": 1}}}, "revenue": {"currency": "EUR", "rates": {"USD": 0.9}}}"#.utf8),
            baseDirectory: "/")
        #expect(configuration.rules.catalog.products["any.id.at.all"]?.credits == ["anything": 1])
        #expect(refusal(#"{"products": {"x": {"tpye": "consumable"}}}"#) == #"unknown key "tpye" in products["x"] (did you mean "type"?)"#)
    }

    /// Every key docs/configuration.md documents, each set: accepted.
    @Test func everyDocumentedKeyIsAccepted() throws {
        let json = #"""
            {"bundleId": "com.example.app", "bindingPolicy": "transfer", "environments": ["Production"],
             "trustedRoots": [], "requireSignatures": false,
             "socket": {"path": "/tmp/s.sock", "mode": "0660", "writers": {"uids": [1000], "gids": []}},
             "limits": {"maxBodyBytes": 16777216, "maxBatchInputs": 10000, "maxQueuedInputs": 100000,
                        "headerTimeoutSeconds": 10, "idleTimeoutSeconds": 60, "requestTimeoutSeconds": 30,
                        "maxConnections": 512, "maxConnectionsPerPeer": 64, "reservedForWriters": 128},
             "products": {"m": {"type": "autoRenewable", "entitlements": ["premium"], "group": "g1", "level": 2},
                          "p": {"type": "nonRenewing", "duration": "P1M"}, "c": {"type": "consumable", "credits": {"gems": 60}}},
             "webhook": {"url": "https://h.example/hook", "secret": "s", "maxAttempts": 8, "initialBackoffSeconds": 1,
                         "maxBackoffSeconds": 300, "timeoutSeconds": 10, "trustedCertificates": ["ca.pem"]},
             "revenue": {"currency": "EUR", "rates": {"USD": 0.92}},
             "appStoreServerAPI": {"keyFile": "k.p8", "keyId": "K", "issuerId": "I", "bundleId": "b", "environment": "Sandbox",
                                   "baseURL": "https://api.example", "trustedCertificates": ["ca.pem"], "maxRetries": 3,
                                   "maxRetryWaitSeconds": 30, "timeoutSeconds": 30, "reconcileEverySeconds": 3600,
                                   "reconcileWindowHours": 48, "reconcileModes": ["missed"], "reconcileOnlyFailures": true}}
            """#
        let configuration = try LedgerConfiguration(json: Array(json.utf8), baseDirectory: "/")
        #expect(configuration.rules.catalog.products.count == 3)
        #expect(configuration.limits.reservedForWriters == 128)
    }

    /// A rules file changes what it states and keeps the rest of the rules in force.
    @Test func aRulesFileStatesAChangeOfTheRulesInForce() throws {
        let inForce = try LedgerConfiguration(
            json: Array(#"{"bindingPolicy": "share", "products": {"m": {"type": "autoRenewable", "entitlements": ["premium"]}}}"#.utf8),
            baseDirectory: "/"
        ).rules
        func over(_ json: String) throws -> FoldRules {
            try LedgerConfiguration(json: Array(json.utf8), baseDirectory: "/").rules(over: inForce)
        }
        let keep = try over(#"{"bindingPolicy": "keep"}"#)
        #expect(keep.bindingPolicy == .keep)
        #expect(keep.catalog == inForce.catalog, "the catalog stays")
        let products = try over(#"{"products": {"y": {"type": "nonConsumable"}}}"#)
        #expect(products.bindingPolicy == .share, "the binding policy stays")
        #expect(Array(products.catalog.products.keys) == ["y"])
        #expect(try over(#"{"products": {}}"#).catalog.products.isEmpty, "an empty catalog stated empties it")
        #expect(try over(#"{"limits": {"maxBodyBytes": 10}}"#) == inForce)
    }

    @Test func aFileNamedWithoutADirectoryIsReadBesideItself() {
        #expect(LedgerConfiguration.directory(of: "config.json") == ".")
        #expect(LedgerConfiguration.directory(of: "conf/config.json") == "conf")
        #expect(LedgerConfiguration.directory(of: "/etc/storeledger/config.json") == "/etc/storeledger")
    }
}
