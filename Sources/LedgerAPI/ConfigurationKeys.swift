import LedgerAppStore

/// Every key a configuration file may hold, at every level. A key not listed is refused when the file is read
/// (`invalid_configuration`, naming the key, where it is and the nearest known key): every key is optional, so a
/// misspelled one would otherwise leave its setting at the default without a word (`requireSignature` storing signed
/// inputs `unverified`, `bundleID` accepting every bundle).
enum ConfigurationKeys {
    /// What a value of the file holds, as far as its keys go. Types are each reader's to check.
    indirect enum Shape: Sendable {
        /// A value whose keys, if any, are not the configuration's (a string, a number, a list).
        case value
        /// An object of these keys only.
        case object([String: Shape])
        /// An object of any keys (product ids, currency codes), each value of this shape.
        case map(Shape)
    }

    static let file: Shape = .object([
        "bundleId": .value, "environments": .value, "trustedRoots": .value, "requireSignatures": .value,
        "bindingPolicy": .value,
        "products": .map(
            .object([
                "type": .value, "entitlements": .value, "group": .value, "level": .value, "duration": .value,
                "credits": .value,
            ])),
        "socket": .object(["path": .value, "mode": .value, "writers": .object(["uids": .value, "gids": .value])]),
        "limits": .object([
            "maxBodyBytes": .value, "maxBatchInputs": .value, "maxQueuedInputs": .value,
            "headerTimeoutSeconds": .value, "idleTimeoutSeconds": .value, "requestTimeoutSeconds": .value,
            "maxConnections": .value, "maxConnectionsPerPeer": .value, "reservedForWriters": .value,
        ]),
        "webhook": .object([
            "url": .value, "secret": .value, "maxAttempts": .value, "initialBackoffSeconds": .value,
            "maxBackoffSeconds": .value, "timeoutSeconds": .value, "trustedCertificates": .value,
        ]),
        "revenue": .object(["currency": .value, "rates": .value]),
        "appStoreServerAPI": .object([
            "keyFile": .value, "keyId": .value, "issuerId": .value, "bundleId": .value, "environment": .value,
            "baseURL": .value, "trustedCertificates": .value, "maxRetries": .value, "maxRetryWaitSeconds": .value,
            "timeoutSeconds": .value, "reconcileEverySeconds": .value, "reconcileWindowHours": .value,
            "reconcileModes": .value, "reconcileOnlyFailures": .value,
        ]),
    ])

    /// Throws for the first unknown key, in key order at each level (so the same file always names the same key).
    static func check(_ object: [String: JSON]) throws(LedgerConfiguration.Invalid) {
        try check(.object(object), against: file, at: [])
    }

    private static func check(_ value: JSON, against shape: Shape, at path: [String]) throws(LedgerConfiguration.Invalid) {
        guard case .object(let object) = value else { return }  // a wrong type is the reader's error to give
        switch shape {
        case .value:
            return
        case .map(let member):
            for key in object.keys.sorted() { try check(object[key]!, against: member, at: path + ["[\"\(key)\"]"]) }
        case .object(let known):
            for key in object.keys.sorted() {
                guard let member = known[key] else {
                    throw LedgerConfiguration.Invalid(message: unknown(key, at: path, known: known.keys.sorted()))
                }
                try check(object[key]!, against: member, at: path + [key])
            }
        }
    }

    /// "unknown key "requireSignature" at the top level (did you mean "requireSignatures"?)".
    private static func unknown(_ key: String, at path: [String], known: [String]) -> String {
        let place = path.isEmpty ? "at the top level" : "in \(name(path))"
        let message = "unknown key \"\(key)\" \(place)"
        if let nearest = nearest(to: key, among: known) { return message + " (did you mean \"\(nearest)\"?)" }
        return message + "; the keys there are " + known.map { "\"\($0)\"" }.joined(separator: ", ")
    }

    /// `limits`, `socket.writers`, `products["com.example.monthly"]`.
    private static func name(_ path: [String]) -> String {
        var text = ""
        for part in path { text += part.hasPrefix("[") || text.isEmpty ? part : "." + part }
        return text
    }

    /// The known key closest to `key` (ignoring case), when it is close enough to be what was meant.
    static func nearest(to key: String, among known: [String]) -> String? {
        let typed = Array(key.lowercased().unicodeScalars)
        var best: (key: String, distance: Int)?
        for candidate in known {
            let d = distance(typed, Array(candidate.lowercased().unicodeScalars))
            if best == nil || d < best!.distance { best = (candidate, d) }
        }
        guard let best, best.distance <= max(2, typed.count / 3) else { return nil }
        return best.key
    }

    /// Levenshtein distance.
    private static func distance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        if a.isEmpty { return b.count }
        var previous = Array(0...b.count)
        var current = previous
        for i in 1...a.count {
            current[0] = i
            for j in stride(from: 1, through: b.count, by: 1) {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
