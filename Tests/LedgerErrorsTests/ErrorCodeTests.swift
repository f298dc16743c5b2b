import LedgerErrors
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
}
