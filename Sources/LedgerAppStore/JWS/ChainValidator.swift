import Dispatch
import Synchronization
@_spi(DisableValidityCheck) import X509

// MARK: - ChainValidator

/// Builds and checks a JWS's certificate chain with `X509.Verifier`: `AppleChainPolicy` for Apple's markers, then
/// `RFC5280Policy` for the rest, from the leaf through the `x5c` certificates to one of the configured roots.
///
/// RFC 5280's expiry check is turned off (swift-certificates' `DisableValidityCheck` SPI) because validity is judged
/// at each payload's `signedDate`, not at the moment of this check, and because one verdict serves every payload the
/// chain signs (`JWSVerifier` caches it): `VerifiedChain.checkValidity(at:field:)` does that part per payload.
///
/// `validate` is synchronous, over swift-certificates' async `Verifier.validate`: `InputDecoder.decode` is synchronous
/// and is called from plain threads (the CLI, the tests) and from tasks (the server) alike, and making it async for a
/// step that runs once per chain, before the chain cache answers, would make every caller async; swift-certificates
/// offers no synchronous `validate`. So the validation runs as a task whose executor is a serial queue of its own, and
/// the caller waits for it on a semaphore. A caller that is a task on Swift's cooperative pool may block there safely
/// only because the task it waits for never needs that pool: with a pool as wide as the machine has cores, callers
/// waiting for tasks queued behind them could otherwise exhaust it and deadlock. The validation never suspends (the
/// roots are an in-memory store and both policies are synchronous), so the wait is as long as the checks themselves,
/// as when they ran inline.
struct ChainValidator: Sendable {
    let roots: CertificateStore

    init(roots: [Certificate]) {
        self.roots = CertificateStore(roots)
    }

    /// The chain from `leaf` to a configured root through `intermediates` that meets both policies, or why none does.
    func validate(leaf: Certificate, intermediates: [Certificate]) -> CertificateValidationResult {
        let outcome = Outcome()
        let roots = self.roots
        Task(executorPreference: Self.executor) {
            var verifier = Verifier(rootCertificates: roots) {
                AppleChainPolicy()
                RFC5280Policy.withValidityCheckDisabled()
            }
            outcome.finish(await verifier.validate(leaf: leaf, intermediates: CertificateStore(intermediates)))
        }
        return outcome.wait()
    }

    // MARK: - Waiting for the task

    /// One serial queue for every validation: chains are validated once each, so they rarely queue behind another.
    private static let executor = QueueExecutor()

    /// Runs tasks' jobs on a private serial queue, away from the cooperative pool.
    private final class QueueExecutor: TaskExecutor {
        private let queue = DispatchQueue(label: "StoreLedger.JWS.chain-validation")

        func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
        }
    }

    /// The result, handed from the task to the waiting caller.
    private final class Outcome: Sendable {
        private let result = Mutex<CertificateValidationResult?>(nil)
        private let done = DispatchSemaphore(value: 0)

        func finish(_ value: CertificateValidationResult) {
            result.withLock { $0 = value }
            done.signal()
        }

        func wait() -> CertificateValidationResult {
            done.wait()
            return result.withLock { $0! }
        }
    }
}
