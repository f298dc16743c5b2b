import LMDB
import LedgerCore

/// A reader's side of `Identities` in one read transaction: the log's pseudonyms shown as the values they stand for,
/// and a value asked about turned into the name the log knows it by. Answers speak the values; the log, its indexes
/// and its projections only the pseudonyms.
final class IdentityNames {
    private let identities: Identities
    private let layout: StoreLayout
    private let txn: Transaction
    /// Nil for a ledger that keeps the values themselves: every name is shown and asked as it is.
    private let generation: Identities.Generation?
    private var shownCache: [String: String] = [:]

    init(_ identities: Identities, _ layout: StoreLayout, _ txn: Transaction) throws {
        self.identities = identities
        self.layout = layout
        self.txn = txn
        generation = try identities.generation(layout, txn)
    }

    /// What `name` (a name the log holds) is shown as: the value of a known pseudonym, or the name itself (a
    /// forgotten person's pseudonym).
    func shown(_ name: String) throws -> String {
        guard let generation, Identities.looksLikePseudonym(name) else { return name }
        if let known = shownCache[name] { return known }
        let value = try identities.shown(name, layout, txn, generation: generation)
        shownCache[name] = value
        return value
    }

    /// The name the log knows `value` by: its pseudonym. A value without one is the log's name for itself when it is
    /// a forgotten person's pseudonym (their history stays readable under it); the pseudonym of someone still known
    /// names nobody when asked for directly, so it cannot stand in for their id.
    func asked(_ value: String) throws -> String {
        guard let generation, !value.isEmpty else { return value }
        if let pseudonym = try identities.pseudonym(of: value, generation, layout, txn) { return pseudonym }
        if Identities.looksLikePseudonym(value), try identities.row(value, generation, layout, txn) != nil {
            return ""
        }
        return value
    }

    func asked(_ user: AppUserID) throws -> AppUserID { AppUserID(rawValue: try asked(user.rawValue)) }

    func shown(_ timeline: Timeline) throws -> Timeline {
        generation == nil ? timeline : try timeline.renamingPersonalValues { try shown($0) }
    }

    func shown(_ event: LedgerEvent) throws -> LedgerEvent {
        generation == nil ? event : try event.renamingPersonalValues { try shown($0) }
    }

    func shown(_ event: LifecycleEvent) throws -> LifecycleEvent {
        generation == nil ? event : try event.renamingPersonalValues { try shown($0) }
    }
}
