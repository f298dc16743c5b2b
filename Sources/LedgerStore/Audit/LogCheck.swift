import Crypto
import LMDB
import LedgerCodec
import LedgerCore

/// What `verify` found in one range of the log, and what it counted there for the checks made once the whole log is
/// read (nothing stored beside the log).
struct LogRangeCheck {
    /// The first seq of the range.
    let first: UInt64
    /// The last seq checked without a fault (`first - 1` when none was).
    var checkedThrough: UInt64
    /// The first fault of the range, and the seq it is about.
    var fault: (seq: UInt64, description: String)?
    /// The stored chain link at `checkedThrough` (verified).
    var link = ChainLink.genesis
    /// Events indexed in `by_otid` under their own subscription (every event with an OTID but the claims that name no
    /// environment).
    var withOTID = 0
    /// Raw inputs whose first event lies in the range.
    var rawInputs = 0
    /// Claims that named no environment, with their seqs: indexed under every environment where their subscription is
    /// known, which only the whole log tells.
    var claimsOfEveryEnvironment: [(claim: BindingClaim, seq: UInt64)] = []
    /// The `by_user` entries the range's claims made (user key ‖ 0 ‖ subscription key).
    var bindings = Set<[UInt8]>()

    init(first: UInt64) {
        self.first = first
        checkedThrough = first - 1
    }
}

/// A chain link (32 bytes), held without an allocation.
struct ChainLink: Equatable {
    private var words: (UInt64, UInt64, UInt64, UInt64)

    static let genesis = ChainLink(words: (0, 0, 0, 0))

    private init(words: (UInt64, UInt64, UInt64, UInt64)) { self.words = words }

    /// The link in the first 32 bytes of `bytes`.
    init(_ bytes: UnsafeRawBufferPointer) {
        precondition(bytes.count >= 32, "a chain link is 32 bytes")
        words = (
            bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self), bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
            bytes.loadUnaligned(fromByteOffset: 16, as: UInt64.self), bytes.loadUnaligned(fromByteOffset: 24, as: UInt64.self)
        )
    }

    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try Swift.withUnsafeBytes(of: words) { try body($0) }
    }

    var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

    static func == (a: ChainLink, b: ChainLink) -> Bool {
        a.words.0 == b.words.0 && a.words.1 == b.words.1 && a.words.2 == b.words.2 && a.words.3 == b.words.3
    }
}

