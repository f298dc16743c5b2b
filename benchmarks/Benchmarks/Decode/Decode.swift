import Benchmark
import Foundation
import LedgerAppStore
import LedgerCore
import TestFixtures

// MARK: - Inputs (built once, before any measurement)

typealias F = AppleFixtures

let receivedAt: UnixMillis = F.epoch + 10 * F.minute
/// Distinct inputs per corpus: every measured decode sees another document (no per-document caching can help).
let corpusSize = 512

/// A decoder trusting the test PKI, as the server holds one (shared by every request task). The verified-JWS cache
/// is OFF unless asked for: the corpora repeat every `corpusSize` inputs, so with it on every JWS would be a hit.
func trustingConfiguration(verifiedJWSCache: Int = 0) -> AppStoreConfiguration {
    AppStoreConfiguration(
        bundleId: F.bundleId, trustedRootsDER: [TestPKI.shared.rootDER], verifiedJWSCacheCapacity: verifiedJWSCache)
}

/// V1 notifications in the `unified_receipt` shape with 3 transactions in `latest_receipt_info` and one pending
/// renewal (about 3.5 KB each, as Apple sends a DID_RENEW of a subscription renewed a few times).
let v1Corpus: [[UInt8]] = (0..<corpusSize).map { i in
    let otid = String(1_000_000_000_000_000 + i)
    let latest = (0..<3).map { k in
        F.v1Transaction(
            transactionId: String(1_000_000_000_100_000 + i * 10 + k), originalTransactionId: otid,
            purchaseDate: F.epoch + Int64(k) * 30 * F.day, webOrderLineItemId: String(1_000_000_000_200_000 + i * 10 + k))
    }
    return F.v1Notification(type: "DID_RENEW", latest: latest)
}

/// verifyReceipt responses (iOS 7 style): 3 `in_app`, the same 3 in `latest_receipt_info`, one pending renewal.
let receiptCorpus: [[UInt8]] = (0..<corpusSize).map { i in
    let otid = String(1_000_000_000_000_000 + i)
    let transactions = (0..<3).map { k in
        F.v1Transaction(
            transactionId: String(1_000_000_000_100_000 + i * 10 + k), originalTransactionId: otid,
            purchaseDate: F.epoch + Int64(k) * 30 * F.day, webOrderLineItemId: String(1_000_000_000_200_000 + i * 10 + k))
    }
    return F.receiptIOS7(
        inApp: transactions, latest: transactions,
        pending: [F.v1PendingRenewal(originalTransactionId: otid, productId: F.monthly)])
}

/// Signed V2 notifications `{"signedPayload": JWS}`, DID_RENEW with nested signed transaction and renewal info:
/// 3 JWS per notification, all signed by the shared test PKI (one chain).
let v2Corpus: [[UInt8]] = (0..<corpusSize).map { i in
    let tid = String(2_000_000_000_100_000 + i)
    let otid = String(2_000_000_000_000_000 + i)
    return F.v2Notification(
        type: "DID_RENEW", subtype: nil, notificationUUID: "9d3a5f0e-1c2b-4e6f-8a7b-\(String(100_000_000_000 + i))",
        transaction: F.v2Transaction(transactionId: tid, originalTransactionId: otid),
        renewal: F.v2Renewal(originalTransactionId: otid))
}

/// Bare signed transactions (StoreKit 2 `jwsRepresentation`): one JWS each.
let signedTransactionCorpus: [[UInt8]] = (0..<corpusSize).map { i in
    Array(
        F.signedTransaction(
            F.v2Transaction(
                transactionId: String(2_000_000_000_100_000 + i), originalTransactionId: String(2_000_000_000_000_000 + i))
        ).utf8)
}

func checked(_ decoded: DecodedInput, facts: Int) {
    precondition(decoded.facts.count == facts, "unexpected fact count \(decoded.facts.count)")
}

func checkedVerified(_ decoded: DecodedInput, facts: Int) {
    checked(decoded, facts: facts)
    precondition(decoded.metadata.signature == .verified, "not verified")
}

/// Decodes `count` inputs of `corpus` (starting at `first`) split over 2 threads: a second thread takes the second
/// half while the calling thread decodes the first.
func decodeOnTwoThreads(
    _ corpus: [[UInt8]], count: Int, first: Int, decoder: InputDecoder, check: @Sendable @escaping (DecodedInput) -> Void
) {
    let half = (count + 1) / 2
    @Sendable func run(_ lower: Int, _ upper: Int) {
        for i in lower..<upper {
            check(try! decoder.decode(corpus[(first + i) % corpus.count], receivedAt: receivedAt))
        }
    }
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        run(half, count)
        done.signal()
    }
    thread.start()
    run(0, half)
    done.wait()
}

