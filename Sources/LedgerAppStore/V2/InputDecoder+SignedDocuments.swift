import LedgerCore

// MARK: - InputDecoder+SignedDocuments

/// The V2 documents that carry JWS: a JWS on its own, `{"signedTransactionInfo", "signedRenewalInfo"}`, and the App
/// Store Server API's answers (Get Transaction History, Get All Subscription Statuses). The input's signature status
/// is the weakest of its JWS'.
extension InputDecoder {
    /// A JWS on its own: a V2 notification payload, a transaction or a renewal info (by `type`, else by content).
    func decodeSignedDocument(
        _ token: [UInt8], field: String, type: InputType?, context: Context
    ) throws(InputError) -> Decoded {
        let opened = try verifier.open(token, field: field, fallbackDate: context.receivedAt)
        let payload = AppleObject(opened.payload)
        let kind: InputType
        if let type {
            kind = type
        } else if payload.has("notificationType") {
            kind = .notification
        } else if payload.has("transactionId") || payload.has("receiptType") {
            kind = .transaction
        } else if payload.has("originalTransactionId") {
            kind = .renewal
        } else {
            throw .unknownInputType(
                "the JWS payload is neither a notification, a transaction, an app transaction nor a renewal info")
        }
        // A signed AppTransaction (StoreKit's `AppTransaction.shared`, or RESCIND_CONSENT's `signedAppTransactionInfo`):
        // the app's own purchase or download.
        if kind == .transaction, !payload.has("transactionId"), payload.has("receiptType") {
            return Decoded(
                facts: [.transaction(try V2Mapping.appTransaction(payload))], type: .transaction,
                source: .signedTransaction, signature: opened.signature, observedAt: nil)
        }
        switch kind {
        case .notification:
            let result = try NotificationV2Decoder.decode(payload, verifier: verifier, receivedAt: context.receivedAt)
            return Decoded(
                facts: result.facts, type: .notification, source: .notificationV2,
                signature: Self.weakest(opened.signature, result.nestedSignature), observedAt: nil)
        case .transaction:
            return Decoded(
                facts: [.transaction(try V2Mapping.transaction(payload))], type: .transaction, source: .signedTransaction,
                signature: opened.signature, observedAt: nil)
        case .renewal:
            return Decoded(
                facts: [.renewal(try V2Mapping.renewal(payload))], type: .renewal, source: .signedTransaction,
                signature: opened.signature, observedAt: nil)
        case .receipt, .binding, .grant:
            throw .unknownInputType("a JWS cannot be a \(kind.rawValue)")
        }
    }

    /// `{"signedTransactionInfo":…, "signedRenewalInfo":…}` (either or both; the Server API's status items).
    func decodeSignedPair(_ root: AppleObject, type: InputType, context: Context) throws(InputError) -> Decoded {
        if type == .transaction, !root.has("signedTransactionInfo") { throw .missingField("signedTransactionInfo") }
        var facts = [Fact]()
        var signature = SignatureStatus.verified
        try openSignedPair(root, into: &facts, signature: &signature, context: context)
        return Decoded(facts: facts, type: type, source: .signedTransaction, signature: signature, observedAt: nil)
    }

    /// Get Transaction History (one page): every `signedTransactions` item, each verified.
    func decodeTransactionHistory(_ root: AppleObject, context: Context) throws(InputError) -> Decoded {
        guard case .array(let items)? = root.value("signedTransactions") else {
            throw .wrongType("signedTransactions", expected: "an array of JWS strings")
        }
        var facts = [Fact]()
        var signature = SignatureStatus.verified
        for (i, item) in items.enumerated() {
            let field = "signedTransactions[\(i)]"
            guard case .string(let jws) = item else { throw .wrongType(field, expected: "a JWS string") }
            let signed = try verifier.transaction(jws, field: field, fallbackDate: context.receivedAt)
            signature = Self.weakest(signature, signed.signature)
            facts.append(.transaction(signed.fact))
        }
        guard !facts.isEmpty else { throw .missingField("signedTransactions") }
        return Decoded(facts: facts, type: .transaction, source: .signedTransaction, signature: signature, observedAt: nil)
    }

    /// Get All Subscription Statuses: each `data[].lastTransactions[]` item's signed transaction and renewal info.
    func decodeStatusResponse(_ root: AppleObject, context: Context) throws(InputError) -> Decoded {
        var facts = [Fact]()
        var signature = SignatureStatus.verified
        for group in try root.objects("data") {
            for item in try group.objects("lastTransactions") {
                try openSignedPair(item, into: &facts, signature: &signature, context: context)
            }
        }
        guard !facts.isEmpty else { throw .missingField("data[].lastTransactions") }
        return Decoded(facts: facts, type: .transaction, source: .signedTransaction, signature: signature, observedAt: nil)
    }

    /// Appends the facts of `item`'s `signedTransactionInfo` and `signedRenewalInfo` (each optional) to `facts`, and
    /// weakens `signature` to theirs.
    private func openSignedPair(
        _ item: AppleObject, into facts: inout [Fact], signature: inout SignatureStatus, context: Context
    ) throws(InputError) {
        if let jws = try item.string("signedTransactionInfo") {
            let signed = try verifier.transaction(
                jws, field: item.name("signedTransactionInfo"), fallbackDate: context.receivedAt)
            signature = Self.weakest(signature, signed.signature)
            facts.append(.transaction(signed.fact))
        }
        if let jws = try item.string("signedRenewalInfo") {
            let signed = try verifier.renewal(jws, field: item.name("signedRenewalInfo"), fallbackDate: context.receivedAt)
            signature = Self.weakest(signature, signed.signature)
            facts.append(.renewal(signed.fact))
        }
    }

    static func weakest(_ a: SignatureStatus, _ b: SignatureStatus) -> SignatureStatus {
        if a == .unsigned || b == .unsigned { return .unsigned }
        if a == .unverified || b == .unverified { return .unverified }
        return .verified
    }
}
