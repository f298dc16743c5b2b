import Foundation
import Crypto
import LedgerAppStore
import LedgerCore
import LedgerTestSupport

// MARK: - Helpers shared by the LedgerAppStore tests

/// When every test input "arrives".
let receivedAt: UnixMillis = AppleFixtures.epoch + 10 * AppleFixtures.minute

/// A decoder trusting the shared test PKI and expecting the fixtures' bundle id.
func trustingDecoder(
    bundleId: String? = AppleFixtures.bundleId, environments: Set<AppStoreEnvironment>? = nil,
    roots: [[UInt8]] = [TestPKI.shared.rootDER], requireSignatures: Bool = false
) -> InputDecoder {
    InputDecoder(
        configuration: AppStoreConfiguration(
            bundleId: bundleId, trustedRootsDER: roots, requireSignatures: requireSignatures,
            acceptedEnvironments: environments))
}

/// Decodes with the default trusting decoder and the shared `receivedAt`.
func decode(
    _ raw: [UInt8], with decoder: InputDecoder = trustingDecoder(), type: InputType? = nil, appUserId: AppUserID? = nil
) throws -> DecodedInput {
    try decoder.decode(raw, forcedType: type, appUserId: appUserId, receivedAt: receivedAt)
}

/// The refusal `body` causes, or nil when it decodes.
func refusal(_ raw: [UInt8], with decoder: InputDecoder = trustingDecoder(), type: InputType? = nil) -> InputError? {
    do {
        _ = try decoder.decode(raw, forcedType: type, receivedAt: receivedAt)
        return nil
    } catch {
        return error
    }
}

extension DecodedInput {
    var transactions: [TransactionFact] {
        facts.compactMap { if case .transaction(let t) = $0 { t } else { nil } }
    }
    var renewals: [RenewalInfoFact] {
        facts.compactMap { if case .renewal(let r) = $0 { r } else { nil } }
    }
    var notifications: [NotificationFact] {
        facts.compactMap { if case .notification(let n) = $0 { n } else { nil } }
    }
    var bindings: [BindingClaim] {
        facts.compactMap { if case .binding(let b) = $0 { b } else { nil } }
    }
}

func sha256Hex(_ bytes: [UInt8]) -> String {
    SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
}