extension LedgerAudit {
    /// Checks the log entries `first...last` in `txn` (fewer when the log ends before): each entry present, in order
    /// and well formed; its event present, chained to the link stored before it, decodable, stored under its own key
    /// and no repeat of an earlier revision of that key; its claims indexed (`bindings_any`, `by_user`); its raw
    /// input present and unaltered. Stops at the first fault.
    ///
    /// Each link is recomputed from the link stored before it, so ranges are checked independently (on every core)
    /// and together check the whole chain. Reads in place: the event, the link, the key and the raw bytes are hashed
    /// and compared where the map holds them; each raw input is hashed once, for the first of its events.
    func checkLog(from first: UInt64, through last: UInt64, _ txn: Transaction) throws -> LogRangeCheck {
        var check = LogRangeCheck(first: first)
        func fault(_ seq: UInt64, _ description: String) -> LogRangeCheck {
            check.fault = (seq, description)
            return check
        }
        let log = try txn.cursor(layout.log)
        // One `events` cursor per kind of key, each left where it found the last key of its kind
        // (`StoreLayout.eventKeyKinds`).
        let events = ForwardCursors(txn, layout.events, count: StoreLayout.eventKeyKinds)
        let raws = try txn.cursor(layout.raw)
        // Claims are the few events that need these.
        var bindingsAny: Cursor?
        var byUser: Cursor?
        var previous = ChainLink.genesis
        if first > 1 {
            guard let before = try log.find(StoreLayout.logKey(first - 1)) else {
                return fault(first - 1, "log entry \(first - 1) is missing")
            }
            guard before.value.count > 40 else {
                return fault(first - 1, LogRecord.tooShort(seq: first - 1, before.value))
            }
            previous = before.value.withUnsafeBytes { ChainLink($0) }  // measured above
        }
        check.link = previous
        // Sought, not found: a missing first entry is named with the one after it, as anywhere in a range.
        var entry = try log.seek(StoreLayout.logKey(first))
        if entry == nil { return fault(first, "log entry \(first) is missing") }
        var revisionKey: [UInt8] = []
        revisionKey.reserveCapacity(64)
        var strings = RepeatedStrings()
        var rawInput: (key: UInt64, digest: SHA256Digest?)? = nil
        var next = first
        while let e = entry, next <= last {
            let seq: UInt64
            do throws(LedgerError) { seq = try BigEndian.uint64(key: e.key, of: "log") } catch {
                return fault(next, error.message)
            }
            guard seq == next else { return fault(next, "log entry \(next) is missing (the log jumps to \(seq))") }
            guard e.value.count > 40 else { return fault(seq, LogRecord.tooShort(seq: seq, e.value)) }
            // Measured above: the link (32), the raw key (8), and an event key of one byte or more.
            let record = e.value
            let key = record.extracting(40..<record.count)
            let rawKey = record.withUnsafeBytes { BigEndian.uint64($0, at: 32) }

            revisionKey.removeAll(keepingCapacity: true)
            revisionKey.append(contentsOf: key)
            revisionKey.append(0)
            BigEndian.append(seq, to: &revisionKey)
            let kind = StoreLayout.eventKeyKind(first: key.first)
            guard let stored = try revisionKey.withUnsafeBytes({ try events.find($0, through: kind) })?.value else {
                return fault(seq, "event \(seq) (\(String(decoding: key, as: UTF8.self))) is missing")
            }

            // The chain: SHA-256(link before ‖ seq ‖ key ‖ 0x00 ‖ stored event) is the link stored with the entry.
            var hash = SHA256()
            previous.withUnsafeBytes { hash.update(bufferPointer: $0) }
            withUnsafeBytes(of: seq.bigEndian) { hash.update(bufferPointer: $0) }
            key.withUnsafeBytes { hash.update(bufferPointer: $0) }
            withUnsafeBytes(of: UInt8(0)) { hash.update(bufferPointer: $0) }
            stored.withUnsafeBytes { hash.update(bufferPointer: $0) }
            let link = hash.finalize()
            guard link.withUnsafeBytes({ record.extracting(0..<32).hasSameBytes(as: $0) }) else {
                return fault(seq, "hash chain broken at seq \(seq): the event was altered")
            }
            previous = record.withUnsafeBytes { ChainLink($0) }

            // Transactions and renewal infos, most of the log, always name their subscription: the projections'
            // check decodes each (it reads them through their `by_otid` entries) and finds it under its key. The
            // others are decoded here: a notification may name no subscription, a claim is indexed by its user.
            guard let factRange = stored.withUnsafeBytes(StoreLayout.factBytesRange) else {
                return fault(seq, "event \(seq) does not decode: it holds no fact")
            }
            let factKind = stored.extracting(factRange).withUnsafeBytes(StoreLayout.factKind)
            if factKind != .transaction && factKind != .renewal {
                // Decoded whole but for the metadata's digest, user and unknown fields, which only `export` and the
                // queries read (the digest is compared where it lies).
                let event: LedgerEvent
                do {
                    event = try stored.withUnsafeBytes { (bytes) throws(FactDecodingError) in
                        try LedgerEvent(seq: seq, decoding: bytes, strings: &strings, metadata: .forFold)
                    }
                } catch {
                    return fault(seq, "event \(seq) does not decode: \(error)")
                }
                guard event.fact.hasEventKey(key) else { return fault(seq, "event \(seq) is stored under another key") }
                if let problem = try checkClaims(of: event, check: &check, byUser: &byUser, bindingsAny: &bindingsAny, txn) {
                    return fault(seq, problem)
                }
            } else {
                check.withOTID += 1
            }
            // A repeat: an earlier revision of the key (its neighbour before it in `events`) with the same fact bytes.
            if try isRepeat(stored.extracting(factRange), revisionKey: revisionKey, events, kind) {
                return fault(seq, "event \(seq) repeats a fact already stored under \(String(decoding: key, as: UTF8.self))")
            }

            guard rawKey <= seq else { return fault(seq, "raw input of event \(seq) is missing") }
            if rawInput?.key != rawKey {
                let found = try StoreLayout.rawKey(rawKey).withUnsafeBytes { try raws.findForward($0) }
                if let raw = found?.value {
                    var digest = SHA256()
                    raw.withUnsafeBytes { digest.update(bufferPointer: $0) }
                    rawInput = (rawKey, digest.finalize())
                } else {
                    // An input that names people is sealed; one that names a person forgotten since cannot be read,
                    // and its digest, which the chain holds, is all that is left of it.
                    switch try ledger.rawInput(of: rawKey, txn) {
                    case .bytes(let raw): rawInput = (rawKey, SHA256.hash(data: raw))
                    case .erased: rawInput = (rawKey, nil)
                    case .missing: return fault(seq, "raw input of event \(seq) is missing")
                    }
                }
            }
            if let digest = rawInput!.digest {
                guard let digestRange = stored.withUnsafeBytes(StoreLayout.rawDigestRange),
                    digest.withUnsafeBytes({ stored.extracting(digestRange).hasSameBytes(as: $0) })
                else {
                    return fault(seq, "raw input of event \(seq) was altered")
                }
            }
            if rawKey == seq { check.rawInputs += 1 }

            check.checkedThrough = seq
            check.link = previous
            next = seq + 1
            entry = try log.next()
        }
        return check
    }

