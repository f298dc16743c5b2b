import ArgumentParser
import Foundation
import LedgerAPI
import LedgerAppStore
import LedgerCore
import LedgerIngest
import LedgerStore
import LedgerErrors

/// `storeledger demo`: ingests a small, realistic story into a ledger and prints what the ledger made of it.
struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Ingest a sample subscription story (renewals, a restore, a refund, a transfer) and print its timeline.",
        discussion: """
            The directory is created when missing and used when empty; one that an earlier demo made is reset. Any \
            other directory is refused (exit 1) and left as it is.
            """)

    @Option(name: .long, help: "Ledger directory for the demo (default: ./demo-ledger; reset when a demo made it).")
    var data: String = "./demo-ledger"

    func run() async throws {
        do {
            try DemoDirectory.prepare(data)
        } catch {
            throw CommandFailure(error, json: false)
        }
        // The catalog goes in as a configuration file's would: recorded as the new ledger's first event, so every
        // later command on this ledger folds with it, without --config.
        let configuration: LedgerConfiguration
        do {
            configuration = try LedgerConfiguration(json: Array(DemoStory.catalog.utf8), baseDirectory: data)
        } catch {
            throw CommandFailure(code: .invalidConfiguration, message: "the demo's catalog: \(error)", json: false)
        }
        let store = try LedgerOptions.openLedger(
            directory: data, configuration, readOnly: false, json: false, rulesRecordedAt: DemoStory.start)
        defer { store.close() }
        let pipeline = IngestPipeline(ledger: store, configuration: configuration.appStore)
        let story = DemoStory.inputs()
        print("Ingesting \(story.count) inputs into \(data) …\n")
        let rules = try store.rulesInLog.recorded()
        let recorded = rules.map { "recorded seq \($0.seq)" } ?? "-"
        print("  " + pad("the catalog of examples/config.json (the ledger's rules)", 58) + recorded)
        for (label, body) in story {
            let results = try await pipeline.ingest(body: Array(body.utf8), options: .init(), now: DemoStory.now)
            let r = results.first
            print("  " + pad(label, 58) + (r.map { "\($0.status.rawValue)" + ($0.seq.map { " seq \($0)" } ?? "") + ($0.error.map { " \($0.code)" } ?? "") } ?? "-"))
        }
        let at = formatInstant(DemoStory.shownAt)
        let dir = shellWord(data)
        print("\n$ storeledger timeline \(DemoStory.otid) --at \(at) --data \(dir)\n")
        if let view = try store.timeline(OriginalTransactionID(DemoStory.otid), at: DemoStory.shownAt) {
            printTimelineTable(view)
        }
        for user in ["alice", "bob"] {
            print("\n$ storeledger customer \(user) --at \(at) --data \(dir)\n")
            printCustomerTable(try store.customer(AppUserID(user), at: DemoStory.shownAt))
        }
        print("\nTry, on this ledger:")
        for command in DemoStory.suggestions(data: dir) { print("  " + command) }
        print("or serve it to other processes over a Unix socket: storeledger serve --data \(dir)")
    }
}

/// `text` as one word for a POSIX shell: as it is when it holds nothing the shell would read otherwise, else quoted.
func shellWord(_ text: String) -> String {
    let plain = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@%")
    if !text.isEmpty, text.allSatisfy(plain.contains) { return text }
    return "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
}

/// The demo's story, as decoded StoreKit 2 JSON envelopes (what a trusted local service may post).
enum DemoStory {
    static let day: Int64 = 86_400_000
    static let otid = "1000000741475761"
    static let start: Int64 = 1_605_243_570_000  // 2020-11-13T04:59:30Z
    static let renewal1 = start + 30 * day
    static let renewal2 = start + 60 * day
    static let now = start + 90 * day
    /// The instant the demo shows: after bob's restore moved the subscription from alice.
    static let shownAt = renewal2 + 5 * day

