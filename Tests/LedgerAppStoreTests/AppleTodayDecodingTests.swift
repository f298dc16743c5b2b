import LedgerAppStore
import LedgerCodec
import LedgerCore
import LedgerTestSupport
import LedgerErrors
import Testing

private typealias F = AppleFixtures

/// What Apple sends today (its current documentation and app-store-server-library models), decoded: the fields and
/// shapes the fold reads, one receipt that states a transaction twice, and the App Store Server API's answers.
@Suite struct AppleTodayDecodingTests {
    // MARK: One receipt, two copies

    /// `in_app` has the refund (cancellation_date_ms), `latest_receipt_info` a stale copy without it: one fact, the
    /// refunded one, and the timeline is revoked from the cancellation date.
    @Test(arguments: [false, true])
    func aReceiptStatingATransactionTwiceKeepsTheRevocation(refundInLatest: Bool) throws {
        let refundedAt = F.epoch + 12 * F.day
        let refunded = F.v1Transaction(cancellationDate: refundedAt, cancellationReason: "1")
        let stale = F.v1Transaction()
        let body = F.receiptIOS7(
            requestDate: F.epoch + 20 * F.day, inApp: [refundInLatest ? stale : refunded],
            latest: [refundInLatest ? refunded : stale])
        let input = try decode(body)
        #expect(input.transactions.count == 1)
        #expect(input.transactions.first?.revocationDate == refundedAt)

        let events = input.facts.enumerated().map { i, fact in
            LedgerEvent(seq: UInt64(i + 1), fact: fact, metadata: input.metadata)
        }
        let t = Timeline.fold(
            events, originalTransactionId: "1000000000000001", environment: .production, rules: FoldRules(),
            ties: .canonical)
        #expect(t.status(at: refundedAt - 1).status == .active)
        #expect(t.status(at: F.epoch + 25 * F.day).status == .revoked)
    }

    // MARK: New fields

