import ArgumentParser
import Foundation
import LedgerAPI
import LedgerStore
import LedgerErrors

/// `storeledger rejected`: the inputs the ledger refused, with their codes and bytes, for the auditor.
struct Rejected: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show refused inputs: when, why (code and message), and the bytes received.",
        discussion: """
            Under each refusal, the bytes received: as text with anything unprintable escaped (\\n, \\xFF), or in hex \
            when they are mostly not text; the first \(Rejected.previewBytes) of them, with how many more were \
            received. The ledger keeps the first MiB of each; --json gives every kept byte (base64).
            """)

    /// Bytes of each refused input the table shows.
    static let previewBytes = 256

    @OptionGroup var ledger: LedgerOptions
    @Option(name: .long, help: "Only refusals after this number.") var after: UInt64 = 0
    @Option(name: .long, help: "At most this many.") var limit: Int = 100
    @Flag(name: .long, help: "One JSON document on stdout (every kept byte, base64).") var json = false

    func validate() throws {
        if limit <= 0 { throw ValidationError("--limit must be positive") }
        try checkSeqArgument("after", after)
    }

    func run() throws {
        let store = try ledger.openLedger(try ledger.loadConfiguration(json: json), readOnly: true, json: json)
        let refused = try store.log.rejectedInputs(after: after, limit: limit)
        if json {
            struct Doc: Encodable { var rejected: [RejectedDocument] }
            try printJSON(encoding: Doc(rejected: refused.map(RejectedDocument.init)))
            return
        }
        print(pad("#", 8) + pad("RECEIVED", 22) + pad("CODE", 26) + pad("SIZE", 10) + "MESSAGE")
        for r in refused {
            let request = r.request.map { "[\($0.prefix(60))] " } ?? ""
            let message = r.erased ? "(erased: it named a person the ledger forgot)" : r.message
            print(
                pad("\(r.number)", 8) + pad(formatInstant(r.receivedAt), 22) + pad(r.code.rawValue, 26) + pad("\(r.size)", 10)
                    + request + message)
            if !r.erased {
                print(String(repeating: " ", count: 8) + BytePreview(r.raw, size: r.size, limit: Self.previewBytes).line)
            }
        }
        if refused.isEmpty { print("(no refused inputs)") }
    }
}

/// The first bytes of a refused input as one readable line: `text <escaped>` when they are mostly text, `hex <bytes>`
/// otherwise, then how many bytes were not shown.
struct BytePreview {
    var line: String

    /// - Parameters:
    ///   - kept: the bytes the ledger kept; `size`: how many were received (more than kept for a large input).
    init(_ kept: [UInt8], size: Int, limit: Int) {
        let shown = kept.prefix(limit)
        let text = Self.escaped(shown)
        if shown.isEmpty {
            line = "(no bytes)"
        } else if text.escapes * 4 > shown.count {
            line = "hex  " + shown.map { String(format: "%02x", $0) }.joined(separator: " ")
        } else {
            line = "text " + text.text
        }
        let rest = max(size, kept.count) - shown.count
        if rest > 0 { line += " … (\(rest) more \(rest == 1 ? "byte" : "bytes"))" }
    }

    /// `bytes` as UTF-8 text on one line: printable characters as they are, `\n` `\r` `\t` `\\` as such, any other
    /// control or invisible character as `\u{…}`, and a byte that is not UTF-8 as `\xNN`; with the count of bytes
    /// that were not text (neither printable nor a line break or tab).
    static func escaped(_ bytes: ArraySlice<UInt8>) -> (text: String, escapes: Int) {
        var text = ""
        var escapes = 0
        var i = bytes.startIndex
        while i < bytes.endIndex {
            let byte = bytes[i]
            let length = byte < 0x80 ? 1 : byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 0
            guard length > 0, i + length <= bytes.endIndex,
                let character = String(validating: bytes[i..<(i + length)], as: UTF8.self),
                let scalar = character.unicodeScalars.first
            else {
                text += String(format: "\\x%02X", byte)
                escapes += 1
                i += 1
                continue
            }
            switch scalar {
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case "\\": text += "\\\\"
            default:
                switch scalar.properties.generalCategory {
                case .control, .format, .lineSeparator, .paragraphSeparator, .privateUse, .surrogate, .unassigned:
                    text += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
                    escapes += length
                default:
                    text += character
                }
            }
            i += length
        }
        return (text, escapes)
    }
}
