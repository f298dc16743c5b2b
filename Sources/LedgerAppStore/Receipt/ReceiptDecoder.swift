import LedgerCore
import LedgerErrors

// MARK: - ReceiptDecoder

/// verifyReceipt responses (iOS 7 `receipt.in_app[]` + `latest_receipt_info[]` + `pending_renewal_info[]`, and iOS 6
/// `receipt` + `latest_receipt_info` / `latest_expired_receipt_info` objects) to facts.
enum ReceiptDecoder {
    struct Result {
        var facts: [Fact]
        /// `receipt.request_date_ms` when present.
        var requestDate: UnixMillis?
    }

    /// Status 0 and 21006 are accepted; 21007/21008 are refused as `wrong_environment_<status>`, every other status as
    /// `receipt_status_<status>` with Apple's meaning.
    static func decode(_ root: AppleObject) throws(InputError) -> Result {
        guard let status = try root.v1Int("status") else { throw .missingField("status") }
        guard status == 0 || status == 21006 else { throw refusal(status: status) }

        let receipt = try root.object("receipt")
        let environment: AppStoreEnvironment
        if let e = try root.environment("environment") {
            environment = e
        } else if let type = try receipt?.string("receipt_type") {
            environment = type.contains("Sandbox") ? .sandbox : (type == "Xcode" ? .xcode : .production)
        } else {
            environment = .production
        }
        var bundleId = try receipt?.string("bundle_id")
        if bundleId == nil { bundleId = try receipt?.string("bid") }
        let requestDate = try receipt?.v1Date("request_date")

        var transactions = V1Transactions()
        if let receipt {
            if receipt.has("in_app") {
                // The receipt file as the device got it: its copies speak from its creation, not from the request.
                let created = try receipt.v1Date("receipt_creation_date")
                try transactions.add(
                    try receipt.objects("in_app"), environment: environment, bundleId: bundleId, receiptCreatedAt: created)
            } else if receipt.has("transaction_id") {
                // iOS 6: the receipt is itself the transaction it was issued for.
                try transactions.add([receipt], environment: environment, bundleId: bundleId)
            }
        }
        try transactions.add(try V1Mapping.latestTransactions(root), environment: environment, bundleId: bundleId)

        var facts = transactions.list.map(Fact.transaction)
        for o in try root.objects("pending_renewal_info") {
            facts.append(.renewal(try V1Mapping.renewal(o, environment: environment)))
        }
        return Result(facts: facts, requestDate: requestDate)
    }

    /// Apple's documented meaning of each non-success status.
    static func refusal(status: Int64) -> InputError {
        switch status {
        case 21007:
            return InputError(
                code: .wrongEnvironment21007,
                message: "status 21007: this receipt is from the sandbox but was sent to the production verifyReceipt; verify it with the sandbox endpoint")
        case 21008:
            return InputError(
                code: .wrongEnvironment21008,
                message: "status 21008: this receipt is from production but was sent to the sandbox verifyReceipt; verify it with the production endpoint")
        default:
            let meaning: String
            switch status {
            case 21000: meaning = "the request to the App Store was not made using HTTP POST, or its JSON was unreadable"
            case 21001: meaning = "this status code is no longer sent by the App Store"
            case 21002: meaning = "the receipt-data property was malformed or the service had a temporary issue"
            case 21003: meaning = "the receipt could not be authenticated"
            case 21004: meaning = "the shared secret does not match the one on file for the account"
            case 21005: meaning = "the receipt server was temporarily unable to provide the receipt"
            case 21009: meaning = "internal data access error"
            case 21010: meaning = "the user account cannot be found or has been deleted"
            case 21100...21199: meaning = "internal data access error"
            default: meaning = "not a valid receipt (unknown status)"
            }
            return InputError(code: .receiptStatus(status), message: "status \(status): \(meaning)")
        }
    }
}
