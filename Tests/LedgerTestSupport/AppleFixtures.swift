import Foundation

// MARK: - AppleFixtures

/// Apple documents written from Apple's documented field lists (verifyReceipt, App Store Server Notifications V1
/// and V2, JWSTransaction / JWSRenewalInfo), parameterised so scenario tests can tell their own stories. Nothing is
/// read from disk: every document is built (and, for V2, signed with a `TestPKI`) at test time.
public enum AppleFixtures {
    public static let bundleId = "com.example.app"
    public static let monthly = "com.example.premium.monthly"
    public static let yearly = "com.example.premium.yearly"
    public static let appAppleId: Int64 = 1_234_567_890

    /// 2020-11-13T04:59:30Z, the seeds' restore day.
    public static let epoch: Int64 = 1_605_243_570_000
    public static let minute: Int64 = 60_000
    public static let day: Int64 = 86_400_000

    // MARK: - JSON

    /// Compact JSON with sorted keys, `/` unescaped (deterministic bytes for identical documents).
    public static func json(_ object: Any) -> [UInt8] {
        let data = try! JSONSerialization.data(
            withJSONObject: object, options: [.sortedKeys, .fragmentsAllowed, .withoutEscapingSlashes])
        return [UInt8](data)
    }

    /// The envelope (docs/inputs.md) around `payload` (embedded byte for byte; a JWS string is quoted).
    public static func envelope(
        type: String?, appUserId: String? = nil, receivedAt: Int64? = nil, payload: [UInt8]
    ) -> [UInt8] {
        var head = "{"
        if let type { head += "\"type\":\"\(type)\"," }
        if let appUserId { head += "\"appUserId\":\(String(decoding: json(appUserId), as: UTF8.self))," }
        if let receivedAt { head += "\"receivedAt\":\(receivedAt)," }
        head += "\"payload\":"
        return Array(head.utf8) + payload + Array("}".utf8)
    }

    /// The envelope around a JWS string payload.
    public static func envelope(type: String?, appUserId: String? = nil, receivedAt: Int64? = nil, jws: String) -> [UInt8] {
        envelope(type: type, appUserId: appUserId, receivedAt: receivedAt, payload: json(jws))
    }

    /// A binding claim body.
    public static func binding(appUserId: String, originalTransactionId: String, claimedAt: Int64? = nil) -> [UInt8] {
        var object: [String: Any] = ["appUserId": appUserId, "originalTransactionId": originalTransactionId]
        if let claimedAt { object["claimedAt"] = claimedAt }
        return json(object)
    }

    // MARK: - Dates

    /// `"2018-11-29 08:29:26 Etc/GMT"`, V1's formatted date.
    public static func gmt(_ ms: Int64) -> String { format(ms, offsetHours: 0, zone: "Etc/GMT") }

    /// V1's `_pst` spelling (fixed UTC-8: good enough for a field the decoder must ignore).
    public static func pst(_ ms: Int64) -> String { format(ms, offsetHours: -8, zone: "America/Los_Angeles") }

    private static func format(_ ms: Int64, offsetHours: Int64, zone: String) -> String {
        let seconds = ms / 1000 + offsetHours * 3600
        let days = Int(seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400)
        let secondOfDay = Int(seconds - Int64(days) * 86_400)
        // Civil from days (Howard Hinnant).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(y)-\(two(m))-\(two(d)) \(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60)) \(zone)"
    }
}