    /// Whether a revision stored before the one under `revisionKey` holds the same fact bytes (`fact`): the
    /// revisions of a key are neighbours in `events` (key ‖ 0x00 ‖ seq), so they are the entries just before it,
    /// where cursor `kind` stands. Most keys have one revision: one step back finds another key, one step forward
    /// returns.
    private func isRepeat(_ fact: MappedBytes, revisionKey: [UInt8], _ events: ForwardCursors, _ kind: Int) throws -> Bool {
        var steps = 0
        defer { for _ in 0..<steps { _ = try? events.next(through: kind) } }
        return try revisionKey.withUnsafeBytes { key in
            let prefix = UnsafeRawBufferPointer(rebasing: key[0..<(key.count - 8)])  // event key ‖ 0x00
            while let e = try events.previous(through: kind) {
                steps += 1
                guard e.key.count == key.count, e.key.extracting(0..<prefix.count).hasSameBytes(as: prefix) else {
                    return false
                }
                if let earlier = e.value.withUnsafeBytes(StoreLayout.factBytesRange),
                    fact.withUnsafeBytes({ e.value.extracting(earlier).hasSameBytes(as: $0) })
                {
                    return true
                }
            }
            return false
        }
    }

    /// Counts `event` for the checks at the end, and checks the index entries of a claim (`bindings_any` for one
    /// that named no environment, `by_user` for the others) through the cursors given (opened on first use): the
    /// fault, or nil.
    private func checkClaims(
        of event: LedgerEvent, check: inout LogRangeCheck, byUser: inout Cursor?, bindingsAny: inout Cursor?,
        _ txn: Transaction
    ) throws -> String? {
        let seq = event.seq
        if case .binding(let claim) = event.fact, claim.everyEnvironment {
            let value = EventReference.encode(seq: seq, eventKey: event.fact.eventKey)
            let cursor = try bindingsAny ?? txn.cursor(layout.bindingsAny)
            bindingsAny = cursor
            if try cursor.find(StoreLayout.anyEnvironmentKey(claim.originalTransactionId), value: value) == nil {
                return "bindings_any index lacks claim \(seq) of \(claim.originalTransactionId)"
            }
            check.claimsOfEveryEnvironment.append((claim, seq))
        } else if event.fact.originalTransactionId != nil {
            // Its `by_otid` entry is found by the projections' check, which reads every entry; the counts at the end
            // say that none is missing.
            check.withOTID += 1
            if case .binding(let claim) = event.fact {
                let userKey = StoreLayout.userKey(claim.environment, claim.appUserId)
                let otidKey = StoreLayout.subscriptionKey(claim.environment, claim.originalTransactionId)
                let cursor = try byUser ?? txn.cursor(layout.byUser)
                byUser = cursor
                if try cursor.find(userKey, value: otidKey) == nil {
                    return "by_user index lacks \(claim.appUserId) → \(claim.originalTransactionId)"
                }
                check.bindings.insert(userKey + [0] + otidKey)
            }
        }
        return nil
    }
}