    /// The catalog and binding policy of examples/config.json, which every example in the docs uses (`premium`).
    /// Kept here rather than read from the repository, which the binary cannot count on at run time; a test checks
    /// that the two are the same rules.
    static let catalog = #"""
        {
          "bindingPolicy" : "transfer",
          "products" : {
            "com.example.gems60" : {
              "credits" : {
                "gems" : 60
              },
              "type" : "consumable"
            },
            "com.example.lifetime" : {
              "entitlements" : [
                "premium"
              ],
              "type" : "nonConsumable"
            },
            "com.example.premium.monthly" : {
              "entitlements" : [
                "premium"
              ],
              "group" : "g1",
              "type" : "autoRenewable"
            },
            "com.example.premium.yearly" : {
              "entitlements" : [
                "premium"
              ],
              "group" : "g1",
              "type" : "autoRenewable"
            }
          }
        }
        """#

    /// The commands the demo suggests, each to be run as printed on the ledger in `data` (a shell word).
    static func suggestions(data: String) -> [String] {
        let at = formatInstant(shownAt)
        return [
            "storeledger why alice premium --at \(at) --data \(data)",
            "storeledger why bob premium --at \(at) --data \(data)",
            "storeledger customer alice --data \(data)",
            "storeledger timeline \(otid) --at \(at) --data \(data) --html demo-timeline.html",
            "storeledger events --data \(data)",
            "storeledger verify --data \(data)",
        ]
    }

    static func transaction(_ tid: String, purchase: Int64, expires: Int64, signed: Int64, extra: String = "") -> String {
        """
        {"transactionId":"\(tid)","originalTransactionId":"\(otid)","webOrderLineItemId":"wol-\(purchase)",\
        "bundleId":"com.example.app","productId":"com.example.premium.monthly","subscriptionGroupIdentifier":"g1",\
        "purchaseDate":\(purchase),"originalPurchaseDate":\(start),"expiresDate":\(expires),"quantity":1,\
        "type":"Auto-Renewable Subscription","inAppOwnershipType":"PURCHASED","signedDate":\(signed),\
        "environment":"Production","transactionReason":"\(purchase == start ? "PURCHASE" : "RENEWAL")"\(extra)}
        """
    }

    static func inputs() -> [(String, String)] {
        [
            ("purchase, claimed by alice",
             #"{"type":"transaction","appUserId":"alice","receivedAt":\#(start),"payload":\#(transaction(otid, purchase: start, expires: renewal1, signed: start))}"#),
            ("first renewal",
             #"{"type":"transaction","receivedAt":\#(renewal1),"payload":\#(transaction("1000000750000001", purchase: renewal1, expires: renewal2, signed: renewal1))}"#),
            ("first renewal again (a duplicate delivery)",
             #"{"type":"transaction","receivedAt":\#(renewal1),"payload":\#(transaction("1000000750000001", purchase: renewal1, expires: renewal2, signed: renewal1))}"#),
            ("second renewal",
             #"{"type":"transaction","receivedAt":\#(renewal2),"payload":\#(transaction("1000000760000002", purchase: renewal2, expires: renewal2 + 30 * day, signed: renewal2))}"#),
            ("the first renewal refunded (arrives late)",
             #"{"type":"transaction","receivedAt":\#(renewal2 + day),"payload":\#(transaction("1000000750000001", purchase: renewal1, expires: renewal2, signed: renewal2 + day, extra: #","revocationDate":\#(renewal1 + 10 * day),"revocationReason":0,"revocationType":"REFUND_FULL""#))}"#),
            ("bob restores the subscription on his account",
             #"{"type":"binding","receivedAt":\#(renewal2 + 2 * day),"payload":{"appUserId":"bob","originalTransactionId":"\#(otid)","claimedAt":\#(renewal2 + 2 * day)}}"#),
            ("a malformed input (kept in rejected)", #"{"type":"transaction","payload":{"transactionId":42}}"#),
        ]
    }
}
