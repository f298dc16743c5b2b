import CFuzzDriver
import Foundation
import LedgerAppStore
import LedgerCodec
import LedgerCore
import LedgerErrors

// MARK: - What every decoder target does with an input

/// The checks shared by the decoder targets. An input either is refused with a code (fine) or decodes; what decodes
/// then goes through everything the ledger does with accepted facts (canonical encoding and back, the fold, the
/// timeline and customer views at many instants, the stored timeline's encoding and back), because an accepted value
/// that traps later (an `expiresDate` of Int64.min) is worse than one that traps at the door.
public enum Fuzz {
    /// When every fuzzed input "arrives" (a fixed instant: runs are reproducible).
    public static let receivedAt: UnixMillis = 1_700_000_000_000

    /// The default configuration: no roots, so JWS payloads are decoded unverified (the fuzzer cannot sign).
    public static let lenient = InputDecoder(configuration: AppStoreConfiguration(maxInputBytes: 1 << 20))

    /// Trusts the test root the seeds were signed with (`FUZZ_TEST_ROOT`, written with the seeds) and the fixtures'
    /// bundle id, and requires signatures: chains and signatures are checked for real.
    public static let trusting: InputDecoder = {
        let root = ProcessInfo.processInfo.environment["FUZZ_TEST_ROOT"].flatMap { FileManager.default.contents(atPath: $0) }
        return InputDecoder(
            configuration: AppStoreConfiguration(
                bundleId: "com.example.app", trustedRootsDER: root.map { [[UInt8]($0)] } ?? [], requireSignatures: true,
                maxInputBytes: 1 << 20))
    }()

    /// Decodes `bytes` with both decoders (as `type`, or detected when nil) and exercises what is accepted.
    public static func decode(_ bytes: [UInt8], as type: InputType?) {
        for decoder in [lenient, trusting] {
            let input: DecodedInput
            do {
                input = try decoder.decode(bytes, forcedType: type, appUserId: "fuzz-user", receivedAt: receivedAt)
            } catch {
                precondition(!error.code.rawValue.isEmpty && !error.message.isEmpty, "a refusal without a code or message")
                continue
            }
            precondition(input.raw == bytes, "the decoded input does not keep its raw bytes")
            exercise(input)
        }
    }

    /// Everything the store and the views do with accepted facts, without the store.
    public static func exercise(_ input: DecodedInput) {
        var events: [LedgerEvent] = []
        var instants: Set<UnixMillis> = [
            FactBounds.earliestInstant, FactBounds.instantLimit - 1, receivedAt, input.metadata.observedAt,
        ]
        for (index, fact) in input.facts.enumerated() {
            // The canonical bytes decode to the same fact (idempotency hashes them; replay reads them).
            let encoded = LedgerEvent.encode(fact: fact, metadata: input.metadata)
            let event = encoded.withUnsafeBytes { bytes in
                try? LedgerEvent(seq: UInt64(index + 1), decoding: bytes)
            }
            guard let event else { preconditionFailure("an accepted fact's event does not decode") }
            precondition(event.fact == fact, "an accepted fact changes through its canonical encoding")
            events.append(event)
            for instant in Self.instants(of: fact) {
                precondition(FactBounds.contains(instant), "an accepted fact carries \(instant), outside the window")
                instants.formUnion([instant - 1, instant, instant + 1])
            }
        }
        var byKey: [String: [LedgerEvent]] = [:]
        for event in events {
            guard let otid = event.fact.originalTransactionId else { continue }
            byKey[event.fact.environment.rawValue + "|" + otid.rawValue, default: []].append(event)
        }
        let rules = FoldRules(
            catalog: Catalog(products: [
                "com.example.premium.monthly": ProductConfiguration(
                    type: .autoRenewable, entitlements: ["premium"], group: "g1"),
                "com.example.pass.month": ProductConfiguration(
                    type: .nonRenewing, entitlements: ["premium"], duration: CalendarDuration(months: 1)),
                "com.example.gems60": ProductConfiguration(type: .consumable, credits: ["gems": 60]),
            ]))
        var timelines: [Timeline] = []
        for (_, group) in byKey {
            // Arrival order must not matter: fold forwards and backwards.
            let timeline = Timeline.fold(group, rules: rules, ties: .canonical)
            let reversed = Timeline.fold(group.reversed(), rules: rules, ties: .canonical)
            precondition(
                timeline.withoutProvenance().encoded() == reversed.withoutProvenance().encoded(),
                "the fold depends on arrival order")
            let stored = timeline.encoded()
            guard let decoded = try? Timeline(decoding: stored) else {
                preconditionFailure("a folded timeline's stored bytes do not decode")
            }
            precondition(decoded.encoded() == stored, "a stored timeline changes through decoding")
            for at in instants { _ = timeline.view(at: at, asOf: nil, rules: rules) }
            _ = timeline.changes(rules: rules)
            timelines.append(timeline)
        }
        var users: Set<AppUserID> = ["fuzz-user"]
        for case .binding(let claim) in input.facts { users.insert(claim.appUserId) }
        for user in users {
            for environment in Set(timelines.map(\.environment)) {
                for at in instants {
                    _ = Entitlements.customer(
                        user: user, environment: environment, timelines: timelines, at: at, asOf: nil, rules: rules)
                }
            }
        }
    }

    /// Every instant a fact carries.
    static func instants(of fact: Fact) -> [UnixMillis] {
        switch fact {
        case .transaction(let t):
            [t.purchaseDate, t.originalPurchaseDate, t.expiresDate, t.signedDate, t.revocationDate].compactMap { $0 }
        case .renewal(let r):
            [r.gracePeriodExpiresDate, r.renewalDate, r.signedDate, r.recentSubscriptionStartDate].compactMap { $0 }
        case .notification(let n): [n.signedDate].compactMap { $0 }
        case .binding(let b): [b.claimedAt]
        case .reconciliation(let c): [c.checkedAt]
        case .rules(let r): [r.appliedAt]
        case .grant(let g): [g.from, g.until].compactMap { $0 }
        case .erasure(let e): [e.requestedAt]
        }
    }
}

// MARK: - Entry point

/// Runs libFuzzer's loop over `body` with the process's command line: what each target's `<name>_main` does.
public func runFuzzer(
    _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>,
    _ body: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt {
    var count = argc
    var arguments: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = argv
    return LLVMFuzzerRunDriver(&count, &arguments, body)
}

/// Stops the run with `message` unless `condition` holds. Unlike `precondition`, which says nothing in an optimised
/// build, the message reaches the log beside the artifact.
@inline(__always)
public func finding(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}
