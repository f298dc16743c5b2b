import LedgerAPI
import Testing

/// `limits.groupCommitWaitMicroseconds`: absent means the writer never waits; a whole number up to 100 ms is taken;
/// anything else is refused with the key's name.
@Suite struct GroupCommitConfigurationTests {
    static func parse(_ json: String) throws -> LedgerConfiguration {
        try LedgerConfiguration(json: Array(json.utf8), baseDirectory: "/")
    }

    @Test func absentMeansNoWait() throws {
        #expect(try Self.parse("{}").limits.groupCommitWaitMicroseconds == 0)
        #expect(try Self.parse(#"{"limits":{"maxQueuedInputs":5}}"#).limits.groupCommitWaitMicroseconds == 0)
    }

    @Test(arguments: [0, 1, 500, 100_000])
    func aWholeNumberUpTo100msIsTaken(_ micros: Int) throws {
        let configuration = try Self.parse(#"{"limits":{"groupCommitWaitMicroseconds":\#(micros)}}"#)
        #expect(configuration.limits.groupCommitWaitMicroseconds == micros)
    }

    @Test(arguments: ["-1", "100001", "1.5", "\"500\"", "null"])
    func anythingElseIsRefused(_ value: String) throws {
        #expect {
            try Self.parse(#"{"limits":{"groupCommitWaitMicroseconds":\#(value)}}"#)
        } throws: { error in
            "\(error)".contains("limits.groupCommitWaitMicroseconds")
        }
    }
}
