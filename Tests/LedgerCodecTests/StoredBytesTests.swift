import LedgerCodec
import LedgerCore
import Testing

/// The bytes on disk, pinned: a stored event of every kind and two stored timelines (the `timelines` value: the seq
/// it reflects, then the timeline), each against the exact bytes the ledger wrote before its codec became a module of
/// its own. A ledger written by an older build must open, verify and replay unchanged, so these never change; a new
/// field is a new tag, and a new expectation here.
@Suite struct StoredBytesTests {
    static let t0: UnixMillis = 1_714_521_600_000  // 2024-05-01T00:00:00Z
    static let day: UnixMillis = 86_400_000
    static let otid: OriginalTransactionID = "2000000741475761"

    /// A transaction of `otid` with the fields a V2 renewal states.
    static func transaction(
        _ id: String, product: String, at purchased: UnixMillis, months: Int64 = 1, lineItem: String? = nil,
        environment: AppStoreEnvironment = .production
    ) -> TransactionFact {
        var t = TransactionFact(
            transactionId: TransactionID(id), originalTransactionId: otid, productId: product, purchaseDate: purchased,
            environment: environment)
        t.webOrderLineItemId = lineItem
        t.bundleId = "com.example.app"
        t.originalPurchaseDate = t0
        t.expiresDate = purchased + months * 30 * day
        t.type = .autoRenewable
        t.signedDate = purchased + 1_000
        t.inAppOwnershipType = "PURCHASED"
        t.storefront = "USA"
        t.transactionReason = purchased == t0 ? "PURCHASE" : "RENEWAL"
        t.price = 9_990
        t.currency = "USD"
        return t
    }

