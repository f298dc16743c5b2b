import Foundation
import LMDB
import LedgerCore
import LedgerStore
import LedgerTestSupport
import Logging
import Testing

/// A ledger written by schema 1 (timelines without their period bounds) is upgraded when opened for writing, and
/// refused, with the way to upgrade it, when opened read-only.
@Suite struct SchemaUpgradeTests {
    @Test func aSchemaOneLedgerIsUpgradedByRebuildingItsProjections() throws {
        let t = try TemporaryLedger()
        let inputs = (0..<30).map { i in
            input([.transaction(transaction("\(7000 + i)", otid: "\(900 + i % 3)", purchase: 1_605_243_570_000 + Int64(i) * 86_400_000))])
        }
        _ = try t.ledger.appendAndWait(inputs)
        let copy = NSTemporaryDirectory() + "ledger-schema1-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: copy) }
        try t.ledger.copy(to: copy)

        // Make the copy what schema 1 wrote: schema 1 in `meta`, every timeline without field 10.
        var rewritten = 0
        do {
            let env = try Environment(path: copy)
            let meta = try env.openDatabase("meta")
            let timelines = try env.openDatabase("timelines")
            try env.write { txn in
                try txn.put(meta, key: Array("schema".utf8), value: bigEndian(1))
                for (key, value) in try entries(of: timelines, txn) {
                    let legacy = Array(value[..<8]) + (try removingField(10, from: Array(value[8...])))
                    #expect(legacy.count < value.count)
                    try txn.put(timelines, key: key, value: legacy)
                    rewritten += 1
                }
            }
        }
        #expect(rewritten == 3)

        // Read-only: refused, with the way to upgrade.
        var readOnly = Ledger.Options()
        readOnly.readOnly = true
        #expect {
            _ = try Ledger(directory: copy, options: readOnly, logger: Logger(label: "t"))
        } throws: { error in
            "\(error)".contains("schema_mismatch") && "\(error)".contains("upgrade")
        }

        // For writing: upgraded, the projections rebuilt, and a later renewal takes the usual path.
        let upgraded = try Ledger(directory: copy, logger: Logger(label: "t"))
        let report = try upgraded.audit.verify()
        #expect(report.ok, "\(report.fault ?? "")")
        #expect(try upgraded.audit.replay(check: true).differences.isEmpty)
        _ = try upgraded.appendAndWait([
            input([.transaction(transaction("7030", otid: "900", purchase: 1_605_243_570_000 + 30 * 86_400_000))])
        ])
        #expect(try upgraded.audit.verify().ok)
        upgraded.close()
        // And it stays upgraded: a read-only open now works.
        #expect(try Ledger(directory: copy, options: readOnly, logger: Logger(label: "t")).audit.verify().ok)
    }
}

/// Every entry of `db`, copied out of the map (to be written back in the same write transaction).
func entries(of db: Database, _ txn: Transaction) throws -> [(key: [UInt8], value: [UInt8])] {
    let c = try txn.cursor(db)
    var stored: [(key: [UInt8], value: [UInt8])] = []
    var entry = try c.first()
    while let e = entry {
        stored.append((Array(e.key), Array(e.value)))
        entry = try c.next()
    }
    return stored
}
