import Foundation

// MARK: - JSONValue

/// Reading `JSONSerialization` values without guessing: booleans and numbers are both `NSNumber` there, told apart
/// by their Objective-C type code.
enum JSONValue {
    /// True for JSON `true` / `false`.
    @inline(__always)
    static func isBoolean(_ n: NSNumber) -> Bool { n.objCType.pointee == 0x63 }  // "c"

    /// True for numbers that came from a JSON fraction or exponent.
    @inline(__always)
    static func isFloatingPoint(_ n: NSNumber) -> Bool {
        let t = n.objCType.pointee
        return t == 0x64 || t == 0x66  // "d", "f"
    }

    /// An integer JSON number (a fraction-less double within range counts); nil for booleans, fractions and others.
    static func int64(_ value: Any) -> Int64? {
        guard let n = value as? NSNumber, !isBoolean(n) else { return nil }
        if isFloatingPoint(n) {
            let d = n.doubleValue
            guard d.rounded() == d, abs(d) < 9.2e18 else { return nil }
            return Int64(d)
        }
        return n.int64Value
    }

    /// A decimal digit string (optionally signed) as Int64.
    static func int64(digits s: String) -> Int64? {
        guard !s.isEmpty, s.utf8.count <= 19 else { return nil }
        return Int64(s)
    }

    static func numberText(_ n: NSNumber) -> String {
        if isBoolean(n) { return n.boolValue ? "true" : "false" }
        if isFloatingPoint(n) {
            let d = n.doubleValue
            if d.rounded() == d, abs(d) < 9.2e18 { return String(Int64(d)) }
            return d.isFinite ? "\(d)" : "null"
        }
        return String(n.int64Value)
    }
}
