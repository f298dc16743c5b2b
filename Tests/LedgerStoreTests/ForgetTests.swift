import Foundation
import LedgerAPI
import LedgerCore
import LedgerErrors
import LedgerStore
import LedgerTestSupport
import Testing

/// Forgetting a person (docs/privacy.md): the log names people by pseudonyms, the values behind them can be erased,
/// and nothing else changes.
@Suite(.blocking) struct ForgetTests {
    static let day: Int64 = 86_400_000
    static let start: Int64 = 1_740_819_600_000  // 2025-03-01T09:00:00Z
    static let monthly = "com.example.premium.monthly"
    static let rules = FoldRules(
        catalog: Catalog(products: [monthly: ProductConfiguration(type: .autoRenewable, entitlements: ["premium"])]),
        bindingPolicy: .transfer)

    static func user(_ n: Int) -> String { "user-\(n)@example.com" }
    static func token(_ n: Int) -> String { "5a1e0000-0000-4000-8000-\(String(format: "%012d", n))" }

    static func pseudonymized() throws -> TemporaryLedger {
        var options = Ledger.Options()
        options.pseudonyms = true
        return try TemporaryLedger(options: options, rules: rules)
    }

    /// One input, the people whose ids it states (user numbers), whose tokens it carries, and whose tokens it maps
    /// to them (a token with its user named).
    struct Step {
        var input: LedgerInput
        var names: Set<Int>
        var tokens: Set<Int> = []
        var mapped: Set<Int> = []

        func concerns(_ n: Int) -> Bool { names.contains(n) || tokens.contains(n) }
    }

    static func input(_ facts: [Fact], at: Int64, envelope: Int? = nil, names: Set<Int>, index: Int) -> Step {
        Step(
            input: .facts(
                facts,
                metadata: FactMetadata(
                    source: .decodedJSON, receivedAt: at, appUserId: envelope.map { AppUserID(user($0)) }),
                raw: Array("input \(index) received at \(at)\(envelope.map { " for \(user($0))" } ?? "")".utf8)),
            names: names.union(envelope.map { [$0] } ?? []))
    }

    /// A random history of five subscriptions among six people: purchases and renewals that carry the buyer's
    /// `appAccountToken` (with the claim the decoder states for it), an envelope's user now and then, restores by
    /// others (claims), refunds and operator grants; delivered in a random order.
    static func history(_ random: inout SplitMix64) -> [Step] {
        var steps: [Step] = []
        for s in 0..<5 {
            let otid = "20000000000000\(s)"
            let buyer = random.below(6)
            let first = start + Int64(random.below(20)) * day
            for month in 0..<(1 + random.below(4)) {
                let at = first + Int64(month) * 30 * day
                let tid = "\(otid)\(month)"
                var t = TransactionFact(
                    transactionId: TransactionID(tid), originalTransactionId: OriginalTransactionID(otid),
                    productId: monthly, purchaseDate: at, environment: .production)
                t.expiresDate = at + 30 * day
                t.signedDate = at
                t.webOrderLineItemId = "w" + tid
                t.price = 4_990
                t.currency = "EUR"
                var facts: [Fact] = [.transaction(t)]
                var tokens: Set<Int> = []
                let envelope = random.chance(40) ? buyer : nil
                if random.chance(70) {
                    t.appAccountToken = token(buyer)
                    facts = [.transaction(t)]
                    facts.append(
                        .binding(
                            BindingClaim(
                                appUserId: AppUserID(envelope.map(user) ?? token(buyer)),
                                originalTransactionId: OriginalTransactionID(otid), claimedAt: at, cause: .appAccountToken,
                                appAccountToken: token(buyer))))
                    tokens.insert(buyer)
                }
                var step = input(facts, at: at, envelope: envelope, names: [], index: steps.count)
                step.tokens = tokens
                if envelope != nil { step.mapped = tokens }
                steps.append(step)
            }
            // The buyer's own claim, and restores by others.
            for _ in 0..<(1 + random.below(3)) {
                let who = random.chance(50) ? buyer : random.below(6)
                let at = first + Int64(random.below(90)) * day
                let claim = BindingClaim(
                    appUserId: AppUserID(user(who)), originalTransactionId: OriginalTransactionID(otid), claimedAt: at)
                steps.append(input([.binding(claim)], at: at, names: [who], index: steps.count))
            }
            if random.chance(30) {
                var refund = TransactionFact(
                    transactionId: TransactionID("\(otid)0"), originalTransactionId: OriginalTransactionID(otid),
                    productId: monthly, purchaseDate: first, environment: .production)
                refund.expiresDate = first + 30 * day
                refund.revocationDate = first + 5 * day
                refund.revocationReason = 0
                refund.signedDate = first + 5 * day
                refund.webOrderLineItemId = "w\(otid)0"
                steps.append(input([.transaction(refund)], at: first + 5 * day, names: [], index: steps.count))
            }
        }
        for _ in 0..<random.below(3) {
            let who = random.below(6)
            let at = start + Int64(random.below(60)) * day
            let grant = OperatorGrant(
                action: .grant, appUserId: AppUserID(user(who)), grantId: "g\(steps.count)", entitlement: "premium",
                from: at, until: at + 14 * day, reason: "support")
            steps.append(input([.grant(grant)], at: at, names: [who], index: steps.count))
        }
        random.shuffle(&steps)
        return steps
    }

