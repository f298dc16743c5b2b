import LedgerCore

// MARK: - AppleObject+V1

/// V1 documents (verifyReceipt responses, V1 notifications) send numbers and booleans as strings and dates as
/// milliseconds in digit strings or formatted text; these accessors read those spellings, and tolerate real JSON
/// numbers and booleans.
extension AppleObject {
    /// A V1 integer: a digit string, or a JSON integer.
    func v1Int(_ key: String) throws(InputError) -> Int64? {
        guard let v = value(key) else { return nil }
        if case .string(let s) = v, let i = JSONValue.int64(digits: s) { return i }
        if let i = JSONValue.int64(v) { return i }
        throw .wrongType(name(key), expected: "a number string")
    }

    /// A V1 boolean: `"true"`/`"false"`, `"1"`/`"0"`, or a JSON boolean / 0 / 1.
    func v1Bool(_ key: String) throws(InputError) -> Bool? {
        guard let v = value(key) else { return nil }
        if case .string(let s) = v {
            switch s {
            case "true", "1", "TRUE", "True": return true
            case "false", "0", "FALSE", "False": return false
            default: break
            }
        } else if case .bool(let b) = v {
            return b
        } else if let i = JSONValue.int64(v), i == 0 || i == 1 {
            return i == 1
        }
        throw .wrongType(name(key), expected: "\"true\" or \"false\"")
    }

    /// A V1 instant: `<base>_ms`, else `<base>` (milliseconds as digits — iOS 6 `expires_date` — or a formatted
    /// `"2018-11-29 08:29:26 Etc/GMT"`), else `<base>_formatted`.
    func v1Date(_ base: String) throws(InputError) -> UnixMillis? {
        if let ms = try v1Int(base + "_ms") { return ms }
        for key in [base, base + "_formatted"] {
            guard let v = value(key) else { continue }
            if case .string(let s) = v {
                if let ms = JSONValue.int64(digits: s) { return ms }
                if let ms = AppleDate.parse(s) { return ms }
            } else if let ms = JSONValue.int64(v) {
                return ms
            }
            throw .wrongType(name(key), expected: "a date (milliseconds or \"yyyy-MM-dd HH:mm:ss Etc/GMT\")")
        }
        return nil
    }
}
