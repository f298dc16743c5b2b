import ArgumentParser
import Foundation
import LedgerAPI
import LedgerStore

/// `storeledger rejected`: the inputs the ledger refused, with their codes and bytes, for the auditor.
struct Rejected: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show refused inputs: when, why (code and message), and the bytes received (first MiB).")

    @OptionGroup var ledger: LedgerOptions
    @Option(name: .long, help: "Only refusals after this number.") var after: UInt64 = 0
    @Option(name: .long, help: "At most this many.") var limit: Int = 100
    @Flag(name: .long, help: "One JSON document on stdout (bytes base64).") var json = false

    func validate() throws {
        if limit <= 0 { throw ValidationError("--limit must be positive") }
    }

    func run() throws {
        let store = try ledger.openLedger(try ledger.loadConfiguration(json: json), readOnly: true, json: json)
        let refused = try store.rejectedInputs(after: after, limit: limit)
        if json {
            struct Doc: Encodable { var rejected: [RejectedDocument] }
            try printJSON(encoding: Doc(rejected: refused.map(RejectedDocument.init)))
            return
        }
        print(pad("#", 8) + pad("RECEIVED", 22) + pad("CODE", 26) + pad("SIZE", 10) + "MESSAGE")
        for r in refused {
            let request = r.request.map { "[\($0.prefix(60))] " } ?? ""
            print(
                pad("\(r.number)", 8) + pad(formatInstant(r.receivedAt), 22) + pad(r.code, 26) + pad("\(r.size)", 10)
                    + request + r.message)
        }
        if refused.isEmpty { print("(no refused inputs)") }
    }
}
