import LedgerStore

// MARK: - An erasure (`storeledger forget --json`, `POST /v1/customers/{id}/forget`)

/// What a `forget` did: the pseudonym the user is known by from now on, every pseudonym forgotten (the user's and
/// their tokens'), the subscriptions kept under the pseudonym, and the erasure event's seq. Never the id.
public struct ForgetDocument: JSONDocument, Sendable {
    public var report: ForgetReport

    public init(_ report: ForgetReport) { self.report = report }

    public func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("pseudonym"); o.string(report.pseudonym)
            o.key("pseudonyms"); o.array(report.pseudonyms) { $0.string($1) }
            o.key("subscriptions"); o.number(Int64(report.subscriptions))
            o.key("seq"); o.number(Int64(report.seq))
        }
    }
}