    /// Every answer about everyone but `excluded`, as JSON text: each customer at several instants, each
    /// subscription's timeline, and the revenue and the metrics of the whole ledger.
    static func answers(_ ledger: Ledger, excluding excluded: Int?) throws -> [String: String] {
        var out: [String: String] = [:]
        let instants = (0..<8).map { start + Int64($0) * 20 * day }
        for n in 0..<6 where n != excluded {
            for at in instants {
                let view = try ledger.customer(AppUserID(user(n)), at: at)
                out["customer \(n) at \(at)"] = String(decoding: JSONWriter.bytes(of: view, sortedKeys: true), as: UTF8.self)
            }
        }
        for s in 0..<5 {
            for at in instants {
                if let view = try ledger.timeline(OriginalTransactionID("20000000000000\(s)"), at: at) {
                    out["timeline \(s) at \(at)"] = String(
                        decoding: JSONWriter.bytes(of: view, sortedKeys: true), as: UTF8.self)
                }
            }
        }
        let revenue = try ledger.revenue()
        out["revenue totals"] = "\(revenue.totals.sorted { $0.key < $1.key })"
        let boundaries = (0..<12).map { start + Int64($0) * 30 * day }
        try ledger.catchUpMetrics()
        out["metrics"] = "\(try ledger.metrics(boundaries: boundaries).buckets)"
        return out
    }

    /// `text` with each pseudonym replaced by the value it stood for.
    static func named(_ text: String, _ values: [String: String]) -> String {
        var t = text
        for (pseudonym, value) in values { t = t.replacingOccurrences(of: pseudonym, with: value) }
        return t
    }