    /// The fields of Apple's current `JWSTransactionDecodedPayload` the fold reads are facts, not `extra`.
    @Test func aTransactionCarriesPriceOfferPeriodAppTransactionAndCommitment() throws {
        let payload = F.v2Transaction(
            offerType: 1, offerDiscountType: "ONE_TIME", price: 10_990, currency: "USD",
            extra: [
                "appTransactionId": "71134", "offerPeriod": "P1Y", "billingPlanType": "MONTHLY",
                "commitmentInfo": [
                    "billingPeriodNumber": 3, "commitmentExpiresDate": 1_698_150_000_000, "commitmentPrice": 119_880,
                    "totalBillingPeriods": 12,
                ],
                "advancedCommerceInfo": ["period": "P1M"],
            ])
        let t = try #require(try decode(F.json(payload), type: .transaction).transactions.first)
        #expect(t.price == 10_990)
        #expect(t.currency == "USD")
        #expect(t.offerDiscountType == "ONE_TIME")
        #expect(t.appTransactionId == "71134")
        #expect(t.offerPeriod == "P1Y")
        #expect(t.billingPlanType == "MONTHLY")
        #expect(
            t.commitment
                == TransactionFact.Commitment(
                    billingPeriodNumber: 3, totalBillingPeriods: 12, expiresDate: 1_698_150_000_000, price: 119_880))
        #expect(t.extra["appTransactionId"] == nil && t.extra["commitmentInfo"] == nil)
        #expect(t.extra["advancedCommerceInfo"] == #"{"period":"P1M"}"#, "what the ledger does not model is kept")
    }

    @Test func aRenewalInfoCarriesRenewalPriceAndWinBackOffers() throws {
        let payload = F.v2Renewal(extra: [
            "renewalPrice": 9_990, "currency": "USD", "offerDiscountType": "PAY_AS_YOU_GO", "offerPeriod": "P1Y",
            "eligibleWinBackOfferIds": ["eligible1", "eligible2"], "appAccountToken": "7E3FB20B-4CDB-47CC-936D-99D65F608138",
            "appTransactionId": "71134", "renewalBillingPlanType": "MONTHLY",
        ])
        let input = try decode(F.json(payload), type: .renewal)
        guard case .renewal(let r)? = input.facts.first else {
            Issue.record("no renewal info")
            return
        }
        #expect(r.renewalPrice == 9_990)
        #expect(r.currency == "USD")
        #expect(r.offerDiscountType == "PAY_AS_YOU_GO")
        #expect(r.offerPeriod == "P1Y")
        #expect(r.eligibleWinBackOfferIds == ["eligible1", "eligible2"])
        #expect(r.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(r.appTransactionId == "71134")
        #expect(r.renewalBillingPlanType == "MONTHLY")
        #expect(r.extra.isEmpty)
    }

    // MARK: Notifications Apple added

    /// Every type in Apple's current list decodes, keeps its type and subtype, and names its subscription when it
    /// carries a transaction.
    @Test(arguments: [
        ("ONE_TIME_CHARGE", nil), ("REFUND_REVERSED", nil), ("CONSUMPTION_REQUEST", nil), ("METADATA_UPDATE", nil),
        ("MIGRATION", nil), ("PRICE_CHANGE", nil), ("RENEWAL_EXTENSION", "FAILURE"), ("REVOKE", nil),
    ] as [(String, String?)])
    func newNotificationTypesNameTheirSubscription(type: String, subtype: String?) throws {
        let payload = F.v2NotificationPayload(type: type, subtype: subtype, transaction: F.v2Transaction())
        let input = try decode(F.v2Notification(signedPayload: TestPKI.shared.sign(json: payload)))
        let n = try #require(input.notifications.first)
        #expect(n.notificationType == type)
        #expect(n.subtype == subtype)
        #expect(n.originalTransactionId == "2000000000000001")
    }

    // MARK: Token claims

    /// A transaction posted for app user u9 carrying a token: the token's claim names u9, and says which token.
    @Test func aTokenClaimNamesTheCallersUser() throws {
        let jws = F.signedTransaction(F.v2Transaction(appAccountToken: "AAAAAAAA-0000-0000-0000-000000000001"))
        let input = try decode(Array(jws.utf8), appUserId: "u9")
        let token = try #require(input.bindings.first { $0.cause == .appAccountToken })
        #expect(token.appUserId == "u9")
        #expect(token.appAccountToken == "aaaaaaaa-0000-0000-0000-000000000001")
        let alone = try decode(Array(jws.utf8))
        #expect(alone.bindings.map(\.appUserId) == ["aaaaaaaa-0000-0000-0000-000000000001"])
    }

    /// A binding without an environment applies wherever the subscription is known; with one, only there.
    @Test func aBindingNamesAnEnvironmentOnlyWhenItSaysOne() throws {
        let bare = try #require(try decode(F.binding(appUserId: "u1", originalTransactionId: "9")).bindings.first)
        #expect(bare.everyEnvironment)
        let narrowed = try #require(
            try decode(F.json(["appUserId": "u1", "originalTransactionId": "9", "environment": "Sandbox"])).bindings.first)
        #expect(!narrowed.everyEnvironment)
        #expect(narrowed.environment == .sandbox)
        let named = try #require(
            try decode(F.json(["appUserId": "u1", "originalTransactionId": "9", "appAccountToken": "ABC"])).bindings.first)
        #expect(named.appAccountToken == "abc")
    }

    /// An environment Apple adds later is kept as its own namespace, not refused.
    @Test func anEnvironmentThisBuildDoesNotKnowIsKept() throws {
        let t = try #require(try decode(F.json(F.v2Transaction(environment: "StagingPreview")), type: .transaction).transactions.first)
        #expect(t.environment.rawValue == "StagingPreview")
        #expect(!t.environment.isKnown)
        let bytes = Fact.transaction(t).encoded()
        let roundTrip = try bytes.withUnsafeBytes { try Fact(decoding: $0) }
        #expect(roundTrip == .transaction(t))
        #expect(refusal(F.json(F.v2Transaction(environment: "two words")), type: .transaction)?.code == "unknown_environment")
    }

    // MARK: App Store Server API answers

    /// Get All Subscription Statuses, verbatim: each `lastTransactions` item's transaction and renewal info.
    @Test func aSubscriptionStatusesResponseIsTheTransactionsItLists() throws {
        let body = F.json([
            "environment": "Production", "bundleId": F.bundleId, "appAppleId": 5_454_545,
            "data": [
                [
                    "subscriptionGroupIdentifier": "sub_group_one",
                    "lastTransactions": [
                        [
                            "status": 1, "originalTransactionId": "2000000000000001",
                            "signedTransactionInfo": F.signedTransaction(F.v2Transaction()),
                            "signedRenewalInfo": F.signedRenewal(F.v2Renewal()),
                        ],
                        [
                            "status": 2, "originalTransactionId": "2000000000000050",
                            "signedTransactionInfo": F.signedTransaction(
                                F.v2Transaction(transactionId: "2000000000000050", originalTransactionId: "2000000000000050")),
                        ],
                    ],
                ]
            ],
        ])
        let input = try decode(body)
        #expect(input.type == .transaction)
        #expect(input.transactions.map(\.transactionId) == ["2000000000000001", "2000000000000050"])
        #expect(input.facts.filter { $0.kind == .renewal }.count == 1)
        #expect(input.metadata.signature == .verified)
    }

    /// One `lastTransactions` item alone has a `status` too: it is a signed pair, never a receipt.
    @Test func aStatusItemIsNotMistakenForAReceipt() throws {
        let item = F.json([
            "status": 1, "originalTransactionId": "2000000000000001",
            "signedTransactionInfo": F.signedTransaction(F.v2Transaction()),
            "signedRenewalInfo": F.signedRenewal(F.v2Renewal()),
        ])
        let input = try decode(item)
        #expect(input.type == .transaction)
        #expect(input.metadata.source == .signedTransaction)
        #expect(input.facts.map(\.kind) == [.transaction, .renewal])
    }

    /// A signed AppTransaction: the app's own purchase, a one-time purchase of the bundle id, with the version the
    /// customer first got (how an app that went free recognises its paid-app buyers).
    @Test func aSignedAppTransactionIsTheAppsOwnPurchase() throws {
        let payload: [String: Any] = [
            "receiptType": "Sandbox", "appAppleId": 531_412, "bundleId": F.bundleId, "applicationVersion": "1.2.3",
            "versionExternalIdentifier": 512, "receiptCreationDate": 1_698_148_900_000,
            "originalPurchaseDate": 1_698_148_800_000, "originalApplicationVersion": "1.1.2",
            "deviceVerification": "device_verification_value",
            "deviceVerificationNonce": "48ccfa42-7431-4f22-9908-7e88983e105a", "preorderDate": 1_698_148_700_000,
            "appTransactionId": "71134", "originalPlatform": "iOS",
        ]
        let input = try decode(Array(TestPKI.shared.sign(json: payload).utf8), appUserId: "u7")
        let t = try #require(input.transactions.first)
        #expect(t.transactionId == "app:71134")
        #expect(t.originalTransactionId == "app:71134")
        #expect(t.productId == F.bundleId)
        #expect(t.type == .nonConsumable)
        #expect(t.environment == .sandbox)
        #expect(t.purchaseDate == 1_698_148_800_000)
        #expect(t.originalApplicationVersion == "1.1.2")
        #expect(t.extra["originalPlatform"] == #""iOS""#)
        #expect(input.bindings.map(\.appUserId) == ["u7"])
        let events = input.facts.enumerated().map { LedgerEvent(seq: UInt64($0 + 1), fact: $1, metadata: input.metadata) }
        let timeline = Timeline.fold(
            events, originalTransactionId: "app:71134", environment: .sandbox, rules: FoldRules(), ties: .canonical)
        #expect(timeline.view(at: 1_698_148_900_000, asOf: nil).periods.first?.originalApplicationVersion == "1.1.2")
        #expect(timeline.status(at: 1_798_148_900_000).status == .active, "the app is the customer's for good")
        #expect(refusal(Array(TestPKI.shared.sign(json: ["receiptType": "Production", "bundleId": F.bundleId]).utf8))?.code == "missing_field")
    }

    /// Get Transaction History (one page), verbatim.
    @Test func aTransactionHistoryPageIsItsTransactions() throws {
        let body = F.json([
            "revision": "revision_output", "hasMore": true, "bundleId": F.bundleId, "appAppleId": 323_232,
            "environment": "Production",
            "signedTransactions": [
                F.signedTransaction(F.v2Transaction()),
                F.signedTransaction(
                    F.v2Transaction(
                        transactionId: "2000000000000002", purchaseDate: F.epoch + 30 * F.day,
                        expiresDate: F.epoch + 60 * F.day, webOrderLineItemId: "3000000000000002",
                        transactionReason: "RENEWAL")),
            ],
        ])
        let input = try decode(body)
        #expect(input.transactions.map(\.transactionId) == ["2000000000000001", "2000000000000002"])
        #expect(input.transactions.map(\.transactionReason) == ["PURCHASE", "RENEWAL"])
        #expect(refusal(F.json(["signedTransactions": [42]]))?.code == "wrong_type")
    }
}
