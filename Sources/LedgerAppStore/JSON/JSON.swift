// MARK: - JSON

/// One parsed JSON value. Numbers keep whether they were written as integers: an integer literal that fits Int64 is
/// `.int`, every other number (fraction, exponent, out of Int64 range) is `.double`.
///
/// The package's one JSON parser's value: the configuration files (`LedgerConfiguration`) are read with it too, hence
/// `package` access.
package enum JSON: Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    package var isNull: Bool { if case .null = self { true } else { false } }
}
