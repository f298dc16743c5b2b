import Foundation
import LedgerAppStore
import LedgerCore
import LedgerTestSupport
import Testing

// MARK: - Throughput (measured, printed; the hard targets are for release builds, see benchmarks/)

@Suite("Throughput")
struct ThroughputTests {
    typealias F = AppleFixtures

    static func rate(_ count: Int, _ body: () throws -> Void) rethrows -> Double {
        let start = ContinuousClock.now
        try body()
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Double(count) / seconds
    }

    @Test("V1 notifications decoded and V2 notifications verified per second (cached vs uncached chain)")
    func throughput() throws {
        let decoder = InputDecoder(
            configuration: AppStoreConfiguration(bundleId: F.bundleId, trustedRootsDER: [TestPKI.shared.rootDER]))
        let v1 = (0..<200).map { i in
            F.v1Notification(type: "DID_RENEW", latest: [F.v1Transaction(transactionId: "\(1_000_000 + i)")])
        }
        let v2 = (0..<200).map { i in F.v2Notification(type: "DID_RENEW", subtype: nil, notificationUUID: "u-\(i)") }
        let v1Rate = try Self.rate(2_000) {
            for i in 0..<2_000 { _ = try decoder.decode(v1[i % v1.count], receivedAt: receivedAt) }
        }
        let v2Rate = try Self.rate(400) {
            for i in 0..<400 { _ = try decoder.decode(v2[i % v2.count], receivedAt: receivedAt) }
        }
        let uncachedRate = try Self.rate(40) {
            for i in 0..<40 {
                let fresh = InputDecoder(configuration: decoder.configuration)
                _ = try fresh.decode(v2[i], receivedAt: receivedAt)
            }
        }
        print("LedgerAppStore throughput (one thread): V1 \(Int(v1Rate))/s, V2 verified \(Int(v2Rate))/s cached, \(Int(uncachedRate))/s uncached")
        #expect(decoder.cachedChainCount == 1)
        #expect(v2Rate > uncachedRate)
    }
}
