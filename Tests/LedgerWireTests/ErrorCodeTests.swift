import LedgerWire
import Testing

@Suite struct ErrorCodeTests {
    @Test func aCodeIsItsWireName() {
        #expect(ErrorCode.invalidJSON.rawValue == "invalid_json")
        #expect(ErrorCode.storageFull.description == "storage_full")
        #expect(ErrorCode.receiptStatus(21002).rawValue == "receipt_status_21002")
        #expect(ErrorCode(rawValue: "overloaded") == .overloaded)
        let literal: ErrorCode = "socket_in_use"
        #expect(literal == .socketInUse)
        // A code this build does not know keeps its name.
        #expect(ErrorCode("from_a_newer_server").rawValue == "from_a_newer_server")
    }

    @Test func codedErrorsCompareOnTheirCodeAndPrintCodeThenMessage() {
        #expect(CodedError(.timeout, "a") == CodedError(.timeout, "b"))
        #expect(CodedError(.timeout, "a") != CodedError(.closed, "a"))
        #expect("\(CodedError(.connect, "/tmp/x.sock: No such file or directory"))" == "connect: /tmp/x.sock: No such file or directory")
    }

    @Test func connectingNamesWhatFailed() {
        #expect(throws: CodedError(.connect, "")) { try UnixSocket.connect("/nonexistent-directory/ledger.sock") }
        #expect(!UnixSocket.isLive("/nonexistent-directory/ledger.sock"))
        let long = "/" + String(repeating: "x", count: UnixSocket.maxPathLength)
        #expect(throws: CodedError(.pathTooLong, "")) { try UnixSocket.connect(long) }
        #expect(UnixSocket.maxPathLength == 107)
    }
}
