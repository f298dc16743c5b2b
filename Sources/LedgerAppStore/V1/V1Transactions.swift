import LedgerCore

// MARK: - V1Transactions

/// The transactions of one V1 document, one per transaction id, in first-seen order.
///
/// The same transaction may stand in `in_app` and in `latest_receipt_info`; when the copies differ, the one stating a
/// revocation wins (a copy without it never undoes it: docs/domain.md, "Refunds"), else the later one
/// (`latest_receipt_info` is read after `in_app`).
struct V1Transactions {
    private(set) var list: [TransactionFact] = []
    /// Transaction id → index in `list`, from 16 entries on. Shorter lists are searched instead, which needs no
    /// dictionary: most documents hold a few transactions.
    private var positions: [TransactionID: Int] = [:]

    /// Maps each V1 transaction object (`V1Mapping.transaction`) and adds it. `receiptCreatedAt`: the objects are a
    /// receipt's `in_app`, made then (`TransactionFact.receiptCreationDate`).
    mutating func add(
        _ objects: [AppleObject], environment: AppStoreEnvironment, bundleId: String?,
        receiptCreatedAt: UnixMillis? = nil
    ) throws(InputError) {
        for o in objects {
            var t = try V1Mapping.transaction(o, environment: environment, bundleId: bundleId)
            if let receiptCreatedAt { t.receiptCreationDate = receiptCreatedAt }
            add(t)
        }
    }

    mutating func add(_ t: TransactionFact) {
        let found: Int?
        if list.count < 16 {
            found = list.firstIndex { $0.transactionId == t.transactionId }
        } else {
            if positions.isEmpty { for (i, e) in list.enumerated() { positions[e.transactionId] = i } }
            found = positions[t.transactionId]
        }
        guard let i = found else {
            if !positions.isEmpty { positions[t.transactionId] = list.count }
            list.append(t)
            return
        }
        if list[i] == t || (list[i].revocationDate != nil && t.revocationDate == nil) { return }
        // A copy in `latest_receipt_info` is Apple's view at the request: it replaces the receipt file's, and speaks
        // from the request as well.
        list[i] = t
    }
}