// MARK: - Benchmarks

// Every benchmark decodes 1000 inputs per sample (scaling factor kilo): the figures are per input.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration.maxDuration = .seconds(3)
    Benchmark.defaultConfiguration.maxIterations = 10_000
    Benchmark.defaultConfiguration.metrics = [.wallClock, .throughput, .cpuTotal]
    Benchmark.defaultConfiguration.scalingFactor = .kilo

    let decoder = InputDecoder(configuration: trustingConfiguration())
    // Warm the chain cache: every V2 corpus is signed by the one test chain.
    _ = try! decoder.decode(v2Corpus[0], receivedAt: receivedAt)
    nonisolated(unsafe) var next = 0

    // V1 notification: 1 notification + 3 transactions + 1 renewal info.
    Benchmark("V1 notification decoded") { benchmark in
        for _ in benchmark.scaledIterations {
            next &+= 1
            checked(try decoder.decode(v1Corpus[next % corpusSize], receivedAt: receivedAt), facts: 5)
        }
    }

    Benchmark("V1 notification decoded, 2 threads") { benchmark in
        decodeOnTwoThreads(
            v1Corpus, count: benchmark.scaledIterations.count, first: next, decoder: decoder,
            check: { checked($0, facts: 5) })
        next &+= benchmark.scaledIterations.count
    }

    // verifyReceipt response: 3 transactions (deduplicated across in_app / latest_receipt_info) + 1 renewal info.
    Benchmark("verifyReceipt response decoded") { benchmark in
        for _ in benchmark.scaledIterations {
            next &+= 1
            checked(try decoder.decode(receiptCorpus[next % corpusSize], receivedAt: receivedAt), facts: 4)
        }
    }

    // V2 notification, 3 JWS verified (ES256 + chain), chain cache warm: notification + transaction + renewal info.
    Benchmark("V2 notification verified, cached chain") { benchmark in
        for _ in benchmark.scaledIterations {
            next &+= 1
            checkedVerified(try decoder.decode(v2Corpus[next % corpusSize], receivedAt: receivedAt), facts: 3)
        }
    }

    Benchmark("V2 notification verified, cached chain, 2 threads") { benchmark in
        decodeOnTwoThreads(
            v2Corpus, count: benchmark.scaledIterations.count, first: next, decoder: decoder,
            check: { checkedVerified($0, facts: 3) })
        next &+= benchmark.scaledIterations.count
    }

    // Uncached: a fresh InputDecoder (empty chain cache; its init parses the trusted root) for every notification,
    // so the chain is validated (3 certificates parsed, 2 chain signatures + the root checked) once per notification
    // and its 2 nested JWS hit that fresh cache. Scaling factor 1: figures per notification.
    Benchmark(
        "V2 notification verified, uncached chain (fresh decoder each)",
        configuration: .init(scalingFactor: .one, maxIterations: 2_000)
    ) { benchmark in
        for _ in benchmark.scaledIterations {
            next &+= 1
            let fresh = InputDecoder(configuration: trustingConfiguration())
            checkedVerified(try fresh.decode(v2Corpus[next % corpusSize], receivedAt: receivedAt), facts: 3)
        }
    }

    // Apple's retries: the same notifications again, with the verified-JWS cache on (default capacity 4096 > the
    // 512 documents), so after the first pass every JWS skips its ECDSA verification (dates are still checked).
    let retrying = InputDecoder(configuration: trustingConfiguration(verifiedJWSCache: 4096))
    for body in v2Corpus { _ = try! retrying.decode(body, receivedAt: receivedAt) }
    Benchmark("V2 notification verified, cached chain, retried (verified-JWS cache hits)") { benchmark in
        for _ in benchmark.scaledIterations {
            next &+= 1
            checkedVerified(try retrying.decode(v2Corpus[next % corpusSize], receivedAt: receivedAt), facts: 3)
        }
    }

    // A bare StoreKit 2 signed transaction (1 JWS), chain cache warm.
    Benchmark("Signed transaction verified, cached chain") { benchmark in
        for _ in benchmark.scaledIterations {
            next &+= 1
            checkedVerified(
                try decoder.decode(signedTransactionCorpus[next % corpusSize], receivedAt: receivedAt), facts: 1)
        }
    }
}
