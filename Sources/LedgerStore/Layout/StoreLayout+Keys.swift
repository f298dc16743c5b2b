import LMDB
import LedgerCodec
import LedgerCore

/// How each database's keys are built: one function per layout.
extension StoreLayout {
    // MARK: - Numbered: `log`, `raw`, `rejected`

    /// The `log` key of event `seq`.
    static func logKey(_ seq: UInt64) -> [UInt8] { BigEndian.bytes(seq) }

    /// The `raw` key of the input whose first event is `seq`.
    static func rawKey(_ seq: UInt64) -> [UInt8] { BigEndian.bytes(seq) }

    /// The `rejected` key of refusal `number`.
    static func rejectedKey(_ number: UInt64) -> [UInt8] { BigEndian.bytes(number) }

    // MARK: - `events`: the revisions of each event key

    /// The `events` key of the revision of `eventKey` written at `seq`: event key ‖ 0x00 ‖ seq (BE, 8). Event keys
    /// hold no 0, so the revisions of one key sort together, oldest first.
    static func revisionKey(_ eventKey: some Collection<UInt8>, seq: UInt64) -> [UInt8] {
        var k = revisionKeyPrefix(eventKey)
        BigEndian.append(seq, to: &k)
        return k
    }

    /// What every revision key of `eventKey` starts with: event key ‖ 0x00.
    static func revisionKeyPrefix(_ eventKey: some Collection<UInt8>) -> [UInt8] {
        var k: [UInt8] = []
        k.reserveCapacity(eventKey.count + 9)
        k.append(contentsOf: eventKey)
        k.append(0)
        return k
    }

    // MARK: - Per subscription and per user: `by_otid`, `timelines`, `by_user`, `bindings_any`

    /// The environment prefix of `by_otid`, `by_user` and `timelines` keys: its code, and for an environment this
    /// build does not know, its name and a 0 after the code (names never hold a 0).
    static func environmentPrefix(_ environment: AppStoreEnvironment) -> [UInt8] {
        let code = environment.code
        guard code == AppStoreEnvironment.otherCode else { return [code] }
        return [code] + Array(environment.rawValue.utf8) + [0]
    }

    /// The `by_otid` and `timelines` key of a subscription (and the `by_user` value naming it).
    static func subscriptionKey(_ environment: AppStoreEnvironment, _ otid: OriginalTransactionID) -> [UInt8] {
        var k = environmentPrefix(environment)
        otid.withUTF8 { k.append(contentsOf: $0) }
        return k
    }

    /// The environment and subscription of a `subscriptionKey`; nil when the bytes are not one.
    static func decodeSubscriptionKey(_ bytes: UnsafeRawBufferPointer) -> (AppStoreEnvironment, OriginalTransactionID)? {
        guard let first = bytes.first else { return nil }
        var rest = bytes.dropFirst()
        let env: AppStoreEnvironment
        if first == AppStoreEnvironment.otherCode {
            guard let end = rest.firstIndex(of: 0),
                let named = AppStoreEnvironment(storedName: String(decoding: rest[..<end], as: UTF8.self))
            else { return nil }
            env = named
            rest = rest[(end + 1)...]
        } else {
            guard let known = AppStoreEnvironment(code: first) else { return nil }
            env = known
        }
        return (env, OriginalTransactionID(utf8: UnsafeRawBufferPointer(rebasing: rest).assumingMemoryBound(to: UInt8.self)))
    }

    /// `decodeSubscriptionKey` of a key or value read from LMDB.
    static func decodeSubscriptionKey(_ bytes: MappedBytes) -> (AppStoreEnvironment, OriginalTransactionID)? {
        bytes.withUnsafeBytes { decodeSubscriptionKey($0) }
    }

    /// The `by_user` key of an app user.
    static func userKey(_ environment: AppStoreEnvironment, _ user: AppUserID) -> [UInt8] {
        var k = environmentPrefix(environment)
        k.append(contentsOf: user.rawValue.utf8)
        return k
    }

    /// The `bindings_any` key of a subscription: its OTID alone (the claims there name no environment).
    static func anyEnvironmentKey(_ otid: OriginalTransactionID) -> [UInt8] {
        otid.withUTF8 { Array($0) }
    }

    // MARK: - `lifecycle`: the events derived from timeline changes

    /// The length of every `lifecycle` key (and of a `webhook_dead` key, which is one).
    static let lifecycleKeyLength = 13

    /// The `lifecycle` key of the `index`-th event an input said about a subscription in `environment`, `seq` being
    /// the input's last event about it: seq (BE, 8) ‖ environment code (1) ‖ index (BE, 4). One event belongs to
    /// two subscriptions only as a claim that named no environment, and then to one per known environment, so the
    /// code keeps keys apart. In seq order: the stream is read in key order.
    static func lifecycleKey(seq: UInt64, _ environment: AppStoreEnvironment, index: Int) -> [UInt8] {
        var k = BigEndian.bytes(seq)
        k.reserveCapacity(lifecycleKeyLength)
        k.append(environment.code)
        k.append(UInt8(truncatingIfNeeded: index >> 24))
        k.append(UInt8(truncatingIfNeeded: index >> 16))
        k.append(UInt8(truncatingIfNeeded: index >> 8))
        k.append(UInt8(truncatingIfNeeded: index))
        return k
    }
}
