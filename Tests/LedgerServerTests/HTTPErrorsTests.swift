import Hummingbird
import LedgerErrors
import NIOCore
import Testing

@testable import LedgerServer

/// The one table from error code to HTTP answer (docs/socket-api.md, "Errors").
@Suite struct HTTPErrorsTests {
    struct Row: Sendable, CustomStringConvertible {
        var code: ErrorCode
        var status: Int
        var retryAfter: Int?
        var closes: Bool
        init(_ code: ErrorCode, _ status: Int, _ retryAfter: Int?, _ closes: Bool) {
            (self.code, self.status, self.retryAfter, self.closes) = (code, status, retryAfter, closes)
        }
        var description: String { code.rawValue }
    }

    /// Every code the server answers with its own status, and what it answers.
    static let expected: [Row] = [
        Row(.invalidJSON, 400, nil, false),
        Row(.invalidQuery, 400, nil, false),
        Row(.invalidBody, 400, nil, true),
        Row(.badRequest, 400, nil, false),
        Row(.forbidden, 403, nil, false),
        Row(.notFound, 404, nil, false),
        Row(.methodNotAllowed, 405, nil, false),
        Row(.requestTimeout, 408, nil, true),
        Row(.tooLarge, 413, nil, true),
        Row(.batchTooLarge, 413, nil, false),
        Row(.unsupportedMediaType, 415, nil, false),
        Row(.cannotForget, 409, nil, false),
        Row(.wrongPartition, 421, nil, false),
        Row(.unsupportedTransferEncoding, 501, nil, true),
        Row(.overloaded, 503, 1, false),
        Row(.shuttingDown, 503, 5, false),
        Row(.intakeUnavailable, 503, 1, false),
        Row(.storageError, 503, 30, false),
        Row(.storageFull, 503, 30, false),
        Row(.internal, 500, nil, false),
    ]

    @Test(arguments: expected)
    func everyCodeAnswersItsStatus(_ row: Row) {
        let (code, status, retryAfter, closes) = (row.code, row.status, row.retryAfter, row.closes)
        let answer = HTTPErrors.answer(for: code)
        #expect(answer.status.code == status, "\(code)")
        #expect(answer.retryAfter == retryAfter, "\(code)")
        #expect(answer.closesConnection == closes, "\(code)")
        let response = HTTPErrors.response(CodedError(code, "why"))
        #expect(response.status.code == status)
        #expect(response.headers[.retryAfter] == retryAfter.map(String.init))
        #expect(response.headers[.connection] == (closes ? "close" : nil))
        #expect(response.headers[.contentType] == "application/json")
    }

    @Test func theTableHoldsExactlyTheseCodes() {
        #expect(Set(HTTPErrors.table.keys) == Set(Self.expected.map(\.code)))
    }

    @Test func storeFailuresWithoutAStatusOfTheirOwnAre500() {
        for code: ErrorCode in [.corrupted, .failed, .readOnly, .permissionDenied, .invalidPath, .schemaMismatch] {
            #expect(HTTPErrors.answer(for: code).status == .internalServerError, "\(code)")
        }
    }

    @Test func refusedInputsAre422UnlessNotJSON() {
        #expect(HTTPErrors.status(ofRefusedInput: .invalidJSON) == .badRequest)
        for code: ErrorCode in [
            .missingField, .wrongType, .outOfRange, .tooDeep, .signatureInvalid, .untrustedChain, .wrongBundle,
            .environmentNotAccepted, .receiptStatus(21002), .wrongEnvironment21007, .noFacts, .invalidID,
        ] {
            #expect(HTTPErrors.status(ofRefusedInput: code) == .unprocessableContent, "\(code)")
        }
    }

    @Test func oneRefusalMayOverrideItsCodesAnswer() {
        let followers = HTTPErrors.response(CodedError(.overloaded, "too many followers"), retryAfter: 5)
        #expect(followers.status == .serviceUnavailable)
        #expect(followers.headers[.retryAfter] == "5")
        let hummingbird = HTTPErrors.response(CodedError(.tooLarge, "big"), status: .contentTooLarge, closesConnection: false)
        #expect(hummingbird.headers[.connection] == nil)
    }

    @Test func answersWrittenBeforeTheHTTPPipelineAreTheSameBytesAsEver() {
        let overloaded = HTTPErrors.closingAnswer(
            CodedError(.overloaded, "the server has too many open connections; retry shortly"))
        let body = #"{"error":{"code":"overloaded","message":"the server has too many open connections; retry shortly"}}"# + "\n"
        #expect(
            String(buffer: overloaded)
                == "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: \(body.utf8.count)\r\n\r\n"
                + body)
        let timeout = HTTPErrors.closingAnswer(CodedError(.requestTimeout, "the request's header section did not arrive within 10000 ms"))
        let timeoutBody =
            #"{"error":{"code":"request_timeout","message":"the request's header section did not arrive within 10000 ms"}}"# + "\n"
        #expect(
            String(buffer: timeout)
                == "HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: \(timeoutBody.utf8.count)\r\n\r\n"
                + timeoutBody)
    }
}
