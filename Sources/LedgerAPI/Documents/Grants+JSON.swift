import LedgerCore

// MARK: - Grants (`storeledger grants --json`, `GET /v1/customers/{id}/grants`)

/// The operator's grants to one app user as known at `asOf`, each saying whether it grants at `at`.
public struct GrantsDocument: JSONDocument, Sendable {
    public var appUserId: String
    public var environment: String
    public var at: UnixMillis
    public var asOf: UInt64
    public var grants: [GrantState]

    public init(appUserId: String, environment: String, at: UnixMillis, asOf: UInt64, grants: [GrantState]) {
        self.appUserId = appUserId
        self.environment = environment
        self.at = at
        self.asOf = asOf
        self.grants = grants
    }

    public func write(to json: inout JSONWriter) {
        json.object { o in
            o.key("appUserId"); o.string(appUserId)
            o.key("environment"); o.string(environment)
            o.key("at"); o.number(at)
            o.key("asOf"); o.number(asOf)
            o.key("grants"); o.array(grants) { $1.write(to: &$0) }
        }
    }
}
