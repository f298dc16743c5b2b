import Foundation
import LedgerAppStore
import LedgerCore
import LedgerTestSupport
import LedgerErrors
import Testing

// MARK: - Fuzz-style robustness

@Suite("Robustness")
struct RobustnessTests {
    typealias F = AppleFixtures

    /// Valid documents of every shape, as JSON trees (to mutate before serialising) or raw bytes.
    static func corpus() -> [[UInt8]] {
        let t1 = F.v1Transaction()
        let t2 = F.v1Transaction(transactionId: "1000000000000002", purchaseDate: F.epoch + 30 * F.day)
        return [
            F.receiptIOS7(inApp: [t1], latest: [t1, t2], pending: [F.v1PendingRenewal()]),
            F.receiptIOS6(status: 21006, receipt: F.v1Transaction(style: .ios6), latestExpired: F.v1Transaction(style: .ios6)),
            F.v1Notification(type: "DID_RENEW", latest: [t1, t2]),
            F.v1LegacyNotification(type: "CANCEL", latest: F.v1Transaction(style: .formattedOnly)),
            F.v2Notification(type: "SUBSCRIBED", subtype: "INITIAL_BUY"),
            F.v2Notification(type: "RENEWAL_EXTENSION", subtype: "SUMMARY"),
            Array(F.signedTransaction().utf8),
            F.json(["signedTransactionInfo": F.signedTransaction(), "signedRenewalInfo": F.signedRenewal()]),
            F.envelope(type: "transaction", appUserId: "u1", receivedAt: F.epoch, jws: F.signedTransaction()),
            F.envelope(type: "receipt", appUserId: "u1", payload: F.receiptIOS7(inApp: [t1])),
            F.binding(appUserId: "u1", originalTransactionId: "1"),
            F.json(F.v2Transaction(appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138")),
            F.json(F.v2Renewal()),
            F.json(F.v2NotificationPayload(type: "DID_RENEW", subtype: nil)),
            F.receiptStatus(21007),
        ]
    }

    /// A value of another JSON type than `value`.
    static func swapped(_ value: Any, _ rng: inout SplitMix64) -> Any {
        let choices: [Any] = [
            "x", "", "-1", "1e400", "true", 12, -7, 1.5, true, NSNull(), [Any](), [String: Any](), ["a": [1]],
            String(repeating: "9", count: 40), "2018-13-45 99:99:99 Etc/GMT", "Sandbox", "PROD", "Staging",
        ]
        var pick = choices[Int.random(in: 0..<choices.count, using: &rng)]
        if type(of: pick) == type(of: value) { pick = NSNull() }
        return pick
    }

    /// Replaces one randomly chosen value somewhere in the tree.
    static func mutateTree(_ value: Any, _ rng: inout SplitMix64, depth: Int = 0) -> Any {
        if var object = value as? [String: Any], !object.isEmpty {
            let key = object.keys.sorted()[Int.random(in: 0..<object.count, using: &rng)]
            let descend = Bool.random(using: &rng) && depth < 6
            if Int.random(in: 0..<10, using: &rng) == 0 {
                object[key] = nil
            } else {
                object[key] = descend ? mutateTree(object[key]!, &rng, depth: depth + 1) : swapped(object[key]!, &rng)
            }
            return object
        }
        if var array = value as? [Any], !array.isEmpty {
            let i = Int.random(in: 0..<array.count, using: &rng)
            array[i] = Bool.random(using: &rng) ? mutateTree(array[i], &rng, depth: depth + 1) : swapped(array[i], &rng)
            return array
        }
        return swapped(value, &rng)
    }

    static func mutate(_ base: [UInt8], _ rng: inout SplitMix64) -> [UInt8] {
        var bytes = base
        switch Int.random(in: 0..<10, using: &rng) {
        case 0:  // truncated
            bytes = Array(bytes.prefix(Int.random(in: 0..<max(1, bytes.count), using: &rng)))
        case 1:  // bit flips
            for _ in 0..<Int.random(in: 1...8, using: &rng) where !bytes.isEmpty {
                bytes[Int.random(in: 0..<bytes.count, using: &rng)] ^= UInt8(1) << UInt8.random(in: 0...7, using: &rng)
            }
        case 2:  // structural garbage inserted
            let junk = Array(#"{}[]",:0-e."\\u"#.utf8)
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                bytes.insert(junk.randomElement(using: &rng)!, at: Int.random(in: 0...bytes.count, using: &rng))
            }
        case 3:  // a range deleted or duplicated
            guard bytes.count > 2 else { break }
            let a = Int.random(in: 0..<bytes.count, using: &rng)
            let b = Int.random(in: a...min(bytes.count, a + 200), using: &rng)
            if Bool.random(using: &rng) {
                bytes.removeSubrange(a..<b)
            } else {
                bytes.insert(contentsOf: bytes[a..<b], at: b)
            }
        case 4, 5:  // type-swapped (serialised JSON, or re-signed JWS payloads so mapping sees the damage)
            if let tree = try? JSONSerialization.jsonObject(with: Data(bytes)) {
                bytes = F.json(mutateTree(tree, &rng))
            } else if let jws = String(bytes: bytes, encoding: .utf8), jws.split(separator: ".").count == 3,
                let payload = Data(base64URLText: String(jws.split(separator: ".")[1])),
                let tree = try? JSONSerialization.jsonObject(with: payload)
            {
                bytes = Array(TestPKI.shared.sign(F.json(mutateTree(tree, &rng))).utf8)
            }
        case 6:  // deeply nested
            let n = [63, 64, 65, 100, 5_000, 100_000].randomElement(using: &rng)!
            let open = Bool.random(using: &rng) ? Array("[".utf8) : Array(#"{"a":"#.utf8)
            bytes = [UInt8]((0..<n).flatMap { _ in open }) + base
        case 7:  // huge (beyond the fuzz decoder's 256 KiB limit) or merely big
            let pad = Bool.random(using: &rng) ? 300_000 : 100_000
            if let tree = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] {
                var t = tree
                t["padding"] = String(repeating: "A", count: pad)
                bytes = F.json(t)
            } else {
                bytes += [UInt8](repeating: 0x41, count: pad)
            }
        case 8:  // spliced with another document
            let other = corpusCache[Int.random(in: 0..<corpusCache.count, using: &rng)]
            bytes = Array(bytes.prefix(bytes.count / 2)) + Array(other.suffix(other.count / 2))
        default:  // random bytes
            bytes = (0..<Int.random(in: 0..<64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        }
        return bytes
    }

    static let corpusCache = corpus()

    @Test("Thousands of mutated documents: each decodes or is refused with a code", .timeLimit(.minutes(2)))
    func fuzz() throws {
        let trusting = InputDecoder(
            configuration: AppStoreConfiguration(
                bundleId: F.bundleId, trustedRootsDER: [TestPKI.shared.rootDER], maxInputBytes: 256 << 10))
        let lenient = InputDecoder(configuration: AppStoreConfiguration(maxInputBytes: 256 << 10))
        let corpus = Self.corpusCache
        var rng = SplitMix64(seed: 0x5EED_1ED6_E500_0001)
        var decoded = 0
        var codes = [String: Int]()
        for iteration in 0..<4_000 {
            let base = corpus[iteration % corpus.count]
            let mutated = Self.mutate(base, &rng)
            for decoder in [trusting, lenient] {
                do {
                    let input = try decoder.decode(mutated, receivedAt: receivedAt)
                    #expect(input.raw == mutated)
                    decoded += 1
                } catch {
                    #expect(!error.code.rawValue.isEmpty, "iteration \(iteration)")
                    #expect(!error.message.isEmpty, "iteration \(iteration)")
                    codes[error.code.rawValue, default: 0] += 1
                }
            }
        }
        // Both outcomes happen, and the refusals are varied.
        #expect(decoded > 100)
        for code in ["invalid_json", "too_deep", "too_large", "wrong_type", "signature_invalid"] {
            #expect(codes[code, default: 0] > 0, "no \(code) among \(codes)")
        }
    }
}

extension Data {
    init?(base64URLText text: String) {
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        self.init(base64Encoded: s)
    }
}
