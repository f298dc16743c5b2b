#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LedgerAppStore
import LedgerErrors

/// Tells a line of `storeledger export` from an input. An export line holds an event the ledger already stored (its
/// fact, its raw input in base64, its place in the chain); appended as an input, parts of it would be refused and
/// parts taken for a new document, leaving half a copy. Rebuilding a ledger from an export is `storeledger import`.
public enum ExportLines {
    /// What the input is when it is a line of an export ("event 12", "refused input 3", "the first line", "the end
    /// line"); nil when it is not one.
    ///
    /// A byte search first (no Apple document or envelope holds these member names), so that inputs pay nothing
    /// more; only a candidate is parsed, and it must have an export line's shape.
    public static func recognise(_ bytes: [UInt8]) -> String? {
        guard containsMarker(bytes) else { return nil }
        guard case .object(let object)? = try? JSONValue.parse(bytes, depthLimit: 64) else { return nil }
        if case .int(let seq)? = object["seq"], case .string? = object["chainHash"], case .string? = object["rawDigest"],
            case .object? = object["fact"]
        {
            return "event \(seq)"
        }
        if object.count == 1, case .object(let refusal)? = object["rejected"], case .string? = refusal["record"] {
            if case .int(let number)? = refusal["number"] { return "refused input \(number)" }
            return "a refused input"
        }
        if object.count == 1, case .object(let begin)? = object["begin"], case .int? = begin["format"] {
            return "the first line"
        }
        if object.count == 1, case .object(let end)? = object["end"], case .string? = end["chainHead"],
            case .string? = end["rejectedHead"]
        {
            return "the end line"
        }
        return nil
    }

    /// The refusal of an input that is a line of an export.
    public static func refusal(_ what: String) -> CodedError {
        CodedError(
            .exportLine,
            "this is a line of `storeledger export` (\(what)), not an input: to rebuild a ledger from an export use "
                + "`storeledger import FILE --data DIR` (into an empty DIR)")
    }

    private static let markers = [#""chainHash""#, #""record""#, #""rejectedHead""#, #""begin""#].map { Array($0.utf8) }
    /// Whether `byte` follows the quote of some marker (`c`, `r`, `b`): most quotes are followed by another letter.
    @inline(__always)
    private static func beginsAMarker(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "c") || byte == UInt8(ascii: "r") || byte == UInt8(ascii: "b")
    }

    /// Whether `bytes` holds one of the markers. Every input pays this search, so it is one pass: libc's `memchr`
    /// to each quote (every marker begins with one), then a comparison of what follows.
    private static func containsMarker(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { h in
            guard let base = h.baseAddress else { return false }
            var at = 0
            while at < h.count, let found = memchr(base + at, 0x22, h.count - at) {
                let i = UnsafeRawPointer(base).distance(to: UnsafeRawPointer(found))
                if i + 1 < h.count, beginsAMarker(h[i + 1]) {
                    for marker in markers where i + marker.count <= h.count {
                        if memcmp(base + i, marker, marker.count) == 0 { return true }
                    }
                }
                at = i + 1
            }
            return false
        }
    }
}
