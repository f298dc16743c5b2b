import LedgerIngest
import LedgerErrors
import Testing

/// How a body is cut into inputs: NDJSON lines, pretty-printed documents, documents back to back, JWS text lines.
@Suite struct InputFramingTests {
    static func pieces(_ body: String) -> [String] {
        InputFraming.split(Array(body.utf8)).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func ndjsonIsSplitIntoItsNonBlankLines() {
        #expect(Self.pieces("{\"a\":1}\n\n  \r\n{\"b\":2}\r\n{\"c\":3}") == [#"{"a":1}"#, #"{"b":2}"#, #"{"c":3}"#])
        #expect(InputFraming.split([]).isEmpty)
        #expect(Self.pieces(" \n\t\r\n").isEmpty)
    }

    @Test func aPrettyPrintedDocumentIsOneInput() {
        let pretty = "{\n  \"status\": 0,\n  \"latest_receipt_info\": [\n    {\"a\": \"}\\\"{\"}\n  ]\n}\n"
        #expect(Self.pieces(pretty) == [String(pretty.dropLast())])
    }

    @Test func documentsBackToBackAndJWSLines() {
        #expect(Self.pieces(#"{"a":1}{"b":[2]} [3]"#) == [#"{"a":1}"#, #"{"b":[2]}"#, "[3]"])
        #expect(Self.pieces("eyJh.eyJi.c2ln\neyJj.eyJk.c2ln\n") == ["eyJh.eyJi.c2ln", "eyJj.eyJk.c2ln"])
    }

    @Test func anUnbalancedDocumentStaysOnePieceAndTheNextLineResyncs() {
        #expect(Self.pieces("{\"a\":[1,2\n{\"b\":2}") == [#"{"a":[1,2"#, #"{"b":2}"#])
        let deep = String(repeating: "[", count: 100_000)
        #expect(Self.pieces(deep) == [deep])
    }
}

/// What the write routes refuse as a whole before decoding anything.
@Suite struct BodyRefusalTests {
    @Test func aBatchHoldsOneInputAtLeastAndAtMostTheLimit() throws {
        #expect(throws: CodedError(.invalidJSON, "")) { try IngestPipeline.batch(Array(" \n".utf8), limit: 10) }
        let three = Array("{}\n{}\n{}".utf8)
        #expect(try IngestPipeline.batch(three, limit: 3).count == 3)
        do {
            _ = try IngestPipeline.batch(three, limit: 2)
            Issue.record("a batch over the limit must be refused")
        } catch {
            #expect(error.code == .batchTooLarge)
            #expect(error.message == "the batch holds 3 inputs; at most 2 are accepted")
        }
    }

    @Test func aSingleInputMustNotBeBlank() throws {
        #expect(throws: CodedError(.invalidJSON, "the body is empty")) { try IngestPipeline.checkNotBlank(Array("\r\n\t ".utf8)) }
        try IngestPipeline.checkNotBlank(Array(" x".utf8))
    }
}
