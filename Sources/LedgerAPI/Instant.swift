import Foundation
import LedgerCore

// MARK: - Instants

/// Parses instants as API.md writes them (query strings, CLI flags): milliseconds since epoch or ISO-8601, with or
/// without fractional seconds.
public enum Instant {
    public static func parse(_ text: String) -> UnixMillis? {
        if let ms = Int64(text) { return ms }
        let plain = ISO8601DateFormatter()
        if let d = plain.date(from: text) { return UnixMillis((d.timeIntervalSince1970 * 1000).rounded()) }
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let d = fractional.date(from: text) { return UnixMillis((d.timeIntervalSince1970 * 1000).rounded()) }
        return nil
    }
}
