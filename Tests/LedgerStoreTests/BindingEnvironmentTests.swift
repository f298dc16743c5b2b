import LedgerCore
import LedgerStore
import Testing

/// `POST /v1/bindings {"appUserId","originalTransactionId"}` names no environment: the binding applies wherever
/// the subscription is known, and where it appears later; an explicit environment narrows it.
@Suite struct BindingEnvironmentTests {
    static let day: Int64 = 86_400_000
    static let start: Int64 = 1_740_819_600_000  // 2025-03-01T09:00:00Z
    static let otid: OriginalTransactionID = "2000000000000777"

    static func purchase(_ environment: AppStoreEnvironment, id: String = "2000000000000777") -> LedgerInput {
        var t = TransactionFact(
            transactionId: TransactionID(id), originalTransactionId: otid, productId: "premium", purchaseDate: start,
            environment: environment)
        t.expiresDate = start + 30 * day
        t.signedDate = start
        t.webOrderLineItemId = "w" + id
        return input(.transaction(t), received: start)
    }

    static func binding(_ user: String, at: Int64, environment: AppStoreEnvironment? = nil) -> LedgerInput {
        let claim = BindingClaim(
            appUserId: AppUserID(user), originalTransactionId: otid, claimedAt: at,
            environment: environment ?? .production, everyEnvironment: environment == nil)
        return input(.binding(claim), received: at)
    }

    static func input(_ fact: Fact, received: Int64) -> LedgerInput {
        .facts([fact], metadata: FactMetadata(source: .decodedJSON, receivedAt: received), raw: Array(fact.eventKey.utf8))
    }

    static func active(_ ledger: Ledger, _ user: AppUserID, _ environment: AppStoreEnvironment) throws -> Bool? {
        try ledger.customer(user, environment: environment, at: start + 10 * day).entitlements["premium"]?.active
    }

    static func sound(_ ledger: Ledger) throws {
        #expect(try ledger.audit.verify().fault == nil)
        #expect(try ledger.audit.replay(check: true).differences.isEmpty)
    }

    @Test func aBindingWithoutEnvironmentAppliesWhereTheSubscriptionIsKnown() throws {
        let t = try TemporaryLedger()
        _ = try t.ledger.appendAndWait([Self.purchase(.sandbox)])
        _ = try t.ledger.appendAndWait([Self.binding("u1", at: Self.start + Self.day)])
        #expect(try Self.active(t.ledger, "u1", .sandbox) == true, "the binding landed in Production only")
        #expect(try Self.active(t.ledger, "u1", .production) == nil)
        #expect(try t.ledger.timeline(Self.otid, environment: .sandbox, at: Self.start + 2 * Self.day)?.owners.map(\.appUserId) == ["u1"])
        try Self.sound(t.ledger)
    }

    @Test func aBindingWithoutEnvironmentAppliesWhereTheSubscriptionAppearsLater() throws {
        let t = try TemporaryLedger()
        _ = try t.ledger.appendAndWait([Self.binding("u1", at: Self.start + Self.day)])
        #expect(try Self.active(t.ledger, "u1", .sandbox) == nil)
        _ = try t.ledger.appendAndWait([Self.purchase(.sandbox)])
        #expect(try Self.active(t.ledger, "u1", .sandbox) == true)
        // Later in Production too (one batch with the binding's next claim).
        _ = try t.ledger.appendAndWait([Self.purchase(.production, id: "2000000000000777"), Self.binding("u2", at: Self.start + 2 * Self.day)])
        #expect(try Self.active(t.ledger, "u1", .production) == false, "u2's later binding moved it")
        #expect(try Self.active(t.ledger, "u2", .production) == true)
        #expect(try Self.active(t.ledger, "u2", .sandbox) == true)
        try Self.sound(t.ledger)
        try t.reopen()
        #expect(try Self.active(t.ledger, "u2", .sandbox) == true)
        try Self.sound(t.ledger)
    }

    @Test func anExplicitEnvironmentNarrowsTheBinding() throws {
        let t = try TemporaryLedger()
        _ = try t.ledger.appendAndWait([Self.purchase(.sandbox), Self.purchase(.production)])
        _ = try t.ledger.appendAndWait([Self.binding("u1", at: Self.start + Self.day, environment: .production)])
        #expect(try Self.active(t.ledger, "u1", .production) == true)
        #expect(try Self.active(t.ledger, "u1", .sandbox) == nil)
        try Self.sound(t.ledger)
    }

    @Test func asOfBeforeTheBindingOwnsNothing() throws {
        let t = try TemporaryLedger()
        _ = try t.ledger.appendAndWait([Self.purchase(.sandbox)])
        let before = try t.ledger.lastSeq()
        _ = try t.ledger.appendAndWait([Self.binding("u1", at: Self.start + Self.day)])
        let then = try t.ledger.customer("u1", environment: .sandbox, at: Self.start + 10 * Self.day, asOf: before)
        #expect(then.entitlements["premium"]?.active != true)
        #expect(try Self.active(t.ledger, "u1", .sandbox) == true)
    }
}

/// An environment Apple adds later is a namespace of its own: stored, indexed, folded and read under its name.
@Suite struct UnknownEnvironmentTests {
    @Test func aTransactionOfAnEnvironmentThisBuildDoesNotKnowIsKeptApart() throws {
        let staging = try #require(AppStoreEnvironment(appleName: "StagingPreview"))
        #expect(!staging.isKnown)
        #expect(staging.rawValue == "StagingPreview")
        #expect(AppStoreEnvironment(appleName: "PROD") == .production)
        #expect(AppStoreEnvironment(appleName: "") == nil)
        #expect(AppStoreEnvironment(appleName: "no spaces please") == nil)

        let t = try TemporaryLedger()
        _ = try t.ledger.appendAndWait([
            BindingEnvironmentTests.purchase(staging), BindingEnvironmentTests.purchase(.production, id: "2000000000000778"),
        ])
        _ = try t.ledger.appendAndWait([
            BindingEnvironmentTests.input(
                .binding(
                    BindingClaim(
                        appUserId: "u1", originalTransactionId: BindingEnvironmentTests.otid,
                        claimedAt: BindingEnvironmentTests.start, environment: staging)),
                received: BindingEnvironmentTests.start)
        ])
        let at = BindingEnvironmentTests.start + 2 * BindingEnvironmentTests.day
        let view = try #require(try t.ledger.timeline(BindingEnvironmentTests.otid, environment: staging, at: at))
        #expect(view.environment == "StagingPreview")
        #expect(view.periods.map(\.transactionId) == ["2000000000000777"])
        #expect(view.owners.map(\.appUserId) == ["u1"])
        let production = try #require(try t.ledger.timeline(BindingEnvironmentTests.otid, at: at))
        #expect(production.periods.map(\.transactionId) == ["2000000000000778"], "facts never mix across environments")
        #expect(production.owners.isEmpty)
        #expect(try t.ledger.customer("u1", environment: staging, at: at).entitlements["premium"]?.active == true)
        #expect(try t.ledger.customer("u1", at: at).entitlements.isEmpty)
        try BindingEnvironmentTests.sound(t.ledger)
        try t.reopen()
        #expect(try t.ledger.timeline(BindingEnvironmentTests.otid, environment: staging, at: at)?.owners.map(\.appUserId) == ["u1"])
    }
}