    /// One event per kind, most fields set, an environment this build does not know, unknown fields kept.
    static func events() -> [LedgerEvent] {
        var full = transaction("2000000750000001", product: "com.example.premium.monthly", at: t0, lineItem: "3000000057437201")
        full.subscriptionGroupIdentifier = "20675121"
        full.quantity = 2
        full.appAccountToken = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
        full.offerType = 1
        full.offerIdentifier = "intro"
        full.offerDiscountType = "FREE_TRIAL"
        full.offerPeriod = "P1M"
        full.isTrialPeriod = true
        full.isInIntroOfferPeriod = false
        full.revocationDate = t0 + 2 * day
        full.revocationReason = 1
        full.revocationType = "REFUND_PRORATED"
        full.revocationPercentage = 42_500
        full.isUpgraded = false
        full.appTransactionId = "704289572311"
        full.billingPlanType = "MONTHLY"
        full.commitment = TransactionFact.Commitment(
            billingPeriodNumber: 1, totalBillingPeriods: 12, expiresDate: t0 + 360 * day, price: 99_990)
        full.originalApplicationVersion = "1.0"
        full.extra = ["futureField": "{\"a\":1}", "other": "\"x\""]
        full.unknownFields.fields.append(UnknownField(tag: 90, wireType: .varint, varint: 12_345, bytes: []))
        full.unknownFields.fields.append(UnknownField(tag: 91, wireType: .bytes, varint: 0, bytes: Array("later".utf8)))

        var renewal = RenewalInfoFact(originalTransactionId: otid, environment: .sandbox)
        renewal.productId = "com.example.premium.monthly"
        renewal.autoRenewProductId = "com.example.premium.yearly"
        renewal.autoRenewStatus = false
        renewal.expirationIntent = 1
        renewal.isInBillingRetryPeriod = true
        renewal.gracePeriodExpiresDate = t0 + 40 * day
        renewal.priceIncreaseStatus = 0
        renewal.renewalDate = t0 + 30 * day
        renewal.offerType = 4
        renewal.offerIdentifier = "winback"
        renewal.signedDate = t0 + 3 * day
        renewal.recentSubscriptionStartDate = t0
        renewal.renewalPrice = 10_990
        renewal.currency = "USD"
        renewal.offerDiscountType = "PAY_AS_YOU_GO"
        renewal.offerPeriod = "P3M"
        renewal.eligibleWinBackOfferIds = ["w1", "w2"]
        renewal.appAccountToken = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
        renewal.appTransactionId = "704289572311"
        renewal.renewalBillingPlanType = "MONTHLY"
        renewal.extra = ["k": "1"]

        var note = NotificationFact(
            notificationUUID: "002e14d5-51f5-4503-b5a8-c3a1af68eb20", notificationType: "DID_RENEW",
            environment: AppStoreEnvironment(appleName: "FutureEnv")!)
        note.subtype = "BILLING_RECOVERY"
        note.signedDate = t0 + 4 * day
        note.version = "2.0"
        note.bundleId = "com.example.app"
        note.appAppleId = 41_234
        note.originalTransactionId = otid
        note.transactionId = "2000000750000001"
        note.status = 1
        note.autoRenewStatus = true
        note.autoRenewProductId = "com.example.premium.yearly"
        note.extra = ["data.consumptionRequestReason": "\"UNINTENDED_PURCHASE\""]

        let claim = BindingClaim(
            appUserId: "alice", originalTransactionId: otid, claimedAt: t0 + 5 * day, cause: .appAccountToken,
            environment: .xcode, appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138", everyEnvironment: true)

        var metadata = FactMetadata(
            source: .notificationV2, signature: .verified, receivedAt: t0 + 6 * day, observedAt: t0 + 5 * day,
            rawDigest: Array(0..<32), appUserId: "bob")
        metadata.unknownFields.fields.append(UnknownField(tag: 40, wireType: .varint, varint: 3, bytes: []))
        let plain = FactMetadata(source: .receipt, receivedAt: t0 + 7 * day)
        return [
            LedgerEvent(seq: 1, fact: .transaction(full), metadata: metadata),
            LedgerEvent(seq: 2, fact: .renewal(renewal), metadata: plain),
            LedgerEvent(seq: 3, fact: .notification(note), metadata: metadata),
            LedgerEvent(seq: 4, fact: .binding(claim), metadata: plain),
        ]
    }

    /// A subscription's history using every part of a timeline: periods sharing terms, an offer, a refund reversed and
    /// one open, a restored copy, an upgrade, stated changes, renewal state, owners, a refused claim, token users.
    static func history() -> [LedgerEvent] {
        var facts: [(Fact, UnixMillis)] = []
        var first = transaction("2000000750000001", product: "com.example.basic", at: t0, lineItem: "3000000057437201")
        first.offerType = 2
        first.offerIdentifier = "spring"
        first.offerDiscountType = "PAY_AS_YOU_GO"
        facts.append((.transaction(first), t0 + 1_000))
        facts.append(
            (.binding(BindingClaim(appUserId: "alice", originalTransactionId: otid, claimedAt: t0 + 2_000)), t0 + 2_000))
        var refund = first
        refund.signedDate = t0 + day
        refund.revocationDate = t0 + day
        refund.revocationReason = 0
        refund.revocationType = "REFUND_PRORATED"
        refund.revocationPercentage = 50_000
        facts.append((.transaction(refund), t0 + day))
        var reversed = NotificationFact(notificationUUID: "a1", notificationType: "REFUND_REVERSED")
        reversed.signedDate = t0 + 2 * day
        reversed.originalTransactionId = otid
        reversed.transactionId = "2000000750000001"
        facts.append((.notification(reversed), t0 + 2 * day))
        // A V1 restore of the first period (a new id, no line item, no signed date).
        var restore = TransactionFact(
            transactionId: "2000000750000009", originalTransactionId: otid, productId: "com.example.basic",
            purchaseDate: t0)
        restore.expiresDate = t0 + 30 * day
        facts.append((.transaction(restore), t0 + 3 * day))
        for month in 1...3 {
            let at = t0 + Int64(month) * 30 * day
            facts.append(
                (.transaction(
                    transaction(
                        "20000007500000\(10 + month)", product: "com.example.basic", at: at,
                        lineItem: "30000000574372\(10 + month)")), at + 1_000))
        }
        // An upgrade in the third month, then a refund of it.
        let upgradeAt = t0 + 75 * day
        var pro = transaction("2000000750000020", product: "com.example.pro", at: upgradeAt, lineItem: "3000000057437220")
        pro.price = 19_990
        facts.append((.transaction(pro), upgradeAt + 1_000))
        var proRefund = pro
        proRefund.signedDate = upgradeAt + day
        proRefund.revocationDate = upgradeAt + day
        proRefund.revocationType = "REFUND_FULL"
        facts.append((.transaction(proRefund), upgradeAt + day))
        var info = RenewalInfoFact(originalTransactionId: otid)
        info.productId = "com.example.pro"
        info.autoRenewProductId = "com.example.basic"
        info.autoRenewStatus = false
        info.isInBillingRetryPeriod = true
        info.gracePeriodExpiresDate = upgradeAt + 40 * day
        info.expirationIntent = 2
        info.renewalPrice = 19_990
        info.currency = "USD"
        info.eligibleWinBackOfferIds = []
        info.renewalBillingPlanType = "MONTHLY"
        info.signedDate = upgradeAt + 2 * day
        facts.append((.renewal(info), upgradeAt + 2 * day))
        for (type, subtype, offset) in [
            ("DID_FAIL_TO_RENEW", "GRACE_PERIOD", 3), ("PRICE_INCREASE", "PENDING", 4), ("METADATA_UPDATE", nil, 5),
        ] {
            var n = NotificationFact(notificationUUID: "n\(offset)", notificationType: type)
            n.subtype = subtype
            n.signedDate = upgradeAt + Int64(offset) * day
            n.originalTransactionId = otid
            facts.append((.notification(n), upgradeAt + Int64(offset) * day))
        }
        facts.append(
            (.binding(
                BindingClaim(
                    appUserId: "bob", originalTransactionId: otid, claimedAt: upgradeAt + 6 * day,
                    cause: .appAccountToken, appAccountToken: "tok-1")), upgradeAt + 6 * day))
        facts.append(
            (.binding(
                BindingClaim(appUserId: "tok-2", originalTransactionId: otid, claimedAt: upgradeAt + 7 * day,
                    cause: .appAccountToken)), upgradeAt + 7 * day))
        return facts.enumerated().map { i, f in
            LedgerEvent(
                seq: UInt64(i + 1), fact: f.0, metadata: FactMetadata(source: .decodedJSON, receivedAt: f.1))
        }
    }

    static func stored(policy: BindingPolicy) -> [UInt8] {
        let t = Timeline.fold(
            history(), originalTransactionId: otid, environment: .production,
            rules: FoldRules(bindingPolicy: policy), ties: .canonical)
        return t.encoded(after: t.lastSeq)
    }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    @Test func storedEventsKeepTheirBytes() throws {
        for (event, expected) in zip(Self.events(), Self.expectedEvents) {
            let bytes = LedgerEvent.encode(fact: event.fact, metadata: event.metadata)
            #expect(Self.hex(bytes) == expected, "event \(event.seq)")
            #expect(try LedgerEvent(seq: event.seq, decoding: bytes) == event)
        }
    }

    @Test(arguments: [BindingPolicy.keep, .transfer])
    func storedTimelinesKeepTheirBytes(policy: BindingPolicy) throws {
        let bytes = Self.stored(policy: policy)
        #expect(Self.hex(bytes) == (policy == .keep ? Self.expectedKeep : Self.expectedTransfer))
        let decoded = try Timeline(decoding: Array(bytes.dropFirst(8)))
        #expect(decoded.encoded(after: decoded.lastSeq) == bytes)
    }

    /// The tail path writes the same bytes as the whole timeline: a renewal appended to the stored timeline.
    @Test func theTailPathKeepsTheBytes() throws {
        let before = Self.stored(policy: .keep)
        let renewal = LedgerEvent(
            seq: 100,
            fact: .transaction(
                Self.transaction(
                    "2000000750000030", product: "com.example.pro", at: Self.t0 + 120 * Self.day,
                    lineItem: "3000000057437230")),
            metadata: FactMetadata(source: .notificationV2, receivedAt: Self.t0 + 120 * Self.day + 1_000))
        let appended = try Array(before.dropFirst(8)).withUnsafeBytes {
            try Timeline.appending([renewal], toEncoded: $0, rules: FoldRules(bindingPolicy: .keep), stamped: true)
        }
        #expect(appended.map(Self.hex) == Self.expectedTail)
    }

    // The bytes written before the codec moved (hex); since schema 5 each period with its `inAppOwnershipType`
    // (field 22, `b20109 PURCHASED`) after its other terms.
    static let expectedEvents: [String] = [
        """
        010aa80301010a10323030303030303735303030303030311210323030303030303734313437353736311a103330303030303030\
        3537343337323031220f636f6d2e6578616d706c652e6170702a1b636f6d2e6578616d706c652e7072656d69756d2e6d6f6e7468\
        6c79320832303637353132313880c09b97e6634080c09b97e6634880e091bff96350045a1b4175746f2d52656e657761626c6520\
        537562736372697074696f6e622437653366623230622d346364622d343763632d393336642d3939643635663630383133386a09\
        50555243484153454470d0cf9b97e6637880a081bce7638001028a010f524546554e445f50524f52415445449001889805980100\
        a00102aa0105696e74726fb2010a465245455f545249414cb80101c00100c80100d20103555341da01085055524348415345e001\
        8c9c01ea0103555344f201160a0b6675747572654669656c6412077b2261223a317df2010c0a056f746865721203227822fa010c\
        37303432383935373233313182020350314d8a02074d4f4e54484c5992020f080210181880c0a6f6cd6520ac9a0c9a0203312e30\
        d005b960da05056c61746572123c080210011880e0cc85ea632080f099b3e9632a20000102030405060708090a0b0c0d0e0f1011\
        12131415161718191a1b1c1d1e1f3203626f62c00203
        """,
        """
        010af40101020a1032303030303030373431343735373631121b636f6d2e6578616d706c652e7072656d69756d2e6d6f6e74686c\
        791a1a636f6d2e6578616d706c652e7072656d69756d2e796561726c792000280230013880c08ef7ff6340004880e091bff96350\
        085a0777696e6261636b608090b48ee8636880c09b97e66370017a060a016b1201318001dcab018a010355534492010d5041595f\
        41535f594f555f474f9a010350334da00102aa01027731aa01027732b2012437653366623230622d346364622d343763632d3933\
        36642d393964363566363038313338ba010c373034323839353732333131c201074d4f4e54484c591214080010001880d0ffd7ea\
        632080d0ffd7ea632a00
        """,
        """
        010af00101030a2430303265313464352d353166352d343530332d623561382d63336131616636386562323012094449445f5245\
        4e45571a1042494c4c494e475f5245434f56455259208080e7e0e8632a03322e3030ff017a09467574757265456e763a0f636f6d\
        2e6578616d706c652e61707040a484054a1032303030303030373431343735373631521032303030303030373530303030303031\
        580260016a1a636f6d2e6578616d706c652e7072656d69756d2e796561726c7972360a1d646174612e636f6e73756d7074696f6e\
        52657175657374526561736f6e121522554e494e54454e4445445f505552434841534522123c080210011880e0cc85ea632080f0\
        99b3e9632a20000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f3203626f62c00203
        """,
        """
        010a5d01040a05616c6963651210323030303030303734313437353736311880f099b3e963220f6170704163636f756e74546f6b\
        656e2802322437653366623230622d346364622d343763632d393336642d39396436356636303831333838011214080010001880\
        d0ffd7ea632080d0ffd7ea632a00
        """,
    ]
    static let expectedKeep = """
    0000000000000010010a103230303030303037343134373537363110001ad1010a10323030303030303735303030303030311210\
    333030303030303035373433373230311a11636f6d2e6578616d706c652e62617369632080c09b97e6632880e091bff9633080e0\
    91bff9633880c09b97e6634000521908041206737072696e671a0d5041595f41535f594f555f474f621032303030303030373530\
    3030303030396a290880b0cee9e66310001a0f524546554e445f50524f524154454420a08d062880a081bce76330033804700180\
    018c9c018a01035553449201085055524348415345b201095055524348415345441a780a10323030303030303735303030303031\
    311210333030303030303035373433373231311a11636f6d2e6578616d706c652e62617369632080e091bff96328808088e78c64\
    30808088e78c643880c09b97e6634000700680018c9c018a010355534492010752454e4557414cb201095055524348415345441a\
    7a0a10323030303030303735303030303031321210333030303030303035373433373231321a11636f6d2e6578616d706c652e62\
    6173696320808088e78c642880a0fe8ea06430809083bb96643880c09b97e66340005801700780018c9c018a0103555344920107\
    52454e4557414cb201095055524348415345441aa2010a1032303030303030373530303030303230121033303030303030303537\
    3433373232301a0f636f6d2e6578616d706c652e70726f20809083bb96642880b0f9e2a9643080a0fe8ea0643880c09b97e66340\
    0058016a16088080b68d97641a0b524546554e445f46554c4c300a70097a10323030303030303735303030303032308001acb802\
    8a010355534492010752454e4557414cb201095055524348415345441a780a103230303030303037353030303030313312103330\
    30303030303035373433373231331a11636f6d2e6578616d706c652e62617369632080a0fe8ea0642880c0f4b6b3643080c0f4b6\
    b3643880c09b97e6634000700880018c9c018a010355534492010752454e4557414cb2010950555243484153454422120880f0e8\
    df9764100f180b288090f69ab064221e0880f0e8df9764100c180b2211636f6d2e6578616d706c652e6261736963220b0880e09b\
    b29864100f180c22140880d0ce8499641013180d220750454e44494e47221c0880c081d799641019180e220f4d45544144415441\
    5f5550444154452a4e0880f0e8df9764120f636f6d2e6578616d706c652e70726f1a11636f6d2e6578616d706c652e6261736963\
    200028043001388090f69ab064500b58acb802620355534468007a074d4f4e54484c5932120a05616c69636510a0df9b97e66320\
    0228003a1f0a03626f621080b0b4a99a64180f220f6170704163636f756e74546f6b656e3a210a05746f6b2d321080a0e7fb9a64\
    1810220f6170704163636f756e74546f6b656e40104a1b08d0affe8ea06410011a10323030303030303735303030303031335224\
    0a10323030303030303735303030303032301a10333030303030303035373433373232305a0e0a05746f6b2d321205746f6b2d32\
    620c0a05746f6b2d311203626f62
    """
    static let expectedTransfer = """
    0000000000000010010a103230303030303037343134373537363110001ad1010a10323030303030303735303030303030311210\
    333030303030303035373433373230311a11636f6d2e6578616d706c652e62617369632080c09b97e6632880e091bff9633080e0\
    91bff9633880c09b97e6634000521908041206737072696e671a0d5041595f41535f594f555f474f621032303030303030373530\
    3030303030396a290880b0cee9e66310001a0f524546554e445f50524f524154454420a08d062880a081bce76330033804700180\
    018c9c018a01035553449201085055524348415345b201095055524348415345441a780a10323030303030303735303030303031\
    311210333030303030303035373433373231311a11636f6d2e6578616d706c652e62617369632080e091bff96328808088e78c64\
    30808088e78c643880c09b97e6634000700680018c9c018a010355534492010752454e4557414cb201095055524348415345441a\
    7a0a10323030303030303735303030303031321210333030303030303035373433373231321a11636f6d2e6578616d706c652e62\
    6173696320808088e78c642880a0fe8ea06430809083bb96643880c09b97e66340005801700780018c9c018a0103555344920107\
    52454e4557414cb201095055524348415345441aa2010a1032303030303030373530303030303230121033303030303030303537\
    3433373232301a0f636f6d2e6578616d706c652e70726f20809083bb96642880b0f9e2a9643080a0fe8ea0643880c09b97e66340\
    0058016a16088080b68d97641a0b524546554e445f46554c4c300a70097a10323030303030303735303030303032308001acb802\
    8a010355534492010752454e4557414cb201095055524348415345441a780a103230303030303037353030303030313312103330\
    30303030303035373433373231331a11636f6d2e6578616d706c652e62617369632080a0fe8ea0642880c0f4b6b3643080c0f4b6\
    b3643880c09b97e6634000700880018c9c018a010355534492010752454e4557414cb2010950555243484153454422120880f0e8\
    df9764100f180b288090f69ab064221e0880f0e8df9764100c180b2211636f6d2e6578616d706c652e6261736963220b0880e09b\
    b29864100f180c22140880d0ce8499641013180d220750454e44494e47221c0880c081d799641019180e220f4d45544144415441\
    5f5550444154452a4e0880f0e8df9764120f636f6d2e6578616d706c652e70726f1a11636f6d2e6578616d706c652e6261736963\
    200028043001388090f69ab064500b58acb802620355534468007a074d4f4e54484c5932190a05616c69636510a0df9b97e66318\
    80b0b4a99a642002280032170a03626f621080b0b4a99a641880a0e7fb9a64200f280232120a05746f6b2d321080a0e7fb9a6420\
    10280240104a1b08d0affe8ea06410011a103230303030303037353030303030313352240a103230303030303037353030303030\
    32301a10333030303030303035373433373232305a0e0a05746f6b2d321205746f6b2d32620c0a05746f6b2d311203626f62
    """
    static let expectedTail: String? = """
    0000000000000064010a103230303030303037343134373537363110001ad1010a10323030303030303735303030303030311210\
    333030303030303035373433373230311a11636f6d2e6578616d706c652e62617369632080c09b97e6632880e091bff9633080e0\
    91bff9633880c09b97e6634000521908041206737072696e671a0d5041595f41535f594f555f474f621032303030303030373530\
    3030303030396a290880b0cee9e66310001a0f524546554e445f50524f524154454420a08d062880a081bce76330033804700180\
    018c9c018a01035553449201085055524348415345b201095055524348415345441a780a10323030303030303735303030303031\
    311210333030303030303035373433373231311a11636f6d2e6578616d706c652e62617369632080e091bff96328808088e78c64\
    30808088e78c643880c09b97e6634000700680018c9c018a010355534492010752454e4557414cb201095055524348415345441a\
    7a0a10323030303030303735303030303031321210333030303030303035373433373231321a11636f6d2e6578616d706c652e62\
    6173696320808088e78c642880a0fe8ea06430809083bb96643880c09b97e66340005801700780018c9c018a0103555344920107\
    52454e4557414cb201095055524348415345441aa2010a1032303030303030373530303030303230121033303030303030303537\
    3433373232301a0f636f6d2e6578616d706c652e70726f20809083bb96642880b0f9e2a9643080a0fe8ea0643880c09b97e66340\
    0058016a16088080b68d97641a0b524546554e445f46554c4c300a70097a10323030303030303735303030303032308001acb802\
    8a010355534492010752454e4557414cb201095055524348415345441a780a103230303030303037353030303030313312103330\
    30303030303035373433373231331a11636f6d2e6578616d706c652e62617369632080a0fe8ea0642880c0f4b6b3643080c0f4b6\
    b3643880c09b97e6634000700880018c9c018a010355534492010752454e4557414cb201095055524348415345441a760a103230\
    30303030303735303030303033301210333030303030303035373433373233301a0f636f6d2e6578616d706c652e70726f2080c0\
    f4b6b3642880e0eadec6643080e0eadec6643880c09b97e6634000706480018c9c018a010355534492010752454e4557414cb201\
    0950555243484153454422120880f0e8df9764100f180b288090f69ab064221e0880f0e8df9764100c180b2211636f6d2e657861\
    6d706c652e6261736963220b0880e09bb29864100f180c22140880d0ce8499641013180d220750454e44494e47221c0880c081d7\
    99641019180e220f4d455441444154415f5550444154452a4e0880f0e8df9764120f636f6d2e6578616d706c652e70726f1a1163\
    6f6d2e6578616d706c652e6261736963200028043001388090f69ab064500b58acb802620355534468007a074d4f4e54484c5932\
    120a05616c69636510a0df9b97e663200228003a1f0a03626f621080b0b4a99a64180f220f6170704163636f756e74546f6b656e\
    3a210a05746f6b2d321080a0e7fb9a641810220f6170704163636f756e74546f6b656e40644a1b08d0cff4b6b36410011a103230\
    303030303037353030303030333052240a10323030303030303735303030303033301a1033303030303030303537343337323330\
    5a0e0a05746f6b2d321205746f6b2d32620c0a05746f6b2d311203626f62
    """
}