    /// Every file of the ledger directory but the key beside it, as one byte string.
    static func bytes(of directory: String) throws -> [UInt8] {
        var all: [UInt8] = []
        for name in try FileManager.default.subpathsOfDirectory(atPath: directory) where name != "identity.key" {
            let path = (directory as NSString).appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
                continue
            }
            all += Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        }
        return all
    }

    static func contains(_ haystack: [UInt8], _ needle: String) -> Bool {
        let n = Array(needle.utf8)
        guard n.count <= haystack.count else { return false }
        return haystack.withUnsafeBufferPointer { h in
            (0...(h.count - n.count)).contains { i in h[i] == n[0] && Array(h[i..<(i + n.count)]) == n }
        }
    }

    @Test func aLedgerWithPseudonymsAnswersAsOneWithout() throws {
        var random = SplitMix64(seed: 7)
        let steps = Self.history(&random)
        let plain = try TemporaryLedger(rules: Self.rules)
        let named = try Self.pseudonymized()
        for step in steps {
            _ = try plain.ledger.appendAndWait([step.input])
            _ = try named.ledger.appendAndWait([step.input])
        }
        let expected = try Self.answers(plain.ledger, excluding: nil)
        #expect(try Self.answers(named.ledger, excluding: nil) == expected)
        // Events read back name people as they came (the log holds pseudonyms).
        let plainEvents = try plain.ledger.log.events(after: 0, limit: 1_000).map(\.event.fact)
        #expect(try named.ledger.log.events(after: 0, limit: 1_000).map(\.event.fact) == plainEvents)
        for n in 0..<6 {
            #expect(try named.ledger.grants(AppUserID(Self.user(n))) == plain.ledger.grants(AppUserID(Self.user(n))))
        }
        // Raw inputs read back as received.
        for stored in try named.ledger.log.events(after: 0, limit: 1_000) {
            let same = try #require(try plain.ledger.log.event(seq: stored.event.seq))
            #expect(try named.ledger.log.raw(of: stored) == plain.ledger.log.raw(of: same))
        }
        #expect(try named.ledger.audit.verify().fault == nil)
        #expect(try named.ledger.audit.replay(check: true).differences.isEmpty)
        // No value a person is named by is in the data file.
        let file = try Self.bytes(of: named.directory)
        for n in 0..<6 {
            #expect(!Self.contains(file, Self.user(n)), "\(Self.user(n)) is in the data file")
            #expect(!Self.contains(file, Self.token(n)), "\(Self.token(n)) is in the data file")
        }
        #expect(Self.contains(try Self.bytes(of: plain.directory), Self.user(try #require(steps.flatMap(\.names).first))))
    }

    /// Forgetting any person at any point of a random history leaves every other person's answers, every
    /// subscription's timeline and the ledger's figures as they are without the erasure: the same once each
    /// pseudonym forgotten is read as the value it stood for. After the erasure the person is not named again
    /// (a value that comes back is a new person: docs/privacy.md).
    @Test(arguments: 0..<30)
    func forgettingAnyoneAtAnyPointChangesNoOtherAnswer(seed: UInt64) throws {
        var random = SplitMix64(seed: 1_000 + seed)
        let steps = Self.history(&random)
        let cut = random.below(steps.count + 1)
        let named = Set(steps[..<cut].flatMap(\.names))
        guard let forgotten = named.sorted().randomElement(using: &random) else { return }
        let rest = steps[cut...].filter { !$0.concerns(forgotten) }
        let tokenForgotten = steps[..<cut].contains { $0.mapped.contains(forgotten) }

        // The reference takes the erasure's seq with an event that changes no answer (Apple's TEST notification),
        // so that every seq and `asOf` is the same in both.
        let reference = try Self.pseudonymized()
        for step in steps[..<cut] { _ = try reference.ledger.appendAndWait([step.input]) }
        let test = NotificationFact(notificationUUID: "a-test-notification", notificationType: "TEST")
        _ = try reference.ledger.appendAndWait([Self.input([.notification(test)], at: Self.start, names: [], index: -1).input])
        for step in rest { _ = try reference.ledger.appendAndWait([step.input]) }
        let erased = try Self.pseudonymized()
        for step in steps[..<cut] { _ = try erased.ledger.appendAndWait([step.input]) }
        let report = try erased.ledger.privacy.forget(
            AppUserID(Self.user(forgotten)), requestedBy: "ticket 42", reason: "Art. 17 request", at: Self.start)
        for step in rest { _ = try erased.ledger.appendAndWait([step.input]) }

        #expect(report.pseudonyms.first == report.pseudonym)
        #expect(report.pseudonyms.count == (tokenForgotten ? 2 : 1), "the tokens forgotten: \(report.pseudonyms)")
        var values = [report.pseudonym: Self.user(forgotten)]
        for p in report.pseudonyms.dropFirst() { values[p] = Self.token(forgotten) }
        let expected = try Self.answers(reference.ledger, excluding: forgotten)
        let found = try Self.answers(erased.ledger, excluding: forgotten)
        #expect(found.keys.sorted() == expected.keys.sorted())
        for (key, text) in expected {
            #expect(Self.named(found[key] ?? "", values) == text, "\(key) differs (cut \(cut), forgot \(forgotten))")
        }
        // Nothing of the person is told any more: no answer names them, no raw input that named them reads.
        let customer = try erased.ledger.customer(AppUserID(Self.user(forgotten)), at: Self.start + 30 * Self.day)
        #expect(customer.subscriptions.isEmpty && customer.entitlements.isEmpty && customer.bindings.isEmpty)
        for (key, text) in found { #expect(!text.contains(Self.user(forgotten)), "\(key) names the forgotten user") }
        var erasedInputs = Set<UInt64>()
        for stored in try erased.ledger.log.events(after: 0, limit: 10_000) {
            let described = "\(stored.event)"
            #expect(!described.contains(Self.user(forgotten)))
            if tokenForgotten { #expect(!described.contains(Self.token(forgotten))) }
            if case .erased = try erased.ledger.log.rawInput(of: stored.rawKey) { erasedInputs.insert(stored.rawKey) }
        }
        #expect(erasedInputs.count == steps[..<cut].filter { $0.names.contains(forgotten) || (tokenForgotten && $0.tokens.contains(forgotten)) }.count)
        // The erasure is an event of the log: who asked, when, which pseudonyms; never the value.
        let erasure = try #require(try erased.ledger.log.event(seq: report.seq))
        guard case .erasure(let e) = erasure.event.fact else {
            Issue.record("seq \(report.seq) is \(erasure.event.fact.kind), not the erasure")
            return
        }
        #expect(e.pseudonyms == report.pseudonyms && e.requestedBy == "ticket 42" && e.reason == "Art. 17 request")
        #expect(!"\(e)".contains(Self.user(forgotten)))
        // The chain verifies from genesis, and a replay makes the same projections.
        #expect(try erased.ledger.audit.verify().fault == nil)
        #expect(try erased.ledger.audit.replay(check: true).differences.isEmpty)
        // Reopened (a restart), the ledger answers the same.
        try erased.reopen()
        #expect(try Self.answers(erased.ledger, excluding: forgotten) == found)
    }

    /// Replicas append the same inputs with the same seeds (derived from the stream's messages): the same events,
    /// the same chain. Without a seed each ledger draws its own, and the pseudonyms differ.
    @Test func theSameSeedsMakeTheSameChainAndRandomOnesDoNot() throws {
        var random = SplitMix64(seed: 11)
        let steps = Self.history(&random)
        let (a, b, c) = (try Self.pseudonymized(), try Self.pseudonymized(), try Self.pseudonymized())
        for (i, step) in steps.enumerated() {
            guard case .facts(let facts, let metadata, let raw, nil) = step.input else { continue }
            let seeded = LedgerInput.facts(facts, metadata: metadata, raw: raw, identitySeed: Array("seed \(i)".utf8))
            _ = try a.ledger.appendAndWait([seeded])
            _ = try b.ledger.appendAndWait([seeded])
            _ = try c.ledger.appendAndWait([step.input])
        }
        let last = try a.ledger.lastSeq()
        let head = try #require(try a.ledger.log.event(seq: last)).chainHash
        #expect(try b.ledger.log.event(seq: last)?.chainHash == head)
        #expect(try c.ledger.log.event(seq: last)?.chainHash != head)
        #expect(try Self.answers(c.ledger, excluding: nil) == Self.answers(a.ledger, excluding: nil))
    }

    /// A forgotten person's history answers under their pseudonym; a pseudonym of someone still known names nobody
    /// when asked for directly, so it cannot stand in for their id.
    @Test func aForgottenPseudonymAnswersAndALiveOneNamesNobody() throws {
        let named = try Self.pseudonymized()
        var random = SplitMix64(seed: 5)
        let steps = Self.history(&random)
        for step in steps { _ = try named.ledger.appendAndWait([step.input]) }
        let who = try #require(steps.flatMap(\.names).first)
        let at = Self.start + 30 * Self.day
        let before = try named.ledger.customer(AppUserID(Self.user(who)), at: at)
        #expect(!before.subscriptions.isEmpty || !before.grants.isEmpty)
        let report = try named.ledger.privacy.forget(AppUserID(Self.user(who)), requestedBy: "ops", at: Self.start)
        var after = try named.ledger.customer(AppUserID(report.pseudonym), at: at)
        #expect(after.appUserId == report.pseudonym)
        after.appUserId = Self.user(who)
        after.asOf = before.asOf
        #expect(after == before, "the forgotten customer's answer under the pseudonym")
        // Someone still known: their pseudonym, as the log holds it, names nobody.
        let other = try #require(steps.flatMap(\.names).first { $0 != who })
        var pseudonyms: [String: String] = [:]
        try named.ledger.audit.forEachEvent(after: 0) { _, _, _, people in
            for (p, value) in people { if let value { pseudonyms[value] = p } }
        }
        let live = try #require(pseudonyms[Self.user(other)])
        #expect(live.hasPrefix("anon-"))
        let known = try named.ledger.customer(AppUserID(Self.user(other)), at: at)
        let asked = try named.ledger.customer(AppUserID(live), at: at)
        #expect(!known.subscriptions.isEmpty || !known.grants.isEmpty)
        #expect(asked.subscriptions.isEmpty && asked.grants.isEmpty && asked.bindings.isEmpty)
    }

    /// An erasure seals every other row again in chunks: with more people than a chunk holds, everyone still known is
    /// still found (by the index made anew) and still shown (their row opens with the new key alone).
    @Test func everyoneElseIsStillKnownAfterAnErasureOfManyChunks() throws {
        let named = try Self.pseudonymized()
        let people = 2 * 4_096 + 17
        let otids = (0..<people).map { OriginalTransactionID("\(4_000_000 + $0)") }
        var inputs: [LedgerInput] = []
        for n in 0..<people {
            var t = TransactionFact(
                transactionId: TransactionID("\(5_000_000 + n)"), originalTransactionId: otids[n], productId: Self.monthly,
                purchaseDate: Self.start, environment: .production)
            t.expiresDate = Self.start + 30 * Self.day
            t.webOrderLineItemId = "w\(n)"
            let claim = BindingClaim(appUserId: AppUserID(Self.user(n)), originalTransactionId: otids[n], claimedAt: Self.start)
            inputs.append(Self.input([.transaction(t), .binding(claim)], at: Self.start, names: [n], index: n).input)
        }
        _ = try named.ledger.appendAndWait(inputs)
        let report = try named.ledger.privacy.forget(AppUserID(Self.user(4_096)), requestedBy: "ops", at: Self.start)
        #expect(report.pseudonyms.count == 1)
        for n in [0, 1, 4_095, 4_097, 8_191, 8_192, people - 1] {
            let view = try named.ledger.customer(AppUserID(Self.user(n)), at: Self.start + Self.day)
            #expect(view.subscriptions == [otids[n].rawValue], "person \(n)")
            let timeline = try #require(try named.ledger.timeline(otids[n], at: Self.start + Self.day))
            #expect(timeline.owners.map(\.appUserId) == [Self.user(n)], "person \(n)")
        }
        #expect(try named.ledger.customer(AppUserID(Self.user(4_096)), at: Self.start + Self.day).subscriptions.isEmpty)
        // Every row opens with the new key alone (the old one is destroyed): each input's people read back.
        var known = Set<String>()
        var forgotten = 0
        try named.ledger.audit.forEachEvent(after: 0) { _, _, _, people in
            for (_, value) in people { if let value { known.insert(value) } else { forgotten += 1 } }
        }
        #expect(known.count == people - 1 && !known.contains(Self.user(4_096)))
        #expect(forgotten == 2, "her input's two events")
        #expect(try named.ledger.audit.verify().fault == nil)
    }

    @Test func aLedgerWithoutPseudonymsCannotForget() throws {
        let plain = try TemporaryLedger(rules: Self.rules)
        var random = SplitMix64(seed: 3)
        for step in Self.history(&random) { _ = try plain.ledger.appendAndWait([step.input]) }
        #expect(throws: LedgerError(code: .cannotForget, message: "")) {
            try plain.ledger.privacy.forget(AppUserID(Self.user(0)), requestedBy: "ops", at: Self.start)
        }
        let named = try Self.pseudonymized()
        #expect(throws: LedgerError(code: .notFound, message: "")) {
            try named.ledger.privacy.forget(AppUserID("nobody@example.com"), requestedBy: "ops", at: Self.start)
        }
        // The erasure is chained for good: a request that names the user is refused before anything is written.
        for step in Self.history(&random) { _ = try named.ledger.appendAndWait([step.input]) }
        let last = try named.ledger.lastSeq()
        #expect(throws: LedgerError(code: .badRequest, message: "")) {
            try named.ledger.privacy.forget(AppUserID(Self.user(1)), requestedBy: "mail from USER-1@example.com", at: Self.start)
        }
        #expect(throws: LedgerError(code: .badRequest, message: "")) {
            try named.ledger.privacy.forget(AppUserID(Self.user(1)), requestedBy: "ops", reason: Self.user(1), at: Self.start)
        }
        #expect(try named.ledger.lastSeq() == last)
    }

    /// A refused input is searched, not decoded: it may spell a person otherwise than the log does (a JSON escape, a
    /// JWS's base64url payload, the signed transaction inside a notification's). The erasure finds them there too.
    @Test func anErasureFindsAPersonInRefusalsThatSpellThemOtherwise() throws {
        let named = try Self.pseudonymized()
        var t = TransactionFact(
            transactionId: TransactionID("3000000000000001"), originalTransactionId: OriginalTransactionID("3000000000000001"),
            productId: Self.monthly, purchaseDate: Self.start, environment: .production)
        t.expiresDate = Self.start + 30 * Self.day
        t.appAccountToken = Self.token(1)
        let claim = BindingClaim(
            appUserId: AppUserID(Self.user(1)), originalTransactionId: t.originalTransactionId, claimedAt: Self.start,
            cause: .appAccountToken, appAccountToken: Self.token(1))
        _ = try named.ledger.appendAndWait([
            .facts(
                [.transaction(t), .binding(claim)],
                metadata: FactMetadata(source: .decodedJSON, receivedAt: Self.start, appUserId: AppUserID(Self.user(1))),
                raw: Array("a purchase".utf8))
        ])
        func base64URL(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        func jws(_ payload: String) -> String { base64URL(#"{"alg":"ES256"}"#) + "." + base64URL(payload) + ".c2lnbmF0dXJl" }
        let transaction = jws(#"{"transactionId":"3000000000000001","appAccountToken":"\#(Self.token(1).uppercased())"}"#)
        let refused = [
            #"{"appUserId":"user\u002d1@example.com","payload":{}}"#,
            transaction,
            #"{"signedPayload":"\#(jws(#"{"notificationType":"DID_RENEW","data":{"signedTransactionInfo":"\#(transaction)"}}"#))"}"#,
            #"{"appUserId":"user\u002d2@example.com","payload":{}}"#,
        ]
        for raw in refused {
            _ = try named.ledger.appendAndWait([
                .rejected(RejectedInput(raw: Array(raw.utf8), code: .invalidBody, message: "refused", receivedAt: Self.start))
            ])
        }
        #expect(try named.ledger.log.rejectedInputs().map(\.erased) == [false, false, false, false])
        _ = try named.ledger.privacy.forget(AppUserID(Self.user(1)), requestedBy: "ticket 12", at: Self.start + Self.day)
        #expect(try named.ledger.log.rejectedInputs().map(\.erased) == [true, true, true, false])
        #expect(try named.ledger.audit.verify().fault == nil)
    }
}
