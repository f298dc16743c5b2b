import FuzzSupport
import LedgerIngest

/// libFuzzer entry: a request body cut into inputs (NDJSON, documents back to back, bare JWS lines), then each
/// input decoded as `POST /v1/events` does.
///
/// Framing's own promises are checked: the pieces are in order, do not overlap, are neither empty nor padded with
/// whitespace, and leave no byte of the body but whitespace outside them (nothing a caller sends is dropped unseen).
/// JSON's whitespace (RFC 8259 §2), what framing trims.
func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let body = Array(UnsafeBufferPointer(start: data, count: size))
    let pieces = InputFraming.split(body)
    var covered = 0
    for piece in pieces {
        precondition(!piece.isEmpty, "an empty piece")
        precondition(piece.startIndex >= covered, "pieces overlap or are out of order")
        precondition(!isSpace(piece.first!) && !isSpace(piece.last!), "a padded piece")
        precondition(body[covered..<piece.startIndex].allSatisfy(isSpace), "bytes left outside every piece")
        covered = piece.endIndex
    }
    precondition(body[covered...].allSatisfy(isSpace), "bytes left after the last piece")
    for piece in pieces.prefix(64) { Fuzz.decode(Array(piece), as: nil) }
    return 0
}

/// The entry point SwiftPM links `main` to.
@_cdecl("FuzzFraming_main")
public func fuzzFramingMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runFuzzer(argc, argv, fuzzOne)
}
